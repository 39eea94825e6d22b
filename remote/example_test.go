package remote_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/latch-run/latch/remote"
)

// A tenant's service submits work with its key, a worker of its own claims
// and completes it over the same API, and the service waits for the result.
func Example() {
	url, adminKey := exampleServer() // the address of a latch server, and its admin key
	ctx := context.Background()

	// The operator makes a tenant; its key is all the tenant holds.
	admin := remote.New(url, adminKey)
	acme, err := admin.CreateTenant(ctx, remote.TenantSpec{Name: "acme"})
	if err != nil {
		log.Fatal(err)
	}
	c := remote.New(url, acme.APIKey)

	// Submit twice with one dedup key: one execution.
	req := remote.SubmitRequest{Kind: "resize", Payload: map[string]int{"width": 640}, DedupKey: "img-42"}
	e, err := c.Submit(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	again, err := c.Submit(ctx, req)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(e.Status, again.ExecutionID == e.ExecutionID, *again.Deduplicated)

	// A worker's raw calls: claim, then complete under the lease.
	leases, err := c.Claim(ctx, remote.ClaimRequest{WorkerID: "resizer-1", Kinds: []string{"resize"}, WaitSeconds: 5})
	if err != nil {
		log.Fatal(err)
	}
	l := leases[0]
	fmt.Println(l.Kind, string(l.Payload))
	if _, err := c.Complete(ctx, l.ExecutionID, remote.CompleteRequest{LeaseToken: l.LeaseToken, Result: map[string]string{"url": "/img/42-640.png"}}); err != nil {
		log.Fatal(err)
	}

	// Wait long-polls until the execution ends (or ctx does).
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	done, err := c.Wait(wctx, e.ExecutionID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(done.Status, string(done.Result))

	// Problem answers are *remote.Error, matched by their code.
	_, err = c.Complete(ctx, l.ExecutionID, remote.CompleteRequest{LeaseToken: l.LeaseToken})
	fmt.Println(errors.Is(err, remote.ErrLeaseLost), err)
	// Output:
	// queued true true
	// resize {"width":640}
	// succeeded {"url":"/img/42-640.png"}
	// true 409 lease_lost: the lease token is not the execution's current lease; abandon this attempt
}

// List yields every execution that matches, reading page after page.
func ExampleClient_List() {
	url, adminKey := exampleServer()
	ctx := context.Background()
	c := remote.New(url, adminKey).ForTenant("shop")
	if _, err := c.CreateTenant(ctx, remote.TenantSpec{Name: "shop"}); err != nil {
		log.Fatal(err)
	}
	for i := range 3 {
		if _, err := c.Submit(ctx, remote.SubmitRequest{Kind: "email", Payload: map[string]int{"n": i}}); err != nil {
			log.Fatal(err)
		}
	}
	for e, err := range c.List(ctx, remote.ListOptions{Kind: "email", Limit: 2}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(e.Kind, string(e.Payload), e.Status)
	}
	// Output:
	// email {"n":2} queued
	// email {"n":1} queued
	// email {"n":0} queued
}
