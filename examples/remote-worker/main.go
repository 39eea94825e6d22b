// Command remote-worker is a latch service that holds an API key, not the
// store: it submits an order, waits for it, and runs the order's flow in a
// remote worker (latch.NewRemoteWorker), all over the HTTP API of a
// `latch serve`. It is a module of its own, built from its go.mod and
// go.sum alone (docs/sdk-go.md, "A remote worker").
//
//	LATCH_URL=http://127.0.0.1:8080 LATCH_KEY=lk_... remote-worker work
//	LATCH_URL=http://127.0.0.1:8080 LATCH_KEY=lk_... remote-worker order 42
//
// work runs the worker until SIGINT or SIGTERM, then stops: a handler
// still running after 10 s is cancelled and its execution handed back to
// the server, which runs it again elsewhere. order submits order N once
// (its dedup key is order-N), approves it when its flow waits for the
// approval, and prints its result once it has ended. demo does both in one
// process.
//
// The flow of kind "order": a step "charge" appends "charged <order>" to
// $EFFECT_FILE (when set) and records the charge; it then waits for the
// signal "approve", ships every parcel as a child execution (latch.Map),
// and records a step "notify". A worker that dies after the charge was
// recorded never charges again: the next run takes the charge from the
// journal. With HANG=notify the step "notify" hangs (to kill the worker
// there).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/latch-run/latch"
	"github.com/latch-run/latch/remote"
)

// Order is the payload of kind "order".
type Order struct {
	Order   int   `json:"order"`
	Parcels []int `json:"parcels"`
}

// Charge is the result of the step "charge".
type Charge struct {
	ChargeID string `json:"charge_id"`
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: remote-worker work | order N | demo")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c := remote.New(os.Getenv("LATCH_URL"), os.Getenv("LATCH_KEY"))
	var err error
	switch os.Args[1] {
	case "work":
		err = work(ctx, c, nil)
	case "order":
		if len(os.Args) != 3 {
			err = errors.New("usage: remote-worker order N")
			break
		}
		n, perr := strconv.Atoi(os.Args[2])
		if perr != nil {
			err = fmt.Errorf("order %q: %w", os.Args[2], perr)
			break
		}
		err = order(ctx, c, n)
	case "demo":
		ready := make(chan struct{})
		werr := make(chan error, 1)
		wctx, cancel := context.WithCancel(ctx)
		go func() { werr <- work(wctx, c, ready) }()
		<-ready
		err = order(ctx, c, 1)
		cancel()
		err = errors.Join(err, <-werr)
	default:
		err = fmt.Errorf("unknown command %q: want work, order or demo", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "remote-worker:", err)
		os.Exit(1)
	}
}

// work runs the remote worker until ctx ends; ready, if set, is closed
// once it has started.
func work(ctx context.Context, c *remote.Client, ready chan<- struct{}) error {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	w := latch.NewRemoteWorker(c, latch.WorkerOptions{Slots: 4, LeaseDuration: 3 * time.Second, Logger: log})
	w.Handle("order", orderFlow)
	w.Handle("parcel", func(ctx context.Context, job *latch.Job) (any, error) {
		var parcel int
		if err := job.Decode(&parcel); err != nil {
			return nil, latch.Permanent(err)
		}
		return fmt.Sprintf("shipped parcel %d", parcel), nil
	})
	if err := w.Start(ctx); err != nil {
		return err
	}
	fmt.Println("worker started", w.ID())
	if ready != nil {
		close(ready)
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.Stop(sctx); err != nil {
		return err
	}
	fmt.Println("worker stopped")
	return nil
}

// orderFlow is the handler of kind "order": the same code would run in an
// embedded worker (Client.NewWorker).
func orderFlow(ctx context.Context, job *latch.Job) (any, error) {
	var o Order
	if err := job.Decode(&o); err != nil {
		return nil, latch.Permanent(err)
	}
	charge, err := latch.StepValue(ctx, job, "charge", func(ctx context.Context) (Charge, error) {
		// The effect, once per execution: recorded, it is never run again.
		if err := appendEffect(fmt.Sprintf("charged %d", o.Order)); err != nil {
			return Charge{}, err
		}
		return Charge{ChargeID: "ch_" + job.ID}, nil
	})
	if err != nil {
		return nil, err
	}
	approval, err := job.WaitSignal(ctx, "approval", "approve", time.Hour)
	if err != nil {
		return nil, err // ErrSuspended: return it, the flow waits without a worker
	}
	shipped, err := latch.Results[string](latch.Map(ctx, job, "ship", "parcel", o.Parcels))
	if err != nil {
		return nil, err
	}
	if _, err := job.Step(ctx, "notify", func(ctx context.Context) (any, error) {
		if os.Getenv("HANG") == "notify" {
			fmt.Printf("hanging in notify of order %d attempt %d\n", o.Order, job.Attempt)
			<-ctx.Done() // until the process is killed, or stops
			return nil, context.Cause(ctx)
		}
		return "notified", nil
	}); err != nil {
		return nil, err
	}
	return map[string]any{"order": o.Order, "charge": charge.ChargeID, "approval": approval, "shipped": shipped}, nil
}

// appendEffect appends line to $EFFECT_FILE, if set.
func appendEffect(line string) error {
	path := os.Getenv("EFFECT_FILE")
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(f, line); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// order submits order n once, approves it when its flow waits for the
// approval, and prints the execution's id and then its result.
func order(ctx context.Context, c *remote.Client, n int) error {
	e, err := c.Submit(ctx, remote.SubmitRequest{Kind: "order", Payload: Order{Order: n, Parcels: []int{1, 2}},
		DedupKey: fmt.Sprintf("order-%d", n), MaxAttempts: 5})
	if err != nil {
		return err
	}
	fmt.Println("submitted", e.ExecutionID)
	// Its flow waits for the approval once it has charged: poll until then.
	for ; ; time.Sleep(200 * time.Millisecond) {
		x, err := c.Get(ctx, e.ExecutionID)
		if err != nil {
			return err
		}
		if x.Status.Terminal() {
			return finished(x)
		}
		if x.Status == remote.StatusSuspended && x.WaitingFor != nil && *x.WaitingFor == "approve" {
			if _, err := c.Signal(ctx, e.ExecutionID, "approve", map[string]string{"by": "ann"},
				remote.SignalOptions{IdempotencyKey: "approve-" + e.ExecutionID}); err != nil {
				return err
			}
			break
		}
	}
	x, err := c.Wait(ctx, e.ExecutionID)
	if err != nil {
		return err
	}
	return finished(x)
}

func finished(x *remote.Execution) error {
	if x.Status != remote.StatusSucceeded {
		return fmt.Errorf("execution %s ended %s", x.ExecutionID, x.Status)
	}
	var out any
	if err := json.Unmarshal(x.Result, &out); err != nil {
		return err
	}
	pretty, _ := json.Marshal(out)
	fmt.Println("succeeded", string(pretty))
	return nil
}
