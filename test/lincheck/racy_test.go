package lincheck

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/sqlite"
)

// racyStore reintroduces the check-then-act dedup of docs/design.md's "The one rule" on top of
// a correct store: a keyed submit first looks its key up (List by dedup key,
// then its own side table of pre-claims, like a pre-claim key in Redis), and
// when it finds nothing it admits the execution WITHOUT the key in a second
// store call and records the key itself afterwards. A mapping whose row is
// gone is taken for an orphan and dropped, as the seed did. Run alone, it
// behaves exactly like the contract; two submits of one key inside the
// window both find nothing and both admit.
type racyStore struct {
	store.Store
	window time.Duration

	mu    sync.Mutex
	keys  map[tenantKey]string // the pre-claims: (tenant, key) -> execution id
	keyOf map[string]string    // execution id -> its key, to show it on reads
}

func newRacy(s store.Store, window time.Duration) *racyStore {
	return &racyStore{Store: s, window: window, keys: map[tenantKey]string{}, keyOf: map[string]string{}}
}

func (r *racyStore) Admit(ctx context.Context, p *store.AdmitParams) (*store.AdmitResult, error) {
	res := &store.AdmitResult{Items: make([]store.Admitted, len(p.Items))}
	for i, sub := range p.Items {
		if sub.DedupKey != "" {
			// Check.
			hit, found, err := r.lookup(ctx, p.Tenant, sub)
			if err != nil {
				return nil, err
			}
			if found {
				res.Items[i] = hit
				continue
			}
			// The window between check and act.
			runtime.Gosched()
			time.Sleep(r.window)
		}
		// Act: the row is written without its key...
		plain := sub
		plain.DedupKey = ""
		one, err := r.Store.Admit(ctx, &store.AdmitParams{Tenant: p.Tenant, Items: []store.Submission{plain}, Now: p.Now})
		if err != nil {
			return nil, err
		}
		it := one.Items[0]
		// ...and the key is recorded afterwards.
		if it.Execution != nil && sub.DedupKey != "" {
			r.mu.Lock()
			r.keys[tenantKey{p.Tenant, sub.DedupKey}] = it.Execution.ID
			r.keyOf[it.Execution.ID] = sub.DedupKey
			r.mu.Unlock()
			it.Execution.DedupKey = sub.DedupKey
		}
		res.Items[i] = it
	}
	return res, nil
}

// lookup is the "check": List by dedup key, then the pre-claim table.
func (r *racyStore) lookup(ctx context.Context, tenant string, sub store.Submission) (store.Admitted, bool, error) {
	l, err := r.List(ctx, &store.ListParams{Tenant: tenant, DedupKey: sub.DedupKey, Limit: 1})
	if err != nil {
		return store.Admitted{}, false, err
	}
	var x *store.Execution
	if len(l.Items) > 0 {
		x = l.Items[0]
	} else {
		k := tenantKey{tenant, sub.DedupKey}
		r.mu.Lock()
		id, ok := r.keys[k]
		r.mu.Unlock()
		if !ok {
			return store.Admitted{}, false, nil
		}
		x, err = r.Store.Get(ctx, &store.GetParams{Tenant: tenant, ID: id})
		if err != nil {
			// "The row does not exist: an orphan mapping." Drop it and admit.
			r.mu.Lock()
			if r.keys[k] == id {
				delete(r.keys, k)
			}
			r.mu.Unlock()
			return store.Admitted{}, false, nil
		}
		x.DedupKey = sub.DedupKey
	}
	payload := sub.Payload
	if len(payload) == 0 {
		payload = []byte("{}")
	}
	if x.Kind != sub.Kind || !bytes.Equal(x.Payload, payload) {
		return store.Admitted{Err: store.ErrDedupKeyReused}, true, nil
	}
	return store.Admitted{Execution: x, Deduplicated: true}, true, nil
}

