package latch_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/latch-run/latch"
	"github.com/latch-run/latch/store"
)

// A process running latch.Worker reports itself as a server, with its
// worker and the runs it started and failed: what the console's overview
// shows. Stop writes the last report.
func TestWorkerReportsItself(t *testing.T) {
	t.Parallel()
	c := open(t)
	ctx := t.Context()
	w := c.NewWorker(latch.WorkerOptions{ID: "reporting-worker", Logger: slog.New(slog.DiscardHandler),
		PollInterval: 10 * time.Millisecond})
	w.Handle("ok", func(context.Context, *latch.Job) (any, error) { return nil, nil })
	w.Handle("bad", func(context.Context, *latch.Job) (any, error) { return nil, latch.Permanent(errors.New("no")) })
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"ok", "ok", "bad"} {
		e, _, err := c.Submit(ctx, "acme", latch.SubmitRequest{Kind: kind})
		if err != nil {
			t.Fatal(err)
		}
		wait(t, c, e.ID)
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.Stop(stopCtx); err != nil {
		t.Fatal(err)
	}

	since := time.Now().Add(-time.Hour)
	pres, err := c.Store().Presence(ctx, &store.PresenceParams{Since: since})
	if err != nil {
		t.Fatal(err)
	}
	if len(pres.Servers) != 1 {
		t.Fatalf("servers reported: %+v, want this process", pres.Servers)
	}
	if len(pres.Workers) != 1 || pres.Workers[0].ID != "reporting-worker" || pres.Workers[0].Tenant != "" ||
		pres.Workers[0].ServerID != pres.Servers[0].ID {
		t.Errorf("workers reported: %+v, want reporting-worker (tenant \"\") of server %s", pres.Workers, pres.Servers[0].ID)
	}
	minutes, err := c.Store().Activity(ctx, &store.ActivityParams{Tenant: "acme", Since: since})
	if err != nil {
		t.Fatal(err)
	}
	starts, failures := 0, 0
	for _, m := range minutes {
		starts += m.Starts
		failures += m.Failures
	}
	if starts != 3 || failures != 1 {
		t.Errorf("activity reported: %d starts, %d failures; want 3, 1", starts, failures)
	}
}
