package latch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/latch-run/latch/engine"
	"github.com/latch-run/latch/internal/tracing"
	"github.com/latch-run/latch/remote"
	"github.com/latch-run/latch/store"
)

// NewRemoteWorker returns a worker that runs its handlers over the HTTP
// API of a latch server (docs/api.md, "Workers" and "Flows"), with c's key
// and retries: what a service that holds an API key, not the store's
// credentials, runs. Its handlers are the embedded worker's: the same
// HandlerFunc, whose Job's Step, StepValue, Sleep, WaitSignal, Spawn,
// WaitChildren and Map are sent under the lease's token instead of written
// to the store. A tenant's key works its tenant's executions; the admin
// key every tenant's (or the one c's WithTenant names).
//
// The options are the embedded worker's, read so: Slots is how many
// handlers run at once (default 10); Queues filters the claims, and the
// kinds are those registered with Handle; LeaseDuration is each lease and
// each heartbeat's extension (default 30s, heartbeats every third of it;
// whole seconds, 1s at least); PollInterval is how long a claim long-polls
// the server when nothing is ready (whole seconds, 1 to 30; default 1s),
// which is also how long Stop may wait for a claim in flight;
// TracerProvider traces each run as a child of its execution's
// traceparent. TenantSlots does not apply (the server's claims are fair
// across tenants), nor does NoMaintenance: the server rescues, wakes and
// prunes. The worker does not report itself as a server either.
//
// Every call under a lease carries its token, and a traceparent header of
// the run's trace context: the server refuses a call whose lease is gone
// (409 lease_lost), and the worker then cancels the handler (cause
// ErrLeaseLost) and writes nothing more for it. A handler's context is
// cancelled with ErrCancelled when a heartbeat learns of a cancel, with
// ErrTimeout at the execution's timeout, and with ErrShutdown by a Stop
// whose context ended: its lease is then handed back (POST …/release), so
// the execution runs again at once elsewhere.
func NewRemoteWorker(c *remote.Client, opts WorkerOptions) *Worker {
	return &Worker{remote: newRemoteWorker(c, opts)}
}

// remoteCancelGrace is how long a hard Stop waits for cancelled handlers
// before it hands their leases back anyway (engine.DefaultCancelGrace).
const remoteCancelGrace = engine.DefaultCancelGrace

// remoteWorker is the body of a Worker made by NewRemoteWorker.
type remoteWorker struct {
	c         *remote.Client
	id        string
	slots     int
	queues    []string
	lease     time.Duration
	heartbeat time.Duration
	claimWait int // seconds a claim long-polls
	log       *slog.Logger
	tracer    trace.Tracer // nil: tracing off

	mu       sync.Mutex
	handlers map[string]HandlerFunc
	started  bool

	soft     context.CancelFunc      // stops claiming
	jobs     context.Context         // parent of every handler's context
	shutdown context.CancelCauseFunc // cancels jobs with ErrShutdown
	abandon  chan struct{}           // closed when a hard stop gives up on handlers
	done     chan struct{}           // closed when the claim loop and every attempt ended
	running  atomic.Int64            // handlers running
	freed    chan struct{}           // a slot was freed (buffered 1)
	wg       sync.WaitGroup          // one per attempt
	lost     atomic.Int64            // leases it failed to settle or hand back
	abandons atomic.Int64            // handlers abandoned by a hard stop
	stopOnce sync.Once               // the first Stop stops
	stopErr  error                   // what Stop answers, set before done is read
}

