package engine

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/latch-run/latch/store"
)

// A result the tenant's storage budget has no room for is not written: the
// attempt fails at once, without retries (the work is done; running it
// again would only do it again), saying why, and the lease is not left to
// expire.
func TestWorkerResultOverTheStorageBudgetFails(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	limit := int64(100)
	if _, err := e.st.UpdateTenant(e.ctx, &store.UpdateTenantParams{Name: e.tenant, MaxStoredBytes: &limit}); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	w := NewWorker(e.config())
	w.Handle("big", func(ctx context.Context, job *Job) (json.RawMessage, error) {
		calls.Add(1)
		return json.RawMessage(`"` + strings.Repeat("x", 200) + `"`), nil
	})
	e.start(w)
	ex := e.submit("big", `{}`, maxAttempts(5))
	got := e.waitStatus(ex.ID, store.StatusFailed)
	if got.Attempt != 1 || calls.Load() != 1 || got.Result != nil || !strings.Contains(got.Error, "storage budget") {
		t.Errorf("attempt %d, calls %d, result %s, error %q; want 1, 1, none, the storage budget named",
			got.Attempt, calls.Load(), got.Result, got.Error)
	}
	e.checkInflight(0)
}
