package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/latch-run/latch"
)

// demo runs the whole story in one process: two customers' tickets wait
// for their orders' shipments; order o-1 is placed (its publish retried,
// as after a lost answer); its fulfilment, started by the subscription,
// ships it and announces it; o-1's ticket answers, o-2's still waits.
func demo(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ExitOnError)
	url := fs.String("store", "", "store URL (default: a SQLite file in a temporary directory)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *url == "" {
		dir, err := os.MkdirTemp("", "eventflow-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		*url = "sqlite:" + filepath.Join(dir, "latch.db")
	}
	c, err := latch.Open(ctx, *url)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := setup(ctx, c); err != nil {
		return err
	}
	w := newWorker(c, latch.WorkerOptions{Logger: slog.New(slog.DiscardHandler), PollInterval: 50 * time.Millisecond})
	if err := w.Start(ctx); err != nil {
		return err
	}
	defer func() {
		if err := w.Stop(context.WithoutCancel(ctx)); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the worker:", err)
		}
	}()

	tickets := map[string]string{}
	for _, t := range []Ticket{{Order: "o-1", Customer: "ann"}, {Order: "o-2", Customer: "bob"}} {
		x, _, err := c.Submit(ctx, tenant, latch.SubmitRequest{Kind: "ticket", Payload: t, DedupKey: "ticket:" + t.Order})
		if err != nil {
			return err
		}
		if x, err = waitUntil(ctx, c, x.ID, func(x *latch.Execution) bool { return x.Status == latch.StatusSuspended }); err != nil {
			return err
		}
		fmt.Fprintf(out, "ticket of %s about %s: %s, waiting for %q\n", t.Customer, t.Order, x.Status, x.WaitingFor)
		tickets[t.Order] = x.ID
	}

	var fulfilment string
	for i := range 2 { // a retried publish: the idempotency key makes it one event
		pub, err := c.Publish(ctx, tenant, "order.placed", Order{ID: "o-1", Items: 3},
			latch.PublishOptions{Key: "o-1", IdempotencyKey: "placed:o-1"})
		if err != nil {
			return err
		}
		if len(pub.Started) != 1 || pub.Started[0].Err != nil {
			return fmt.Errorf("publish started %+v, want the fulfilment", pub.Started)
		}
		fulfilment = pub.Started[0].ExecutionID
		fmt.Fprintf(out, "published order.placed o-1 (try %d): event %s, replayed %v, fulfilment %s\n",
			i+1, pub.EventID, pub.Replayed, fulfilment)
	}
	if _, err := c.Wait(ctx, tenant, fulfilment); err != nil {
		return err
	}
	done, err := c.Wait(ctx, tenant, tickets["o-1"])
	if err != nil {
		return err
	}
	var answer string
	if err := done.DecodeResult(&answer); err != nil {
		return fmt.Errorf("ticket o-1 %s %s: %w", done.Status, done.Error, err)
	}
	fmt.Fprintln(out, "ticket o-1:", done.Status, "-", answer)
	other, err := c.Get(ctx, tenant, tickets["o-2"])
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "ticket o-2: still %s, waiting for %q\n", other.Status, other.WaitingFor)
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
		case <-time.After(20 * time.Millisecond):
		}
	}
}
