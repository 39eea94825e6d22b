package storewrap_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/latch-run/latch/internal/storewrap"
	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/sqlite"
)

// bare is a store with no optional capability; its methods are the nil
// interface's (only the ones a test calls are written).
type bare struct {
	store.Store
	claims int
}

var errDown = errors.New("down")

func (b *bare) Claim(_ context.Context, p *store.ClaimParams) (*store.ClaimResult, error) {
	b.claims++
	if p.WorkerID == "fail" {
		return &store.ClaimResult{}, errDown
	}
	return &store.ClaimResult{Leases: []store.Lease{{ExecutionID: "e1", Tenant: "acme"}}, Deferred: 2}, nil
}

func (b *bare) Ping(context.Context) error { return errDown }

type notifier struct{ *bare }

func (notifier) Changed() <-chan struct{} { return closedCh }

var closedCh = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

type feed struct{ notifier }

func (feed) WatchChanges(fn func(store.Change)) func() {
	fn(store.Change{IDs: []string{"x"}})
	return func() {}
}

type sharer struct{ *bare }

func (sharer) SharedAcrossProcesses() bool { return false }

type durable struct{ *bare }

func (durable) CheckDurability(context.Context) (string, error) { return "fsync off", nil }

// Every optional capability of the wrapped store is found on the wrapper
// and answers what the wrapped store answers; one it lacks is either
// absent (Notifier, ChangeFeed: their presence changes what callers do)
// or answers what its callers conclude of a store without it (Sharer:
// shared; DurabilityChecker: nothing to warn of).
func TestWrapKeepsCapabilities(t *testing.T) {
	ctx := t.Context()
	for _, tc := range []struct {
		name              string
		st                store.Store
		notifies, feeds   bool
		shared            bool
		durabilityWarning string
	}{
		{"bare", &bare{}, false, false, true, ""},
		{"notifier", notifier{&bare{}}, true, false, true, ""},
		{"notifier and feed", feed{notifier{&bare{}}}, true, true, true, ""},
		{"sharer", sharer{&bare{}}, false, false, false, ""},
		{"durability checker", durable{&bare{}}, false, false, true, "fsync off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := storewrap.Wrap(tc.st)
			n, ok := w.(store.Notifier)
			if ok != tc.notifies {
				t.Fatalf("wrapper is a Notifier: %v, want %v", ok, tc.notifies)
			}
			if ok {
				select {
				case <-n.Changed():
				default:
					t.Fatal("Changed is not the wrapped store's channel")
				}
			}
			f, ok := w.(store.ChangeFeed)
			if ok != tc.feeds {
				t.Fatalf("wrapper is a ChangeFeed: %v, want %v", ok, tc.feeds)
			}
			if ok {
				var got []string
				f.WatchChanges(func(c store.Change) { got = c.IDs })()
				if !reflect.DeepEqual(got, []string{"x"}) {
					t.Fatalf("WatchChanges not passed through: %v", got)
				}
			}
			if got := store.SharedAcrossProcesses(w); got != tc.shared {
				t.Errorf("SharedAcrossProcesses = %v, want %v", got, tc.shared)
			}
			dc, ok := w.(store.DurabilityChecker)
			if !ok {
				t.Fatal("wrapper is no DurabilityChecker")
			}
			if warning, err := dc.CheckDurability(ctx); warning != tc.durabilityWarning || err != nil {
				t.Errorf("CheckDurability = %q, %v; want %q", warning, err, tc.durabilityWarning)
			}
			if storewrap.Unwrap(w) != tc.st {
				t.Error("Unwrap does not give the wrapped store back")
			}
		})
	}
}

