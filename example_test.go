package latch_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/latch-run/latch"
)

func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "latch-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	client, err := latch.Open(ctx, "sqlite:"+filepath.Join(dir, "latch.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	if _, err := client.CreateTenant(ctx, "acme", latch.TenantOptions{}); err != nil {
		log.Fatal(err)
	}

	w := client.NewWorker(latch.WorkerOptions{Logger: slog.New(slog.DiscardHandler)})
	w.Handle("greet", func(ctx context.Context, job *latch.Job) (any, error) {
		var p struct {
			Name string `json:"name"`
		}
		if err := job.Decode(&p); err != nil {
			return nil, latch.Permanent(err)
		}
		return map[string]string{"greeting": "hello, " + p.Name}, nil
	})
	if err := w.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer w.Stop(ctx)

	req := latch.SubmitRequest{
		Kind:     "greet",
		Payload:  map[string]string{"name": "world"},
		DedupKey: "greet-world",
	}
	exec, dedup, err := client.Submit(ctx, "acme", req)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("submitted:", exec.Status, "deduplicated:", dedup)

	// The same key again: the same execution, nothing new admitted.
	again, dedup, err := client.Submit(ctx, "acme", req)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("same execution:", again.ID == exec.ID, "deduplicated:", dedup)

	done, err := client.Wait(ctx, "acme", exec.ID)
	if err != nil {
		log.Fatal(err)
	}
	got, err := client.Get(ctx, "acme", done.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(got.Status, string(got.Result), "attempt", got.Attempt)
	// Output:
	// submitted: queued deduplicated: false
	// same execution: true deduplicated: true
	// succeeded {"greeting":"hello, world"} attempt 1
}
