package storetest

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// sized is a canonical JSON string of exactly n bytes (n >= 2).
func sized(n int) json.RawMessage {
	return json.RawMessage(`"` + strings.Repeat("x", n-2) + `"`)
}

// CheckStorage asserts that a tenant's StoredBytes is the sum of its
// executions' StoredBytes, never negative, and that each execution counts
// at least its payload and result (a skipped tick, which keeps no payload,
// counts nothing). Call it when no other goroutine is changing the
// tenant's executions. CheckInflight calls it, so nearly every test of
// the suite checks the counter after what it did. A tenant's retained
// events count in StoredBytes too (store/events.go): a test that keeps
// events checks with wantEventState instead, which adds their bytes.
func CheckStorage(t testing.TB, s store.Store, tenant string) {
	t.Helper()
	tn, err := s.GetTenant(t.Context(), &store.GetTenantParams{Name: tenant})
	if err != nil {
		t.Errorf("CheckStorage: GetTenant %s: %v", tenant, err)
		return
	}
	var sum int64
	for _, x := range listAll(t, s, store.ListParams{Tenant: tenant, Limit: 500}) {
		sum += x.StoredBytes
		least := store.StoredSize(x.Payload) + store.StoredSize(x.Result)
		if x.Status == store.StatusSkipped {
			least = 0
		}
		if x.StoredBytes < least {
			t.Errorf("storage: execution %s counts %d bytes, less than its payload and result (%d)", x.ID, x.StoredBytes, least)
		}
	}
	if tn.StoredBytes != sum {
		t.Errorf("storage: tenant %s has StoredBytes = %d but its executions count %d", tenant, tn.StoredBytes, sum)
	}
	if tn.StoredBytes < 0 {
		t.Errorf("storage: tenant %s has a negative StoredBytes %d", tenant, tn.StoredBytes)
	}
}

// budget creates acme with the storage budget max.
func (e *env) budget(max int64) {
	e.t.Helper()
	e.createTenant(store.CreateTenantParams{Name: acme, MaxStoredBytes: max})
}

// setBudget changes acme's storage budget.
func (e *env) setBudget(max int64) {
	e.t.Helper()
	tn, err := e.s.UpdateTenant(e.ctx, &store.UpdateTenantParams{Name: acme, MaxStoredBytes: &max})
	e.must(err, "UpdateTenant max_stored_bytes")
	if tn.MaxStoredBytes != max {
		e.t.Fatalf("UpdateTenant: MaxStoredBytes = %d, want %d", tn.MaxStoredBytes, max)
	}
}

// wantStored asserts acme's StoredBytes, and that it is the sum of its
// executions' (CheckStorage).
func (e *env) wantStored(want int64) {
	e.t.Helper()
	if got := e.tenant(acme).StoredBytes; got != want {
		e.t.Errorf("acme: StoredBytes = %d, want %d", got, want)
	}
	CheckStorage(e.t, e.s, acme)
}

// wantCounts asserts an execution's StoredBytes as read back.
func (e *env) wantCounts(id string, want int64) {
	e.t.Helper()
	if got := e.get(id).StoredBytes; got != want {
		e.t.Errorf("execution %s: StoredBytes = %d, want %d", id, got, want)
	}
}