func newRemoteWorker(c *remote.Client, opts WorkerOptions) *remoteWorker {
	w := &remoteWorker{
		c:        c,
		id:       opts.ID,
		slots:    opts.Slots,
		queues:   append([]string(nil), opts.Queues...),
		lease:    opts.LeaseDuration,
		log:      opts.Logger,
		tracer:   tracing.Tracer(opts.TracerProvider),
		handlers: make(map[string]HandlerFunc),
		abandon:  make(chan struct{}),
		done:     make(chan struct{}),
		freed:    make(chan struct{}, 1),
	}
	if w.id == "" {
		w.id = engine.NewWorker(engine.WorkerConfig{}).ID() // hostname-pid-random, as the embedded worker's
	}
	if w.slots <= 0 {
		w.slots = engine.DefaultSlots
	}
	w.lease = max(w.lease.Round(time.Second), time.Second)
	if opts.LeaseDuration <= 0 {
		w.lease = engine.DefaultLeaseDuration
	}
	w.heartbeat = w.lease / 3
	wait := opts.PollInterval
	if wait <= 0 {
		wait = engine.DefaultPollInterval
	}
	w.claimWait = min(max(int((wait+time.Second-1)/time.Second), 1), 30)
	if w.log == nil {
		w.log = slog.Default()
	}
	w.log = w.log.With("component", "remote-worker", "worker_id", w.id)
	return w
}

func (w *remoteWorker) handle(kind string, fn HandlerFunc) {
	if kind == "" || fn == nil {
		panic("latch: Handle needs a kind and a handler")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		panic(fmt.Sprintf("latch: Handle(%q) after Start", kind))
	}
	w.handlers[kind] = fn
}

func (w *remoteWorker) start(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		return errors.New("latch: remote worker: started twice")
	}
	if len(w.handlers) == 0 {
		return errors.New("latch: remote worker: no handler registered")
	}
	w.started = true
	kinds := make([]string, 0, len(w.handlers))
	for k := range w.handlers {
		kinds = append(kinds, k)
	}
	soft, cancelSoft := context.WithCancel(context.WithoutCancel(ctx))
	w.soft = cancelSoft
	w.jobs, w.shutdown = context.WithCancelCause(context.WithoutCancel(ctx))
	w.log.Info("remote worker started", "slots", w.slots, "kinds", kinds, "queues", w.queues)
	go func() {
		w.claimLoop(soft, kinds)
		w.wg.Wait()
		close(w.done)
	}()
	return nil
}

// stop stops claiming and waits for the running handlers; when ctx ends
// first it cancels them (ErrShutdown), and after remoteCancelGrace hands
// back the leases of those that still run. It reports the leases it could
// not settle or hand back, and the handlers it abandoned.
func (w *remoteWorker) stop(ctx context.Context) error {
	w.mu.Lock()
	started := w.started
	w.mu.Unlock()
	if !started {
		return nil
	}
	w.stopOnce.Do(func() {
		w.soft()
		select {
		case <-w.done:
		case <-ctx.Done():
			w.log.Warn("remote worker stopping hard: cancelling running handlers", "running", w.running.Load())
			w.shutdown(ErrShutdown)
			grace := time.NewTimer(remoteCancelGrace)
			defer grace.Stop()
			select {
			case <-w.done:
			case <-grace.C:
				close(w.abandon)
				<-w.done
			}
		}
		w.shutdown(ErrShutdown)
		var errs []error
		if n := w.abandons.Load(); n > 0 {
			errs = append(errs, fmt.Errorf("latch: remote worker: %d handler(s) did not return within %v of being cancelled; their leases were handed back",
				n, remoteCancelGrace))
		}
		if n := w.lost.Load(); n > 0 {
			errs = append(errs, fmt.Errorf("latch: remote worker: %d lease(s) could not be settled or handed back; the server rescues them when they expire", n))
		}
		w.stopErr = errors.Join(errs...)
		w.log.Info("remote worker stopped")
	})
	<-w.done
	return w.stopErr
}

