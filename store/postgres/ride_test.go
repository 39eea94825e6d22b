package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/postgres"
)

// rideStore is a fresh store with tenant acme, for the ride tests.
func rideStore(t *testing.T, pool int32) (*postgres.Store, string) {
	t.Helper()
	acquireSlot(t)
	schema, _ := newSchema(t)
	s := openSchema(t, databaseURL(t), schema, pool)
	t.Cleanup(func() { s.Close() })
	if _, err := s.CreateTenant(t.Context(), &store.CreateTenantParams{Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	return s, schema
}

func rideAdmit(t *testing.T, s store.Store, sub store.Submission) string {
	t.Helper()
	r, err := s.Admit(t.Context(), &store.AdmitParams{Tenant: "acme", Items: []store.Submission{sub}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Items[0].Err != nil {
		t.Fatal(r.Items[0].Err)
	}
	return r.Items[0].Execution.ID
}

func rideParams(worker string, max int) *store.ClaimParams {
	return &store.ClaimParams{WorkerID: worker, Kinds: []string{"ride"}, Max: max, LeaseDuration: time.Minute}
}

func ran(t *testing.T, r store.Ride) {
	t.Helper()
	select {
	case <-r.Ran():
	case <-time.After(10 * time.Second):
		t.Fatal("the parked claim did not run within 10s of a submit")
	}
}

// A parked claim runs in the transaction of the next submission: the
// execution is running under the ride's lease once the submit returns,
// and the two cost one commit, one WAL flush.
func TestRideLeasesInTheSubmitsCommit(t *testing.T) {
	t.Parallel()
	s, schema := rideStore(t, 4)
	ctx := t.Context()
	rideAdmit(t, s, store.Submission{Kind: "ride"}) // prepares the statements outside the count
	if _, err := s.Claim(ctx, rideParams("w", 10)); err != nil {
		t.Fatal(err)
	}

	r := s.RideClaim(rideParams("w", 10), time.Now)
	count := startWALCount(t, admin.pool, schema)
	id := rideAdmit(t, s, store.Submission{Kind: "ride"})
	c := count.stop(t)
	if c.Flushes != 1 {
		t.Errorf("a submit carrying a claim asked for %d WAL flushes, want 1: %v", c.Flushes, c)
	}
	e, err := s.Get(ctx, &store.GetParams{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	if e.Status != store.StatusRunning || e.WorkerID != "w" {
		t.Fatalf("after the submit: status %s, worker %q; want running by w", e.Status, e.WorkerID)
	}
	ran(t, r)
	res, err := r.Stop(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res == nil || len(res.Leases) != 1 || res.Leases[0].ExecutionID != id || res.Leases[0].Attempt != 1 {
		t.Fatalf("the ride leased %+v, want the execution %s, attempt 1", res, id)
	}
	if _, err := s.Complete(ctx, &store.CompleteParams{ExecutionID: id, Tenant: "acme", Token: res.Leases[0].Token}); err != nil {
		t.Fatalf("completing the ride's lease: %v", err)
	}
}

// A claim withdrawn before any submission leases nothing later.
func TestRideWithdrawn(t *testing.T) {
	t.Parallel()
	s, _ := rideStore(t, 4)
	ctx := t.Context()
	r := s.RideClaim(rideParams("w", 10), time.Now)
	res, err := r.Stop(ctx)
	if res != nil || err != nil {
		t.Fatalf("Stop of a claim that never ran: %+v, %v", res, err)
	}
	id := rideAdmit(t, s, store.Submission{Kind: "ride"})
	e, err := s.Get(ctx, &store.GetParams{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	if e.Status != store.StatusQueued {
		t.Fatalf("status %s after a withdrawn ride, want queued", e.Status)
	}
	select {
	case <-r.Ran():
		t.Fatal("a withdrawn ride ran")
	default:
	}
}

// A candidate with a concurrency key is decided by an ordinary Claim (under
// the key's lock): the ride leases nothing and leaves it queued.
func TestRideLeavesLimitsToClaim(t *testing.T) {
	t.Parallel()
	s, _ := rideStore(t, 4)
	ctx := t.Context()
	r := s.RideClaim(rideParams("w", 10), time.Now)
	id := rideAdmit(t, s, store.Submission{Kind: "ride", ConcurrencyKey: "k", ConcurrencyLimit: 1})
	ran(t, r)
	if res, err := r.Stop(ctx); res != nil || err != nil {
		t.Fatalf("the ride answered %+v, %v; want nothing", res, err)
	}
	got, err := s.Claim(ctx, rideParams("w", 10))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Leases) != 1 || got.Leases[0].ExecutionID != id {
		t.Fatalf("Claim after the ride got %+v, want %s", got.Leases, id)
	}
}

// Workers parking claims and claiming, while clients submit: every
// execution is leased exactly once, by a ride or by a claim, and each lease
// holds (it completes).
func TestRideConcurrent(t *testing.T) {
	t.Parallel()
	s, _ := rideStore(t, 12)
	ctx := t.Context()
	const submitters, perSubmitter, workers = 4, 60, 6
	n := submitters * perSubmitter
	var mu sync.Mutex
	leased := map[string]int{}
	rode := 0
	done := make(chan struct{})
	take := func(res *store.ClaimResult, ride bool) {
		if res == nil {
			return
		}
		for _, l := range res.Leases {
			if _, err := s.Complete(context.WithoutCancel(ctx), &store.CompleteParams{
				ExecutionID: l.ExecutionID, Tenant: l.Tenant, Token: l.Token}); err != nil {
				t.Errorf("complete %s: %v", l.ExecutionID, err)
			}
			mu.Lock()
			leased[l.ExecutionID]++
			if ride {
				rode++
			}
			if len(leased) == n {
				select {
				case <-done:
				default:
					close(done)
				}
			}
			mu.Unlock()
		}
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			p := func() *store.ClaimParams { return rideParams(fmt.Sprint("w", w), 3) }
			for {
				select {
				case <-done:
					return
				case <-ctx.Done():
					return
				default:
				}
				res, err := s.Claim(ctx, p())
				if err != nil {
					t.Error(err)
					return
				}
				take(res, false)
				r := s.RideClaim(p(), time.Now)
				select {
				case <-r.Ran():
				case <-time.After(time.Duration(w+1) * time.Millisecond):
				case <-done:
				}
				res, err = r.Stop(context.WithoutCancel(ctx))
				if err != nil {
					t.Error(err)
					return
				}
				take(res, true)
			}
		})
	}
	for i := range submitters {
		wg.Go(func() {
			for j := range perSubmitter {
				r, err := s.Admit(ctx, &store.AdmitParams{Tenant: "acme", Items: []store.Submission{{
					Kind: "ride", DedupKey: fmt.Sprintf("%d-%d", i, j)}}})
				if err == nil {
					err = r.Items[0].Err
				}
				if err != nil {
					t.Errorf("submit: %v", err)
					return
				}
			}
		})
	}
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Error("not every execution was leased within 2 minutes")
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for id, k := range leased {
		if k != 1 {
			t.Errorf("%s leased %d times", id, k)
		}
	}
	if len(leased) != n {
		t.Errorf("%d of %d executions leased", len(leased), n)
	}
	if rode == 0 {
		t.Error("no execution was leased by a parked claim")
	}
	t.Logf("%d of %d leased by parked claims", rode, n)
}

// A submission the parked claim could not lease (another kind) leaves it
// parked: it rides with the next one it can.
func TestRideWaitsForItsKind(t *testing.T) {
	t.Parallel()
	s, _ := rideStore(t, 4)
	ctx := t.Context()
	r := s.RideClaim(rideParams("w", 10), time.Now)
	rideAdmit(t, s, store.Submission{Kind: "other"})
	select {
	case <-r.Ran():
		t.Fatal("the parked claim ran with a submission of another kind")
	default:
	}
	id := rideAdmit(t, s, store.Submission{Kind: "ride"})
	ran(t, r)
	res, err := r.Stop(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res == nil || len(res.Leases) != 1 || res.Leases[0].ExecutionID != id {
		t.Fatalf("the ride leased %+v, want %s", res, id)
	}
}