// testStorage covers a tenant's storage budget (store/storage.go): what
// counts, what is refused with nothing written, what releases it, and
// that the counter is exact under many concurrent writers at the bound.
func testStorage(t *testing.T, ns NewStore) {
	t.Run("TenantBudgetSetting", func(t *testing.T) {
		e := start(t, ns)
		tn := e.tenant(acme)
		if tn.MaxStoredBytes != store.DefaultMaxStoredBytes || tn.StoredBytes != 0 {
			t.Errorf("new tenant: MaxStoredBytes %d StoredBytes %d, want %d and 0", tn.MaxStoredBytes, tn.StoredBytes, store.DefaultMaxStoredBytes)
		}
		e.setBudget(5000)
		if got := e.tenant(acme).MaxStoredBytes; got != 5000 {
			t.Errorf("after update: MaxStoredBytes %d, want 5000", got)
		}
		for _, bad := range []int64{-1, store.MaxStoredBytesLimit + 1} {
			_, err := e.s.UpdateTenant(e.ctx, &store.UpdateTenantParams{Name: acme, MaxStoredBytes: &bad})
			wantErr(t, fmt.Sprint("max_stored_bytes ", bad), err, store.ErrInvalid)
			_, err = e.s.CreateTenant(e.ctx, &store.CreateTenantParams{Name: "other", MaxStoredBytes: bad, Now: base})
			wantErr(t, fmt.Sprint("create with max_stored_bytes ", bad), err, store.ErrInvalid)
		}
		created := e.createTenant(store.CreateTenantParams{Name: globex, MaxStoredBytes: 77})
		if created.MaxStoredBytes != 77 || e.tenant(globex).MaxStoredBytes != 77 {
			t.Errorf("created with 77: %d, read back %d", created.MaxStoredBytes, e.tenant(globex).MaxStoredBytes)
		}
		if ls, err := e.s.ListTenants(e.ctx, &store.ListTenantsParams{}); err != nil || len(ls) != 2 || ls[1].MaxStoredBytes != 77 {
			t.Errorf("ListTenants: %s, %v", show(ls), err)
		}
	})

	t.Run("AdmitCountsPayloadsRefusesOverBudget", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.budget(100)
		first := e.submit(acme, at(0), store.Submission{Kind: "k", DedupKey: "d", Payload: sized(60)})
		if first.StoredBytes != 60 {
			t.Errorf("admitted execution counts %d, want 60", first.StoredBytes)
		}
		e.wantStored(60)
		wantErr(t, "admit 50 bytes with 40 left", e.admitOne(acme, at(0), store.Submission{Kind: "k", Payload: sized(50)}).Err,
			store.ErrStorageExceeded)
		// A dedup hit stores nothing, so counts nothing.
		e.dedup(acme, at(0), store.Submission{Kind: "k", DedupKey: "d", Payload: sized(60)}, first.ID)
		// A batch is decided item by item: 30 fits, 20 does not, 10 does.
		got := e.admit(acme, at(0), store.Submission{Kind: "k", Payload: sized(30)},
			store.Submission{Kind: "k", Payload: sized(20)}, store.Submission{Kind: "k", Payload: sized(10)})
		if got[0].Err != nil || got[2].Err != nil {
			t.Fatalf("batch: items that fit were refused: %v, %v", got[0].Err, got[2].Err)
		}
		wantErr(t, "batch item over the budget", got[1].Err, store.ErrStorageExceeded)
		e.wantStored(100)
		e.wantInflight(acme, 3)
		// At the budget, even {} is refused, and nothing is written.
		wantErr(t, "admit {} at the budget", e.admitOne(acme, at(0), job("k")).Err, store.ErrStorageExceeded)
		if n := len(e.list(store.ListParams{Tenant: acme})); n != 3 {
			t.Errorf("%d executions stored, want 3", n)
		}
		e.wantInflight(acme, 3)
		e.setBudget(102)
		e.submit(acme, at(0), job("k"))
		e.wantStored(102)
	})

	t.Run("WorkerWritesCountRefusedOverBudget", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.budget(1000)
		l := e.run(acme, at(0), store.Submission{Kind: "flow", Payload: sized(100)})
		if r, err := e.recordStep(l, at(time.Second), "a", string(sized(300))); err != nil || !r.Recorded {
			t.Fatalf("record a: %v %v", r, err)
		}
		e.wantStored(400)
		// The first record wins: a repeat writes nothing and counts nothing.
		if r, err := e.recordStep(l, at(time.Second), "a", string(sized(300))); err != nil || r.Recorded {
			t.Fatalf("record a again: %v %v", r, err)
		}
		_, err := e.recordStep(l, at(time.Second), "b", string(sized(700)))
		wantErr(t, "record 700 bytes with 600 left", err, store.ErrStorageExceeded)
		e.wantJournal(l.ExecutionID, [2]string{"a", string(sized(300))})
		if _, err := e.heartbeat(l, at(time.Second), leaseFor); err != nil {
			t.Fatalf("the lease is lost after a refused step: %v", err)
		}
		if _, err := e.signal(acme, l.ExecutionID, "go", string(sized(500)), "", at(time.Second)); err != nil {
			t.Fatalf("signal: %v", err)
		}
		e.wantStored(900)
		_, err = e.signal(acme, l.ExecutionID, "go", string(sized(200)), "", at(time.Second))
		wantErr(t, "signal 200 bytes with 100 left", err, store.ErrStorageExceeded)
		_, err = e.complete(l, at(2*time.Second), sized(200))
		wantErr(t, "complete with 200 bytes with 100 left", err, store.ErrStorageExceeded)
		e.wantStatus(l.ExecutionID, store.StatusRunning)
		e.wantStored(900)
		done, err := e.complete(l, at(2*time.Second), sized(100))
		e.must(err, "complete with 100 bytes")
		if done.StoredBytes != 1000 {
			t.Errorf("completed execution counts %d, want 1000", done.StoredBytes)
		}
		e.wantCounts(l.ExecutionID, 1000)
		e.wantStored(1000)

		// A failure's text counts, but is never refused: an attempt can
		// always end. The next admission is refused instead.
		e.setBudget(1020)
		f := e.run(acme, at(3*time.Second), store.Submission{Kind: "k", Payload: sized(10)})
		msg := strings.Repeat("e", 50)
		x, err := e.fail(f, at(4*time.Second), msg, false, 0)
		e.must(err, "fail over the budget")
		if x.Status != store.StatusFailed || x.StoredBytes != 60 {
			t.Errorf("failed: status %s, counts %d, want failed and 60", x.Status, x.StoredBytes)
		}
		e.wantStored(1060)
		wantErr(t, "admit over the budget after a fail", e.admitOne(acme, at(5*time.Second), job("k")).Err, store.ErrStorageExceeded)
	})

	t.Run("FlowBoundsComeBeforeTheBudget", func(t *testing.T) {
		// A signal refused both by its execution's bound of kept signals
		// and by the tenant's budget is refused for the bound, the same
		// on every backend.
		e := startEmpty(t, ns)
		e.budget(1000)
		l := e.run(acme, at(0), store.Submission{Kind: "flow", Payload: sized(100)})
		_, err := e.s.Signal(e.ctx, &store.SignalParams{Tenant: acme, ExecutionID: l.ExecutionID, Name: "go",
			Data: sized(100), MaxBuffered: 1, Now: at(time.Second)})
		e.must(err, "the first kept signal")
		_, err = e.s.Signal(e.ctx, &store.SignalParams{Tenant: acme, ExecutionID: l.ExecutionID, Name: "go",
			Data: sized(900), MaxBuffered: 1, Now: at(time.Second)})
		wantErr(t, "a signal past both the buffer's bound and the budget", err, store.ErrSignalBufferFull)
		e.wantStored(200)
	})

	t.Run("AFailureCountsTheTextKept", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.budget(1 << 20)
		l := e.run(acme, at(0), store.Submission{Kind: "k", Payload: sized(10)})
		x, err := e.fail(l, at(time.Second), strings.Repeat("e", 1<<20), false, 0)
		e.must(err, "fail with a 1 MiB message")
		if want := int64(10 + store.MaxErrorBytes); x.StoredBytes != want || len(x.Error) != store.MaxErrorBytes {
			t.Errorf("failed with a 1 MiB message: counts %d with %d bytes of error kept, want %d and %d",
				x.StoredBytes, len(x.Error), want, store.MaxErrorBytes)
		}
		e.wantStored(int64(10 + store.MaxErrorBytes))
	})

	t.Run("SignalDeliveredToAWaitCounts", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.budget(200)
		l := e.run(acme, at(0), store.Submission{Kind: "flow", Payload: sized(100)})
		if _, err := e.wait(l, at(time.Second), "approval", "approve", 0); err != nil {
			t.Fatal(err)
		}
		_, err := e.signal(acme, l.ExecutionID, "approve", string(sized(150)), "", at(2*time.Second))
		wantErr(t, "a delivered signal over the budget", err, store.ErrStorageExceeded)
		e.wantSuspended(l.ExecutionID, "approval", "approve", time.Time{})
		e.wantSignal(l.ExecutionID, "approve", string(sized(90)), at(2*time.Second), true)
		e.wantStored(190)
		// The step the signal became counts nothing more.
		e.wantJournal(l.ExecutionID, [2]string{"approval", string(sized(90))})
		e.wantCounts(l.ExecutionID, 190)
	})

	t.Run("ScheduleTicksCountSkippedTicksDoNot", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.budget(100)
		allow := sched("allow", store.OverlapAllow)
		allow.Payload = sized(60)
		e.putSchedule(allow, base)
		fired(t, "tick 1", e.fire(acme, "allow", at(minute), at(minute)), store.StatusQueued)
		e.wantStored(60)
		_, err := e.s.FireSchedule(e.ctx, &store.FireScheduleParams{Tenant: acme, Name: "allow",
			Tick: at(2 * minute), Expected: at(2 * minute), Next: at(3 * minute), Now: at(2 * minute)})
		wantErr(t, "a tick over the budget", err, store.ErrStorageExceeded)
		wantTime(t, "NextRunAt after a refused tick (still due)", e.getSchedule(acme, "allow").NextRunAt, at(2*minute))
		e.wantStored(60)

		skip := sched("skip", store.OverlapSkip)
		skip.Payload = sized(30)
		e.putSchedule(skip, base)
		fired(t, "skip tick 1", e.fire(acme, "skip", at(minute), at(minute)), store.StatusQueued)
		e.wantStored(90)
		// Skipped ticks keep no payload: recorded even with 10 bytes left.
		for i := 2; i <= 4; i++ {
			sk := fired(t, "skipped tick", e.fire(acme, "skip", at(time.Duration(i)*minute), at(time.Duration(i)*minute)), store.StatusSkipped)
			if sk.StoredBytes != 0 {
				t.Errorf("skipped tick counts %d, want 0", sk.StoredBytes)
			}
		}
		e.wantStored(90)
	})

	t.Run("ReleasedWithTheBytes", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, at(0), store.Submission{Kind: "flow", Payload: sized(200)})
		a := e.submit(acme, at(0), store.Submission{Kind: "k", Payload: sized(100)})
		if _, err := e.recordStep(l, at(time.Second), "s", string(sized(40))); err != nil {
			t.Fatal(err)
		}
		if _, err := e.signal(acme, l.ExecutionID, "x", string(sized(30)), "key", at(time.Second)); err != nil {
			t.Fatal(err)
		}
		_, err := e.complete(l, at(time.Second), sized(50))
		e.must(err, "complete")
		e.wantStored(420)
		e.must(e.del(acme, l.ExecutionID, false, at(2*time.Second)), "delete")
		e.wantStored(100)
		e.must(e.del(acme, a.ID, true, at(2*time.Second)), "force delete")
		e.wantStored(0)

		// Retention.
		p := e.run(acme, at(3*time.Second), store.Submission{Kind: "k", Payload: sized(70)})
		_, err = e.complete(p, at(3*time.Second), sized(7))
		e.must(err, "complete")
		e.wantStored(77)
		if n := e.prune(at(3*time.Second).Add(store.DefaultRetention+time.Minute), 0).Executions; n != 1 {
			t.Errorf("pruned %d executions, want 1", n)
		}
		e.wantStored(0)

		// A tenant's delete takes its count; a new tenant of that name
		// starts from nothing.
		e.submit(acme, at(4*time.Second), store.Submission{Kind: "k", Payload: sized(100)})
		e.must(e.s.DeleteTenant(e.ctx, &store.DeleteTenantParams{Name: acme, Force: true, Now: at(5 * time.Second)}), "DeleteTenant")
		e.createTenant(store.CreateTenantParams{Name: acme, Now: at(6 * time.Second)})
		e.wantStored(0)
	})

	t.Run("ExactUnderConcurrentWritersAtTheBound", func(t *testing.T) {
		storageRace(t, ns)
	})
}

