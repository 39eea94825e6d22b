package latch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/latch-run/latch/engine"
	"github.com/latch-run/latch/internal/storewrap"
	"github.com/latch-run/latch/kinds"
)

// Job is the attempt a handler runs.
type Job struct {
	ID          string
	Tenant      string
	Kind        string
	Queue       string
	Payload     json.RawMessage
	Attempt     int // 1 for the first attempt
	MaxAttempts int

	engine flowEngine // its flow: Step, Sleep, WaitSignal, Spawn, WaitChildren
}

// Decode unmarshals the job's payload into v.
func (j *Job) Decode(v any) error {
	return json.Unmarshal(j.Payload, v)
}

// HandlerFunc runs one attempt of a job. Its result is marshalled to JSON
// (a json.RawMessage is used as written; nil is null). A returned error is
// retried with backoff while attempts remain, unless wrapped with Permanent.
// ctx carries the execution's timeout and is cancelled, with a cause, on
// cancel (ErrCancelled), lost lease (ErrLeaseLost) or hard shutdown
// (ErrShutdown); return promptly when it is.
type HandlerFunc func(ctx context.Context, job *Job) (any, error)

// WorkerOptions configure a Worker. Zero fields take the stated defaults.
type WorkerOptions struct {
	// ID names the worker in leases. Default: hostname-pid-random.
	ID string
	// Slots is how many handlers run at once. Default 10.
	Slots int
	// TenantSlots is each tenant's share of the slots: past it a tenant
	// may borrow free slots but never the last, so that one tenant's long
	// work leaves a slot for the others. Default half of Slots, at least
	// 1; Slots lets one tenant use every slot.
	TenantSlots int
	// Queues to take executions from. Empty: every queue.
	Queues []string
	// LeaseDuration: how long a claimed execution stays leased without a
	// heartbeat; a crashed worker's executions run again after it. Default 30s.
	LeaseDuration time.Duration
	// PollInterval between claims when no change notification arrives.
	// Default 1s.
	PollInterval time.Duration
	// NoMaintenance: do not run the rescuer (recovers executions of dead
	// workers, every 5s), the waker (resumes flows whose sleep or wait
	// timeout is over, every second) and the pruner (applies retention,
	// every minute) with this worker. Some process on the store must run
	// them.
	NoMaintenance bool
	// Logger. Default slog.Default().
	Logger *slog.Logger
	// TracerProvider, if set, traces claims, runs and flow steps; each run
	// joins the trace of the traceparent its execution was submitted
	// with (docs/tracing.md). nil: no spans.
	TracerProvider trace.TracerProvider
}

// Worker runs handlers for the executions of its registered kinds, with the
// rescuer and pruner unless NoMaintenance. Its process reports itself to
// the store as a server (what the console's overview shows), with the
// worker and the runs it started and failed. Register handlers, then
// Start.
type Worker struct {
	engine   *engine.Worker
	services *engine.Group
	reporter *engine.Reporter

	remote *remoteWorker // set by NewRemoteWorker: none of the above
}

// NewWorker returns a worker on the client's store.
func (c *Client) NewWorker(opts WorkerOptions) *Worker {
	rep := engine.NewReporter(engine.ReporterConfig{Store: c.st, Logger: opts.Logger})
	w := engine.NewWorker(engine.WorkerConfig{
		Store:         storewrap.Wrap(c.st, rep.Observe), // its claims and failures counted in the reports
		WorkerID:      opts.ID,
		Slots:         opts.Slots,
		TenantSlots:   opts.TenantSlots,
		Queues:        opts.Queues,
		LeaseDuration: opts.LeaseDuration,
		PollInterval:  opts.PollInterval,
		Logger:        opts.Logger,

		TracerProvider: opts.TracerProvider,
	})
	services := []engine.Service{w}
	if !opts.NoMaintenance {
		services = append(services,
			engine.NewRescuer(engine.RescuerConfig{Store: c.st, Logger: opts.Logger}),
			engine.NewWaker(engine.WakerConfig{Store: c.st, Logger: opts.Logger}),
			engine.NewPruner(engine.PrunerConfig{Store: c.st, Logger: opts.Logger}))
	}
	return &Worker{engine: w, services: engine.NewGroup(services...), reporter: rep}
}

// ID returns the worker's id.
func (w *Worker) ID() string {
	if w.remote != nil {
		return w.remote.id
	}
	return w.engine.ID()
}

// Handle registers fn for kind. Call it before Start.
func (w *Worker) Handle(kind string, fn HandlerFunc) {
	if w.remote != nil {
		w.remote.handle(kind, fn)
		return
	}
	w.engine.Handle(kind, func(ctx context.Context, j *engine.Job) (json.RawMessage, error) {
		result, err := fn(ctx, &Job{
			ID:          j.ID,
			Tenant:      j.Tenant,
			Kind:        j.Kind,
			Queue:       j.Queue,
			Payload:     j.Payload,
			Attempt:     j.Attempt,
			MaxAttempts: j.MaxAttempts,
			engine:      j,
		})
		if err != nil {
			return nil, err
		}
		return marshalResult(result)
	})
}

// marshalResult turns a handler's or a step's value into JSON: a
// json.RawMessage as written, anything else marshalled. A value that
// cannot be marshalled fails for good: running it again would not help.
func marshalResult(v any) (json.RawMessage, error) {
	if raw, ok := v.(json.RawMessage); ok {
		return raw, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, Permanent(fmt.Errorf("marshalling the result: %w", err))
	}
	return raw, nil
}

// HandleBuiltins registers the built-in kinds echo, sleep and http (see
// package kinds).
func (w *Worker) HandleBuiltins(opts kinds.Options) error {
	if w.remote != nil {
		return errors.New("latch: HandleBuiltins: a remote worker runs the handlers given to Handle; the server's own workers (latch serve --workers) run the built-in kinds")
	}
	return kinds.Register(w.engine, opts)
}

// Start starts claiming. It fails without any handler.
func (w *Worker) Start(ctx context.Context) error {
	if w.remote != nil {
		return w.remote.start(ctx)
	}
	if err := w.reporter.Start(ctx); err != nil {
		return err
	}
	if err := w.services.Start(ctx); err != nil {
		return errors.Join(err, w.reporter.Stop(ctx))
	}
	return nil
}

// Stop stops claiming and lets running handlers finish until ctx is done;
// then it cancels them (cause ErrShutdown) and hands their executions back
// to the store, so another worker runs them at once. Idempotent.
func (w *Worker) Stop(ctx context.Context) error {
	if w.remote != nil {
		return w.remote.stop(ctx)
	}
	err := w.services.Stop(ctx)
	// The last report, with the last counts, once the rest has stopped.
	return errors.Join(err, w.reporter.Stop(ctx))
}