// claimLoop claims while ctx (the soft stop) lasts, as many leases as
// there are free slots, long-polling the server.
func (w *remoteWorker) claimLoop(ctx context.Context, kinds []string) {
	failures := 0
	for ctx.Err() == nil {
		free := w.slots - int(w.running.Load())
		if free <= 0 {
			select {
			case <-ctx.Done():
				return
			case <-w.freed:
			}
			continue
		}
		// The claim is not cancelled by Stop: leases the server granted
		// must reach us to be handed back, not be left to expire.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Duration(w.claimWait)*time.Second+w.lease)
		leases, err := w.c.Claim(cctx, remote.ClaimRequest{WorkerID: w.id, Queues: w.queues, Kinds: kinds, Max: min(free, 100),
			LeaseSeconds: int(w.lease / time.Second), WaitSeconds: w.claimWait})
		claimed := time.Now()
		cancel()
		if err != nil {
			failures++
			w.log.Error("claim failed", "err", err, "failures", failures)
			t := time.NewTimer(min(time.Second<<min(failures-1, 5), 30*time.Second))
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
			continue
		}
		failures = 0
		for i := range leases {
			l := leases[i]
			if ctx.Err() != nil {
				w.handBack(&l, true)
				continue
			}
			w.running.Add(1)
			w.wg.Go(func() { w.execute(&l, claimed) })
		}
	}
}

// handBack releases a lease; unstarted says its handler never ran.
func (w *remoteWorker) handBack(l *remote.Lease, unstarted bool) {
	ctx, cancel := context.WithTimeout(context.Background(), max(time.Until(l.LeaseExpiresAt), 5*time.Second))
	defer cancel()
	if _, err := w.c.Release(ctx, l.ExecutionID, remote.ReleaseRequest{LeaseToken: l.LeaseToken, Unstarted: unstarted}); err != nil &&
		!errors.Is(err, remote.ErrLeaseLost) {
		w.lost.Add(1)
		w.log.Error("handing a lease back failed; the server rescues it when it expires",
			"execution_id", l.ExecutionID, "tenant", l.Tenant, "err", err)
	}
}

func (w *remoteWorker) slotFreed() {
	w.running.Add(-1)
	select {
	case w.freed <- struct{}{}:
	default:
	}
}

// remoteAttempt is one lease a remote worker runs.
type remoteAttempt struct {
	w     *remoteWorker
	lease *remote.Lease
	log   *slog.Logger
	// expires is the lease's expiry by this process's clock (Unix nanos),
	// counted from before the call that set it: a call is due then.
	expires atomic.Int64
	flow    *remoteFlow
}

// execute runs one lease from its claim to its settlement.
func (w *remoteWorker) execute(l *remote.Lease, claimed time.Time) {
	a := &remoteAttempt{w: w, lease: l, log: w.log.With("execution_id", l.ExecutionID, "tenant", l.Tenant, "kind", l.Kind, "attempt", l.Attempt)}
	a.expires.Store(claimed.Add(w.lease).UnixNano())
	returned := false
	defer func() {
		if !returned {
			w.slotFreed()
		}
	}()

	// ctx is cancelled with ErrShutdown by a hard stop (jobs), or here with
	// ErrCancelled or ErrLeaseLost; runCtx adds the execution's timeout.
	ctx, cancel := context.WithCancelCause(tracing.WithParent(w.jobs, l.TraceParent))
	defer cancel(nil)
	var span trace.Span
	if w.tracer != nil {
		ctx, span = w.tracer.Start(ctx, "run "+l.Kind, trace.WithSpanKind(trace.SpanKindConsumer),
			trace.WithAttributes(tracing.AttrExecutionID.String(l.ExecutionID), tracing.AttrTenant.String(l.Tenant),
				tracing.AttrKind.String(l.Kind), tracing.AttrQueue.String(l.Queue), tracing.AttrAttempt.Int(l.Attempt),
				tracing.AttrWorkerID.String(w.id)))
		defer span.End()
	}
	runCtx := ctx
	if l.TimeoutSeconds > 0 {
		var stop context.CancelFunc
		runCtx, stop = context.WithTimeoutCause(ctx, time.Duration(l.TimeoutSeconds)*time.Second, ErrTimeout)
		defer stop()
	}
	a.flow = newRemoteFlow(a)
	done := make(chan outcome, 1) // buffered: an abandoned handler never blocks
	if h := w.handlers[l.Kind]; h == nil {
		done <- outcome{err: Permanent(fmt.Errorf("no handler for kind %q", l.Kind))}
	} else {
		job := &Job{ID: l.ExecutionID, Tenant: l.Tenant, Kind: l.Kind, Queue: l.Queue, Payload: l.Payload,
			Attempt: l.Attempt, MaxAttempts: l.MaxAttempts, engine: a.flow}
		go func() { done <- a.call(runCtx, h, job) }()
	}

	heartbeat := time.NewTicker(w.heartbeat)
	defer heartbeat.Stop()
	lease := engine.LeaseWatch{Log: a.log, Ticker: heartbeat, Cancel: cancel}
	for {
		select {
		case out := <-done:
			returned = true
			w.slotFreed()
			if span != nil && out.err != nil && !errors.Is(out.err, ErrSuspended) {
				span.RecordError(out.err)
				span.SetStatus(codes.Error, store.Truncate(out.err.Error(), store.MaxErrorBytes))
			}
			if st := a.flow.suspension(); st != "" {
				if !errors.Is(out.err, ErrSuspended) {
					a.log.Warn("the handler went on after its flow suspended; what it returned is not recorded", "err", out.err)
				}
				return
			}
			if lease.Lost {
				a.log.Info("attempt ended after its lease was lost; nothing written", "err", out.err)
				return
			}
			a.settle(ctx, context.Cause(runCtx), out)
			return

		case <-heartbeat.C:
			if lease.Lost || a.flow.suspension() != "" {
				continue
			}
			// A server not reached before the lease ended has rescued it
			// (or soon will): expired, the handler is cancelled.
			cancelRequested, err := a.heartbeat(ctx)
			lease.Heartbeat(cancelRequested, fromRemote(err), time.Now().UnixNano() >= a.expires.Load())

		case <-w.abandon:
			// A hard stop gave up on this handler: it keeps running, but
			// nothing it returns is written, and its lease goes back.
			w.abandons.Add(1)
			if !lease.Lost && a.flow.suspension() == "" {
				w.handBack(l, false)
			}
			return
		}
	}
}

