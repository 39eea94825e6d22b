package engine

import (
	"context"
	"errors"
	"sync"
	"testing"
)

func TestLifecycleStartStopRules(t *testing.T) {
	t.Parallel()
	var l lifecycle
	l.name = "test"
	ctx := t.Context()
	ran := make(chan struct{})
	body := func(soft, hard context.Context, ready func()) error {
		ready()
		close(ran)
		<-soft.Done()
		if !errors.Is(context.Cause(soft), errStopped) {
			t.Errorf("soft cause %v", context.Cause(soft))
		}
		return nil
	}
	if err := l.start(ctx, body); err != nil {
		t.Fatal(err)
	}
	<-ran
	if err := l.start(ctx, body); err == nil {
		t.Error("second start succeeded")
	}
	var wg sync.WaitGroup
	for range 3 { // concurrent and repeated stops all return once it ended
		wg.Go(func() {
			if err := l.stop(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if err := l.stop(ctx); err != nil {
		t.Error(err)
	}
	if err := l.start(ctx, body); err == nil {
		t.Error("start after stop succeeded")
	}
}

func TestLifecycleStopBeforeStart(t *testing.T) {
	t.Parallel()
	l := lifecycle{name: "test"}
	if err := l.stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	err := l.start(t.Context(), func(_, _ context.Context, ready func()) error { ready(); return nil })
	if err == nil {
		t.Error("start after stop succeeded")
	}
}

func TestLifecycleHardStop(t *testing.T) {
	t.Parallel()
	l := lifecycle{name: "test"}
	err := l.start(t.Context(), func(soft, hard context.Context, ready func()) error {
		ready()
		<-hard.Done() // ignores the soft level
		return context.Cause(hard)
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := l.stop(ctx); !errors.Is(err, ErrShutdown) {
		t.Errorf("stop = %v, want the body's ErrShutdown", err)
	}
}

func TestLifecycleBodyFailsBeforeReady(t *testing.T) {
	t.Parallel()
	l := lifecycle{name: "test"}
	boom := errors.New("boom")
	err := l.start(t.Context(), func(_, _ context.Context, _ func()) error { return boom })
	if !errors.Is(err, boom) {
		t.Errorf("start = %v, want boom", err)
	}
}

func TestLifecycleStartWithDoneContext(t *testing.T) {
	t.Parallel()
	l := lifecycle{name: "test"}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := l.start(ctx, func(_, _ context.Context, ready func()) error { ready(); return nil }); err == nil {
		t.Error("start with a done context succeeded")
	}
}

// fakeService records calls.
type fakeService struct {
	name     string
	startErr error
	mu       *sync.Mutex
	log      *[]string
}

func (f fakeService) Start(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	*f.log = append(*f.log, "start "+f.name)
	return f.startErr
}

func (f fakeService) Stop(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	*f.log = append(*f.log, "stop "+f.name)
	return nil
}

func TestGroupStartFailureStopsStartedServices(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var log []string
	boom := errors.New("boom")
	g := NewGroup(
		fakeService{name: "a", mu: &mu, log: &log},
		fakeService{name: "b", startErr: boom, mu: &mu, log: &log},
		fakeService{name: "c", mu: &mu, log: &log},
	)
	if err := g.Start(t.Context()); !errors.Is(err, boom) {
		t.Fatalf("start = %v", err)
	}
	want := []string{"start a", "start b", "stop a"}
	if len(log) != len(want) {
		t.Fatalf("calls %v, want %v", log, want)
	}
	for i := range want {
		if log[i] != want[i] {
			t.Fatalf("calls %v, want %v", log, want)
		}
	}
}

func TestPermanentAndRetryAfter(t *testing.T) {
	t.Parallel()
	base := errors.New("base")
	if Permanent(nil) != nil || RetryAfter(nil, 1) != nil {
		t.Error("wrapping nil is not nil")
	}
	p := Permanent(base)
	if !IsPermanent(p) || !errors.Is(p, base) || p.Error() != "base" {
		t.Errorf("Permanent: %v", p)
	}
	if IsPermanent(base) {
		t.Error("plain error is permanent")
	}
	r := RetryAfter(base, -5)
	if d, ok := RetryAfterDelay(r); !ok || d != 0 || !errors.Is(r, base) {
		t.Errorf("RetryAfter: %v %v", d, ok)
	}
	if _, ok := RetryAfterDelay(base); ok {
		t.Error("plain error has a retry delay")
	}
}