// storageRace races many writers of every kind at the budget, one phase
// per kind of operation, and checks after each that the tenant's count is
// the sum of what the operations that succeeded added (each execution's,
// exactly) and that exactly as many fit as the budget allows.
func storageRace(t *testing.T, ns NewStore) {
	e := startEmpty(t, ns)
	const (
		writers = 32
		payload = 100
		fits    = 100 // executions the first budget holds
	)
	budget := int64(fits * payload)
	e.budget(budget)
	var mu sync.Mutex
	want := map[string]int64{} // execution -> the bytes it must count
	var errs []error
	note := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	// check asserts, with no writer running, that every execution counts
	// what the operations that succeeded on it added, that the tenant
	// counts their sum, within the budget, and that the sum is total when
	// total >= 0.
	check := func(phase string, total int64) {
		t.Helper()
		for _, err := range errs {
			t.Errorf("%s: %v", phase, err)
		}
		errs = nil
		var sum int64
		for id, n := range want {
			if got := e.get(id).StoredBytes; got != n {
				t.Errorf("%s: execution %s counts %d, want %d", phase, id, got, n)
			}
			sum += n
		}
		if total >= 0 && sum != total {
			t.Errorf("%s: the executions count %d, want %d", phase, sum, total)
		}
		if sum > budget {
			t.Errorf("%s: the executions count %d, over the budget %d", phase, sum, budget)
		}
		e.wantStored(sum)
		CheckInflight(t, e.s, acme)
	}
	refusedOr := func(err error, ok func()) {
		switch {
		case err == nil:
			ok()
		case !isAny(err, store.ErrStorageExceeded):
			note(err)
		}
	}

	// Admits, single and in batches of two, for twice what fits.
	together(writers, func(i int) {
		for j := range 2 * fits / writers {
			items := []store.Submission{{Kind: "k", Payload: sized(payload)}}
			if j%2 == 1 {
				items = append(items, store.Submission{Kind: "k", Payload: sized(payload)})
			}
			res, err := e.s.Admit(e.ctx, &store.AdmitParams{Tenant: acme, Items: items, Now: at(0)})
			if err != nil {
				note(err)
				return
			}
			for _, it := range res.Items {
				refusedOr(it.Err, func() {
					mu.Lock()
					want[it.Execution.ID] = payload
					mu.Unlock()
				})
			}
		}
	})
	if len(want) != fits {
		t.Errorf("admitted %d executions of %d bytes under a budget of %d, want exactly %d", len(want), payload, budget, fits)
	}
	check("admits", budget)

	// Claims, then two records of one step per lease: room for half.
	var leases []store.Lease
	together(writers, func(int) {
		for {
			res, err := e.s.Claim(e.ctx, &store.ClaimParams{WorkerID: "w", Tenant: acme, Max: 1, LeaseDuration: time.Hour, Now: at(time.Second)})
			if err != nil {
				note(err)
				return
			}
			if len(res.Leases) == 0 {
				return
			}
			mu.Lock()
			leases = append(leases, res.Leases...)
			mu.Unlock()
		}
	})
	if len(leases) != fits {
		t.Fatalf("claimed %d, want %d", len(leases), fits)
	}
	const step = 50
	budget += fits / 2 * step
	e.setBudget(budget)
	together(writers, func(i int) {
		for j := i; j < 2*fits; j += writers {
			l := leases[j/2]
			res, err := e.s.RecordStep(e.ctx, &store.RecordStepParams{ExecutionID: l.ExecutionID, Tenant: acme, Token: l.Token,
				Name: "s", Result: sized(step), Now: at(2 * time.Second)})
			refusedOr(err, func() {
				if res.Recorded {
					mu.Lock()
					want[l.ExecutionID] += step
					mu.Unlock()
				}
			})
		}
	})
	check("steps", budget)

	// Signals: room for a quarter.
	const sig = 30
	budget += fits / 4 * sig
	e.setBudget(budget)
	together(writers, func(i int) {
		for j := i; j < fits; j += writers {
			id := leases[j].ExecutionID
			_, err := e.s.Signal(e.ctx, &store.SignalParams{Tenant: acme, ExecutionID: id, Name: "n", Data: sized(sig), Now: at(3 * time.Second)})
			refusedOr(err, func() {
				mu.Lock()
				want[id] += sig
				mu.Unlock()
			})
		}
	})
	check("signals", budget)

	// Completes with a result: room for a tenth; the refused complete
	// without one.
	const result = 40
	budget += fits / 10 * result
	e.setBudget(budget)
	together(writers, func(i int) {
		for j := i; j < fits; j += writers {
			l := leases[j]
			p := &store.CompleteParams{ExecutionID: l.ExecutionID, Tenant: acme, Token: l.Token, Result: sized(result), Now: at(4 * time.Second)}
			_, err := e.s.Complete(e.ctx, p)
			refusedOr(err, func() {
				mu.Lock()
				want[l.ExecutionID] += result
				mu.Unlock()
			})
			if err != nil {
				p.Result = nil
				if _, err := e.s.Complete(e.ctx, p); err != nil {
					note(err)
				}
			}
		}
	})
	check("completes", budget)

	// Deletes of every other execution racing admits into the room they
	// make: the count follows both.
	var ids []string
	var freed int64
	for id, n := range want {
		if len(ids)%2 == 0 {
			freed += n
		}
		ids = append(ids, id)
	}
	room := freed / payload
	var admitted int64
	together(writers, func(i int) {
		for j := i; j < len(ids); j += writers {
			if j%2 == 0 {
				if err := e.s.Delete(e.ctx, &store.DeleteParams{Tenant: acme, ID: ids[j], Now: at(5 * time.Second)}); err != nil {
					note(err)
				}
				continue
			}
			it, err := e.s.Admit(e.ctx, &store.AdmitParams{Tenant: acme, Items: []store.Submission{{Kind: "k", Payload: sized(payload)}}, Now: at(5 * time.Second)})
			if err != nil {
				note(err)
				continue
			}
			refusedOr(it.Items[0].Err, func() {
				mu.Lock()
				want[it.Items[0].Execution.ID] = payload
				admitted++
				mu.Unlock()
			})
		}
	})
	for j := 0; j < len(ids); j += 2 {
		delete(want, ids[j])
	}
	if admitted > room {
		t.Errorf("admitted %d while deleting made room for %d", admitted, room)
	}
	check("deletes and admits", -1)

	// Retention takes every terminal one; the rest stay counted.
	e.prune(at(5*time.Second).Add(store.DefaultRetention+time.Minute), 0)
	var left int64
	for id, n := range want {
		if x, err := e.s.Get(e.ctx, &store.GetParams{ID: id}); err == nil && !x.Status.Terminal() {
			left += n
			continue
		}
		delete(want, id)
	}
	check("prune", left)
}