// call runs the handler (engine.CallHandler), its result marshalled to
// JSON.
func (a *remoteAttempt) call(ctx context.Context, h HandlerFunc, job *Job) outcome {
	result, err := engine.CallHandler(a.log, func() (json.RawMessage, error) {
		v, err := h(ctx, job)
		if err != nil {
			return nil, err
		}
		return marshalResult(v)
	})
	return outcome{result: result, err: err}
}

// outcome is what a handler returned.
type outcome struct {
	result json.RawMessage
	err    error
}

// heartbeat extends the lease and reports whether a cancel was requested.
func (a *remoteAttempt) heartbeat(ctx context.Context) (cancelRequested bool, err error) {
	sent := time.Now()
	var res remote.HeartbeatResponse
	hctx, cancel := a.callCtx(ctx)
	defer cancel()
	if err := a.send(hctx, "heartbeat", remote.HeartbeatRequest{LeaseToken: a.lease.LeaseToken, LeaseSeconds: int(a.w.lease / time.Second)}, &res); err != nil {
		return false, err
	}
	a.expires.Store(sent.Add(a.w.lease).UnixNano())
	return res.CancelRequested, nil
}

// settle writes how the attempt ended, as the embedded worker's does.
// cause is the handler context's cancellation cause.
func (a *remoteAttempt) settle(ctx context.Context, cause error, out outcome) {
	switch {
	case errors.Is(cause, ErrCancelled):
		msg := "cancelled"
		if out.err != nil && !errors.Is(out.err, context.Canceled) && !errors.Is(out.err, ErrCancelled) {
			msg = "cancelled: " + out.err.Error()
		}
		a.fail(ctx, msg, false, nil)
	case errors.Is(cause, ErrShutdown) && out.err != nil:
		if err := a.write(ctx, "release", remote.ReleaseRequest{LeaseToken: a.lease.LeaseToken}, nil); err != nil {
			a.unwritten("release", err)
		}
	case out.err == nil:
		var result any // nil: null
		if out.result != nil {
			result = out.result
		}
		err := a.write(ctx, "complete", remote.CompleteRequest{LeaseToken: a.lease.LeaseToken, Result: result}, nil)
		if errors.Is(err, remote.ErrStorageExceeded) {
			a.fail(ctx, fmt.Sprintf("the result (%d bytes) was not stored: %v", len(out.result), err), false, nil)
		} else if err != nil {
			a.unwritten("complete", err)
		}
	case errors.Is(cause, ErrTimeout):
		a.fail(ctx, fmt.Sprintf("timed out after %ds: %v", a.lease.TimeoutSeconds, out.err), true, nil)
	case engine.IsPermanent(out.err):
		a.fail(ctx, out.err.Error(), false, nil)
	default:
		var after *int64
		if d, ok := engine.RetryAfterDelay(out.err); ok {
			secs := int64((d + time.Second - 1) / time.Second)
			after = &secs
		}
		a.fail(ctx, out.err.Error(), true, after)
	}
}