// The real backends keep theirs: SQLite notifies, feeds and is not shared.
func TestWrapSQLite(t *testing.T) {
	st, err := sqlite.Open(t.Context(), testdb.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w := storewrap.Wrap(st)
	if _, ok := w.(store.Notifier); !ok {
		t.Error("wrapped SQLite store is no Notifier")
	}
	if _, ok := w.(store.ChangeFeed); !ok {
		t.Error("wrapped SQLite store is no ChangeFeed")
	}
	if store.SharedAcrossProcesses(w) {
		t.Error("wrapped SQLite store says it is shared across processes")
	}
	// A change made through the wrapper reaches the wrapped store's feed.
	var changed []string
	stop := w.(store.ChangeFeed).WatchChanges(func(c store.Change) { changed = append(changed, c.IDs...) })
	defer stop()
	if _, err := w.CreateTenant(t.Context(), &store.CreateTenantParams{Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	res, err := w.Admit(t.Context(), &store.AdmitParams{Tenant: "acme", Items: []store.Submission{{Kind: "k"}}})
	if err != nil || res.Items[0].Err != nil {
		t.Fatal(err, res)
	}
	if id := res.Items[0].Execution.ID; !reflect.DeepEqual(changed, []string{id}) {
		t.Errorf("feed reported %v, want [%s]", changed, id)
	}
}

// Observers see each call with its params, answer, error and time, and
// the caller gets exactly what the wrapped store answered.
func TestWrapObserves(t *testing.T) {
	b := &bare{}
	var calls []storewrap.Call
	w := storewrap.Wrap(b, func(c *storewrap.Call) { calls = append(calls, *c) },
		func(c *storewrap.Call) {
			if c.Duration < 0 {
				t.Errorf("negative duration %v", c.Duration)
			}
		})
	p := &store.ClaimParams{WorkerID: "w"}
	res, err := w.Claim(t.Context(), p)
	if err != nil || len(res.Leases) != 1 || res.Deferred != 2 {
		t.Fatalf("Claim = %+v, %v", res, err)
	}
	if _, err := w.Claim(t.Context(), &store.ClaimParams{WorkerID: "fail"}); !errors.Is(err, errDown) {
		t.Fatalf("Claim's error = %v, want the wrapped store's", err)
	}
	if err := w.Ping(t.Context()); !errors.Is(err, errDown) {
		t.Fatalf("Ping = %v", err)
	}
	if b.claims != 2 || len(calls) != 3 {
		t.Fatalf("store saw %d claims, observers %d calls", b.claims, len(calls))
	}
	if c := calls[0]; c.Op != "Claim" || c.Params != p || c.Result != res || c.Err != nil {
		t.Errorf("first call observed as %+v", c)
	}
	if c := calls[1]; c.Op != "Claim" || c.Result != nil || !errors.Is(c.Err, errDown) {
		t.Errorf("failed call observed as %+v (a failed call has no result)", c)
	}
	if c := calls[2]; c.Op != "Ping" || c.Params != nil || !errors.Is(c.Err, errDown) {
		t.Errorf("Ping observed as %+v", c)
	}
}

type rider struct{ *bare }

type parked struct {
	p  *store.ClaimParams
	ch chan struct{}
}

func (r rider) RideClaim(p *store.ClaimParams, _ func() time.Time) store.Ride {
	return &parked{p: p, ch: closedCh}
}

func (r *parked) Ran() <-chan struct{} { return r.ch }

func (r *parked) Stop(context.Context) (*store.ClaimResult, error) {
	if r.p.WorkerID == "idle" {
		return nil, nil
	}
	return &store.ClaimResult{Leases: []store.Lease{{ExecutionID: "e2", Tenant: "acme"}}}, nil
}

// A wrapper of a store.ClaimRider rides as it does, and tells the
// observers of a ride that leased something as of the Claim it is; a
// wrapper of a store without the capability parks nothing.
func TestWrapRides(t *testing.T) {
	var calls []storewrap.Call
	w := storewrap.Wrap(rider{&bare{}}, func(c *storewrap.Call) { calls = append(calls, *c) })
	cr, ok := w.(store.ClaimRider)
	if !ok {
		t.Fatal("the wrapper is no ClaimRider")
	}
	p := &store.ClaimParams{WorkerID: "w"}
	r := cr.RideClaim(p, time.Now)
	<-r.Ran()
	res, err := r.Stop(t.Context())
	if err != nil || len(res.Leases) != 1 {
		t.Fatalf("Stop = %+v, %v", res, err)
	}
	if len(calls) != 1 || calls[0].Op != "Claim" || calls[0].Params != p || calls[0].Result != res {
		t.Fatalf("observed %+v, want the ride's Claim", calls)
	}
	if res, err := cr.RideClaim(&store.ClaimParams{WorkerID: "idle"}, time.Now).Stop(t.Context()); res != nil || err != nil {
		t.Fatalf("an idle ride's Stop = %+v, %v", res, err)
	}
	if len(calls) != 1 {
		t.Fatalf("a ride that leased nothing was observed: %+v", calls[1:])
	}
	if r := storewrap.Wrap(&bare{}).(store.ClaimRider).RideClaim(p, time.Now); r != nil {
		t.Fatal("a wrapper of a store without rides parked a claim")
	}
}
