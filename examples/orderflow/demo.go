package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/latch-run/latch"
)

// demo runs the whole story in one process: the shop's services, a worker,
// an order, its approval, its delivery.
func demo(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ExitOnError)
	url := fs.String("store", "", "store URL (default: a SQLite file in a temporary directory)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *url == "" {
		dir, err := os.MkdirTemp("", "orderflow-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		*url = "sqlite:" + filepath.Join(dir, "latch.db")
	}
	services := newFakeShop()
	srv := httptest.NewServer(services)
	defer srv.Close()

	c, err := open(ctx, *url)
	if err != nil {
		return err
	}
	defer c.Close()
	w := newWorker(c, 30*time.Second, slog.New(slog.DiscardHandler))
	if err := w.Start(ctx); err != nil {
		return err
	}
	defer func() {
		if err := w.Stop(context.WithoutCancel(ctx)); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the worker:", err)
		}
	}()

	o := Order{ID: "o-1", Amount: 4200, Shop: srv.URL, DeliveryAt: time.Now().Add(2 * time.Second).UTC(),
		Parcels: parcelIDs("o-1", 3)}
	x, _, err := c.Submit(ctx, tenant, latch.SubmitRequest{Kind: "order", Payload: o, DedupKey: "order:" + o.ID})
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "submitted order o-1 as", x.ID)

	x, err = waitUntil(ctx, c, x.ID, func(x *latch.Execution) bool { return x.WaitingFor == "approve" })
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s, waiting for %q; no worker slot is held\n", x.Status, x.WaitingFor)
	for range 2 { // a double click: the idempotency key makes it one approval
		if _, err := c.Signal(ctx, tenant, x.ID, "approve", Approval{By: "ann"}, latch.SignalOptions{IdempotencyKey: "approve:" + x.ID}); err != nil {
			return err
		}
	}
	fmt.Fprintln(out, "approved by ann; shipping", len(o.Parcels), "parcels in parallel")

	x, err = waitUntil(ctx, c, x.ID, func(x *latch.Execution) bool { return x.WaitingFor == "" && x.WakeAt != nil })
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "sleeping until the delivery window")
	if _, err := c.Wait(ctx, tenant, x.ID); err != nil {
		return err
	}
	if err := printExecution(ctx, c, x.ID, out); err != nil {
		return err
	}
	fmt.Fprintln(out, "services called:", services.summary())
	return nil
}

// waitUntil polls the execution until ok or it is terminal.
func waitUntil(ctx context.Context, c *latch.Client, id string, ok func(*latch.Execution) bool) (*latch.Execution, error) {
	for {
		x, err := c.Get(ctx, tenant, id)
		if err != nil {
			return nil, err
		}
		if ok(x) || x.Status.Terminal() {
			return x, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// fakeShop stands in for the payment service, the stock service and the
// customer's webhook: like a real payment service it acts once per
// idempotency key and answers a repeat with the first answer.
type fakeShop struct {
	mu      sync.Mutex
	answers map[string]json.RawMessage // idempotency key -> first answer
	calls   map[string]int             // path -> requests
}

func newFakeShop() *fakeShop {
	return &fakeShop{answers: map[string]json.RawMessage{}, calls: map[string]int{}}
}

func (f *fakeShop) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[r.URL.Path]++
	key := r.Header.Get("Idempotency-Key")
	answer, ok := f.answers[key]
	if !ok {
		answer = json.RawMessage(fmt.Sprintf(`{"id":"%s-%d","path":%q}`, r.URL.Path[1:], len(f.answers)+1, r.URL.Path))
		f.answers[key] = answer
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(answer) // a caller that went away retries the step
}

func (f *fakeShop) summary() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return fmt.Sprintf("reserve %d, charge %d, ship %d, webhook %d",
		f.calls["/reserve"], f.calls["/charge"], f.calls["/ship"], f.calls["/webhook"])
}