func (a *remoteAttempt) fail(ctx context.Context, msg string, retry bool, after *int64) {
	req := remote.FailRequest{LeaseToken: a.lease.LeaseToken, Error: store.Truncate(msg, store.MaxErrorBytes), Retry: &retry,
		RetryAfterSeconds: after}
	var x remote.Execution
	if err := a.write(ctx, "fail", req, &x); err != nil {
		a.unwritten("fail", err)
		return
	}
	switch x.Status {
	case remote.StatusCancelled:
		a.log.Info("execution cancelled")
	case remote.StatusFailed:
		a.log.Warn("execution failed", "err", msg)
	default:
		a.log.Info("attempt failed; will retry", "err", msg, "status", x.Status)
	}
}

// unwritten logs a settling write that did not land.
func (a *remoteAttempt) unwritten(op string, err error) {
	if errors.Is(err, remote.ErrLeaseLost) || errors.Is(err, remote.ErrNotFound) {
		a.log.Info("lease lost before the attempt was recorded; nothing written", "op", op, "err", err)
		return
	}
	a.w.lost.Add(1)
	a.log.Error("the attempt's outcome was not written; the server rescues the execution when its lease expires", "op", op, "err", err)
}

// write sends one call under the lease, again while it fails in a way a
// repeat may mend (the server unavailable or unreachable: the calls are
// fenced, so a repeat of one that landed changes nothing), until the lease
// would end. It returns nil once the call succeeded.
func (a *remoteAttempt) write(ctx context.Context, op string, body, out any) error {
	wctx, cancel := a.callCtx(ctx)
	defer cancel()
	wait := 50 * time.Millisecond
	for {
		err := a.send(wctx, op, body, out)
		var e *remote.Error
		switch {
		case err == nil:
			return nil
		case errors.As(err, &e) && e.Status < 500:
			return err // the server's verdict
		}
		a.log.Warn("call failed; retrying", "op", op, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-wctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// send makes one call of the lease's execution (POST /api/executions/{id}/op),
// with the traceparent of ctx: the run's span, or the execution's.
func (a *remoteAttempt) send(ctx context.Context, op string, body, out any) error {
	var hdr http.Header
	if tp := tracing.Current(ctx); tp != "" {
		hdr = http.Header{"Traceparent": {tp}}
	}
	_, err := a.w.c.Call(ctx, remote.Request{Method: http.MethodPost, Path: "/api/executions/" + url.PathEscape(a.lease.ExecutionID) + "/" + op,
		Header: hdr, Body: body, Idempotent: true}, out)
	return err
}

// callCtx is the context of a call under the lease: never cancelled with
// the handler's, and due when the lease ends (a second from now at least),
// so that a stale worker does not call past its lease and a shutdown does
// not drop a result.
func (a *remoteAttempt) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	left := max(time.Until(time.Unix(0, a.expires.Load())), time.Second)
	return context.WithTimeout(context.WithoutCancel(ctx), left)
}

// endSpan ends a step's span with err's status.
func endSpan(span trace.Span, err error) {
	if err != nil && !errors.Is(err, ErrSuspended) {
		span.RecordError(err)
		span.SetStatus(codes.Error, store.Truncate(err.Error(), store.MaxErrorBytes))
	}
	span.End()
}
