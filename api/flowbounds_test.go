package api

import (
	"context"
	"net/http"
	"testing"

	"github.com/latch-run/latch/store"
)

// lowFlowBounds is a store whose flow bounds are lowered to one step and
// one kept signal, so that a test reaches each refusal in a call or two.
type lowFlowBounds struct{ store.Store }

func (s lowFlowBounds) RecordStep(ctx context.Context, p *store.RecordStepParams) (*store.RecordStepResult, error) {
	p.MaxSteps = 1
	return s.Store.RecordStep(ctx, p)
}

func (s lowFlowBounds) Suspend(ctx context.Context, p *store.SuspendParams) (*store.Execution, error) {
	p.MaxSteps = 1
	return s.Store.Suspend(ctx, p)
}

func (s lowFlowBounds) Signal(ctx context.Context, p *store.SignalParams) (*store.SignalResult, error) {
	p.MaxBuffered = 1
	return s.Store.Signal(ctx, p)
}

// TestFlowBounds: past an execution's bounds, a new step, a suspension
// that would record a new step and a signal to keep are 409 with their
// codes, and change nothing; what the bounds allow still works.
func TestFlowBounds(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) { c.Store = lowFlowBounds{c.Store} })
	key := e.tenant("acme")
	x := e.submit(key, `{"kind":"flow"}`, http.StatusCreated)
	l := e.claimOne(key)

	e.record(key, l, `"name":"one","result":1`).want(http.StatusOK)
	wantCode(t, e.record(key, l, `"name":"two","result":2`), http.StatusConflict, CodeTooManySteps)
	var rec stepRecord
	e.record(key, l, `"name":"one","result":"again"`).want(http.StatusOK).decode(&rec)
	if string(rec.Result) != "1" || rec.Recorded {
		t.Errorf("a recorded name at the bound: %+v, want the first record", rec)
	}
	wantCode(t, e.suspendOn(key, l, `"step":"wait","signal":"go"`), http.StatusConflict, CodeTooManySteps)
	if got := e.get(key, x.ExecutionID); got.Status != "running" {
		t.Errorf("after the refused suspend: %s, want running (the lease is kept)", got.Status)
	}

	e.signal(key, x.ExecutionID, "go", `{"data":1}`).want(http.StatusAccepted)
	wantCode(t, e.signal(key, x.ExecutionID, "go", `{"data":2}`, "Idempotency-Key", "k2"), http.StatusConflict,
		CodeSignalBufferFull)
	// The refused key was not kept: once there is room it is a new signal.
	if steps := e.steps(key, x.ExecutionID); len(steps) != 1 {
		t.Errorf("journal after the refusals: %d steps, want 1", len(steps))
	}
}

func wantCode(t *testing.T, r *resp, status int, code Code) {
	t.Helper()
	r.want(status)
	var p Problem
	r.decode(&p)
	if p.Code != code {
		t.Errorf("code %q, want %q: %s", p.Code, code, r.body)
	}
}
