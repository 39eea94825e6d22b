// Package latch is the Go API of latch, a job-execution service: submit
// executions of job kinds with JSON payloads, exactly once per idempotency
// (dedup) key and within each tenant's quota, and run them on workers under
// fenced leases that survive crashes.
//
// Open a store by URL, create a tenant, register handlers on a worker and
// submit:
//
//	client, err := latch.Open(ctx, "sqlite:latch.db")
//	...
//	client.CreateTenant(ctx, "acme", latch.TenantOptions{})
//	w := client.NewWorker(latch.WorkerOptions{})
//	w.Handle("resize", func(ctx context.Context, job *latch.Job) (any, error) { ... })
//	w.Start(ctx)
//	defer w.Stop(ctx)
//	exec, deduplicated, err := client.Submit(ctx, "acme", latch.SubmitRequest{
//		Kind: "resize", Payload: img, DedupKey: "img-42",
//	})
//
// Store URLs: "sqlite:path", "sqlite://path" or a bare path ending in .db
// select the embedded SQLite backend; "postgres://..." a PostgreSQL database
// (migrated first with `latch migrate up`), "redis://..." a Redis server.
//
// Handlers get a context that carries the execution's timeout and is
// cancelled, with a cause, when the execution is cancelled (ErrCancelled),
// the worker loses its lease (ErrLeaseLost) or shuts down hard (ErrShutdown).
// A handler's error is retried with exponential backoff while attempts remain,
// unless wrapped with Permanent. See package engine for the lease and
// fencing rules.
package latch