// show puts the key the wrapper keeps aside back on an execution it returns.
func (r *racyStore) show(x *store.Execution, err error) (*store.Execution, error) {
	if x != nil {
		r.mu.Lock()
		if k, ok := r.keyOf[x.ID]; ok {
			x.DedupKey = k
		}
		r.mu.Unlock()
	}
	return x, err
}

func (r *racyStore) Get(ctx context.Context, p *store.GetParams) (*store.Execution, error) {
	return r.show(r.Store.Get(ctx, p))
}

func (r *racyStore) Cancel(ctx context.Context, p *store.CancelParams) (*store.Execution, error) {
	return r.show(r.Store.Cancel(ctx, p))
}

func (r *racyStore) Complete(ctx context.Context, p *store.CompleteParams) (*store.Execution, error) {
	return r.show(r.Store.Complete(ctx, p))
}

func (r *racyStore) Fail(ctx context.Context, p *store.FailParams) (*store.Execution, error) {
	return r.show(r.Store.Fail(ctx, p))
}

func (r *racyStore) Release(ctx context.Context, p *store.ReleaseParams) (*store.Execution, error) {
	return r.show(r.Store.Release(ctx, p))
}

func (r *racyStore) Suspend(ctx context.Context, p *store.SuspendParams) (*store.Execution, error) {
	return r.show(r.Store.Suspend(ctx, p))
}

func (r *racyStore) Retry(ctx context.Context, p *store.RetryParams) (*store.Execution, error) {
	return r.show(r.Store.Retry(ctx, p))
}

func openSQLite(t *testing.T) store.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), testdb.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestCheckerCatchesCheckThenActDedup shows that the check is not vacuous:
// histories recorded through racyStore are rejected, while the same
// workloads on the real store are accepted, and the wrapper alone (one
// client, so no interleaving) is accepted too — the rejection is the race.
func TestCheckerCatchesCheckThenActDedup(t *testing.T) {
	const maxTries = 8
	workloads := []struct {
		name string
		mk   func(h int) workload
	}{{"Contention", contentionWorkload}, {"Tenants", tenantWorkload}}

	for _, wl := range workloads {
		t.Run("RacyRejected/"+wl.name, func(t *testing.T) {
			o := Options{Clients: 12, HistoryOps: 200}.withDefaults(t)
			s := newRacy(openSQLite(t), 300*time.Microsecond)
			for try := range maxTries {
				v, err := runHistory(t.Context(), []store.Store{s}, wl.mk(try), o, o.Seed+uint64(try), fmt.Sprintf("%s-try%d", t.Name(), try))
				if err != nil {
					t.Fatal(err)
				}
				if v.result == porcupine.Illegal {
					t.Logf("caught on history %d of at most %d (checked in %v); visualization: %s\n%s",
						try+1, maxTries, v.took.Round(time.Millisecond), v.html, v.why)
					return
				}
				t.Logf("history %d: %s, not caught (%s)", try+1, v.result, v.tally)
			}
			t.Fatalf("the checker accepted %d histories of a store with check-then-act dedup", maxTries)
		})
	}

	for _, wl := range workloads {
		t.Run("RacyAloneAccepted/"+wl.name, func(t *testing.T) {
			o := Options{Clients: 1, HistoryOps: 120}.withDefaults(t)
			s := newRacy(openSQLite(t), 0)
			v, err := runHistory(t.Context(), []store.Store{s}, wl.mk(0), o, o.Seed, t.Name())
			if err != nil {
				t.Fatal(err)
			}
			if v.result != porcupine.Ok {
				t.Fatalf("a sequential history through the wrapper is %s; the wrapper must only differ under concurrency\n%s\n%s",
					v.result, v.html, v.why)
			}
		})
	}

	for _, wl := range workloads {
		t.Run("RealAccepted/"+wl.name, func(t *testing.T) {
			o := Options{Clients: 12, HistoryOps: 200}.withDefaults(t)
			v, err := runHistory(t.Context(), []store.Store{openSQLite(t)}, wl.mk(0), o, o.Seed, t.Name())
			if err != nil {
				t.Fatal(err)
			}
			report(t, 0, v)
		})
	}
}
