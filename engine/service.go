package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Service is what every engine loop is. Start returns once the loop runs;
// the context bounds start-up only and the loop runs until Stop. A service
// starts at most once. Stop is idempotent and safe to call concurrently and
// before Start: it stops taking new work at once (soft) and, when ctx is
// done, abandons the work still in hand (hard); it returns when the loop has
// ended.
type Service interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// errStopped is the cause of a loop's soft context once Stop was called.
var errStopped = errors.New("engine: stopped")

// runFunc is the body of a loop. It calls ready once it is running. soft is
// cancelled when Stop is called: take no new work, finish what is in hand.
// hard is cancelled (cause ErrShutdown) when Stop's context is done: abandon
// the work in hand, quickly. The body returns when it has stopped; its error
// is Stop's answer.
type runFunc func(soft, hard context.Context, ready func()) error

// lifecycle is the start/stop base every engine loop embeds: one goroutine
// running the loop's body, the two stop levels, and the idempotence rules of
// Service.
type lifecycle struct {
	name string

	mu         sync.Mutex
	started    bool
	stopped    bool
	softCancel context.CancelCauseFunc
	hardCancel context.CancelCauseFunc
	done       chan struct{} // closed when the body has returned
	err        error         // the body's answer, read after done
}

func (l *lifecycle) start(ctx context.Context, run runFunc) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return fmt.Errorf("engine: %s: already stopped", l.name)
	}
	if l.started {
		return fmt.Errorf("engine: %s: already started", l.name)
	}
	if err := context.Cause(ctx); err != nil {
		return fmt.Errorf("engine: %s: start: %w", l.name, err)
	}
	l.started = true
	// The loop outlives Start's context but keeps its values.
	base := context.WithoutCancel(ctx)
	soft, softCancel := context.WithCancelCause(base)
	hard, hardCancel := context.WithCancelCause(base)
	l.softCancel, l.hardCancel = softCancel, hardCancel
	l.done = make(chan struct{})
	ready := make(chan struct{})
	go func() {
		defer close(l.done)
		l.err = run(soft, hard, sync.OnceFunc(func() { close(ready) }))
	}()
	select {
	case <-ready:
		return nil
	case <-l.done:
		// The body gave up before it was running.
		softCancel(errStopped)
		hardCancel(ErrShutdown)
		if l.err == nil {
			return fmt.Errorf("engine: %s: ended while starting", l.name)
		}
		return fmt.Errorf("engine: %s: %w", l.name, l.err)
	}
}

func (l *lifecycle) stop(ctx context.Context) error {
	l.mu.Lock()
	l.stopped = true // nothing may start after a Stop
	if !l.started {
		l.mu.Unlock()
		return nil
	}
	done, softCancel, hardCancel := l.done, l.softCancel, l.hardCancel
	l.mu.Unlock()
	softCancel(errStopped)
	select {
	case <-done:
	case <-ctx.Done():
		hardCancel(ErrShutdown)
		<-done
	}
	hardCancel(ErrShutdown) // release the context's resources
	return l.err
}

// Group runs several services as one: Start starts them in order (stopping
// those already started if one fails) and Stop stops them all at once with
// the same context, so their soft shutdowns overlap.
type Group struct {
	services []Service
}

var _ Service = (*Group)(nil)

// NewGroup returns a Group of the given services.
func NewGroup(services ...Service) *Group {
	return &Group{services: services}
}

// Start starts each service in order.
func (g *Group) Start(ctx context.Context) error {
	for i, s := range g.services {
		if err := s.Start(ctx); err != nil {
			stopCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
			cancel() // a failed start tears down hard
			return errors.Join(err, g.stop(stopCtx, g.services[:i]))
		}
	}
	return nil
}

// Stop stops every service concurrently and returns their errors joined.
func (g *Group) Stop(ctx context.Context) error {
	return g.stop(ctx, g.services)
}

func (g *Group) stop(ctx context.Context, services []Service) error {
	errs := make([]error, len(services))
	var wg sync.WaitGroup
	for i, s := range services {
		wg.Go(func() { errs[i] = s.Stop(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}
