package storetest

import (
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// testTenantDelete covers DeleteTenant: all of a tenant goes, in one step,
// and nothing of it lingers for a tenant created again under its name.
func testTenantDelete(t *testing.T, ns NewStore) {
	t.Run("DeleteUnknownIsNotFound", func(t *testing.T) {
		e := startEmpty(t, ns)
		err := e.s.DeleteTenant(e.ctx, &store.DeleteTenantParams{Name: acme, Now: base})
		wantErr(t, "DeleteTenant of an unknown tenant", err, store.ErrNotFound)
	})

	t.Run("DeleteRefusedWhileInFlight", func(t *testing.T) {
		for _, st := range []store.Status{store.StatusQueued, store.StatusScheduled, store.StatusRunning} {
			t.Run(string(st), func(t *testing.T) {
				e := start(t, ns)
				sub := job("echo")
				if st == store.StatusScheduled {
					sub.RunAt = at(time.Hour)
				}
				x := e.submit(acme, base, sub)
				if st == store.StatusRunning {
					e.claimOne(acme, base)
				}
				err := e.s.DeleteTenant(e.ctx, &store.DeleteTenantParams{Name: acme, Now: at(time.Second)})
				wantErr(t, "DeleteTenant with an execution "+string(st), err, store.ErrNotTerminal)
				e.wantStatus(x.ID, st)
				e.wantInflight(acme, 1)
				_, err = e.s.LookupAPIKey(e.ctx, &store.LookupAPIKeyParams{KeyHash: "hash-acme"})
				e.must(err, "LookupAPIKey after the refused delete")
			})
		}
	})

	t.Run("DeleteRemovesEverything", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		e.must(e.s.AddAPIKey(e.ctx, &store.AddAPIKeyParams{Tenant: acme, KeyHash: "hash-acme-2", Now: base}), "AddAPIKey")
		e.putSchedule(sched("s", store.OverlapAllow), base)
		e.putRateLimit(acme, "k", 1, time.Second, 1, base)
		ok := e.run(acme, base, keyed("echo", "dk", `{}`))
		_, err := e.complete(ok, at(time.Second), mustJSON(`{}`))
		e.must(err, "Complete")
		failed := e.run(acme, at(time.Second), keyed("echo", "dk2", `{}`))
		_, err = e.fail(failed, at(2*time.Second), "boom", false, 0)
		e.must(err, "Fail")
		g := e.submit(globex, base, keyed("echo", "dk", `{}`))

		e.must(e.s.DeleteTenant(e.ctx, &store.DeleteTenantParams{Name: acme, Now: at(3 * time.Second)}), "DeleteTenant")
		e.wantTenantGone(acme, ok.ExecutionID, failed.ExecutionID)
		e.wantStatus(g.ID, store.StatusQueued)
		e.wantInflight(globex, 1)
		if _, err := e.s.LookupAPIKey(e.ctx, &store.LookupAPIKeyParams{KeyHash: "hash-globex"}); err != nil {
			t.Errorf("globex's key after acme's delete: %v", err)
		}
		e.wantFreshTenant(at(4 * time.Second))
	})

	t.Run("ForceDeleteEndsWorkInFlight", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		ck := func(kind string) store.Submission {
			s := keyed(kind, "dk-"+kind, `{}`)
			s.ConcurrencyKey, s.ConcurrencyLimit = "ck", 1
			return s
		}
		running := e.run(acme, base, ck("run"))
		queued := e.submit(acme, base, ck("queued")) // blocked behind the running one
		e.claimNone(acme, base)
		later := job("later")
		later.RunAt = at(time.Hour)
		scheduled := e.submit(acme, base, later)
		e.putSchedule(sched("s", store.OverlapSkip), base)
		tick := fired(t, "tick", e.fire(acme, "s", at(minute), at(minute)), store.StatusQueued)
		g := e.submit(globex, base, ck("globex")) // the same key, another tenant

		err := e.s.DeleteTenant(e.ctx, &store.DeleteTenantParams{Name: acme, Now: at(2 * minute)})
		wantErr(t, "DeleteTenant without force", err, store.ErrNotTerminal)
		e.must(e.s.DeleteTenant(e.ctx, &store.DeleteTenantParams{Name: acme, Force: true, Now: at(2 * minute)}), "DeleteTenant force")
		e.wantTenantGone(acme, running.ExecutionID, queued.ID, scheduled.ID, tick.ID)
		_, err = e.heartbeat(running, at(2*minute), leaseFor)
		wantErr(t, "Heartbeat of the deleted tenant's lease", err, store.ErrLeaseLost)
		_, err = e.complete(running, at(2*minute), nil)
		wantErr(t, "Complete of the deleted tenant's lease", err, store.ErrLeaseLost)
		e.rescue(at(time.Hour), 0)
		e.promote(at(2*time.Hour), 0)

		// globex's execution with the same key name is untouched.
		l := e.claimOne(globex, at(2*minute))
		if l.ExecutionID != g.ID {
			t.Errorf("claimed %s, want globex's %s", l.ExecutionID, g.ID)
		}
		e.wantInflight(globex, 1)
		e.wantFreshTenant(at(3 * time.Hour))
	})

	// DeleteRacesWork: submits, claims and completes of the tenant race
	// its forced delete. Whatever order they land in, nothing of the
	// tenant is left: no execution admitted after the delete began, no
	// count (Redis checks its indexes when the test ends).
	t.Run("DeleteRacesWork", func(t *testing.T) {
		e := start(t, ns)
		const workers = 6
		var deleted error
		together(workers+1, func(i int) {
			now := at(time.Second)
			if i == workers {
				deleted = e.s.DeleteTenant(e.ctx, &store.DeleteTenantParams{Name: acme, Force: true, Now: now})
				return
			}
			for j := range 20 {
				sub := job("echo")
				if j%3 == 0 {
					sub.DedupKey = "k" + string(rune('a'+i))
				}
				sub.ConcurrencyKey, sub.ConcurrencyLimit = "ck", 2
				if _, err := e.s.Admit(e.ctx, &store.AdmitParams{Tenant: acme, Items: []store.Submission{sub}, Now: now}); err != nil {
					continue // not found once deleted
				}
				res, err := e.s.Claim(e.ctx, &store.ClaimParams{WorkerID: "w", Tenant: acme, Max: 1, LeaseDuration: leaseFor, Now: now})
				if err == nil && len(res.Leases) == 1 && j%2 == 0 {
					l := res.Leases[0]
					_, _ = e.s.Complete(e.ctx, &store.CompleteParams{ExecutionID: l.ExecutionID, Tenant: acme, Token: l.Token, Now: now})
				}
			}
		})
		e.must(deleted, "DeleteTenant force")
		_, err := e.s.GetTenant(e.ctx, &store.GetTenantParams{Name: acme})
		wantErr(t, "GetTenant after the delete", err, store.ErrNotFound)
		if xs := e.list(store.ListParams{Tenant: acme}); len(xs) != 0 {
			t.Errorf("%d executions of the deleted tenant survive its delete (admitted during it?)", len(xs))
		}
		e.wantFreshTenant(at(time.Hour))
	})
}

// wantTenantGone asserts that tenant acme and all it had are gone.
func (e *env) wantTenantGone(tenant string, ids ...string) {
	e.t.Helper()
	_, err := e.s.GetTenant(e.ctx, &store.GetTenantParams{Name: tenant})
	wantErr(e.t, "GetTenant after DeleteTenant", err, store.ErrNotFound)
	for _, h := range []string{"hash-" + tenant, "hash-" + tenant + "-2"} {
		_, err := e.s.LookupAPIKey(e.ctx, &store.LookupAPIKeyParams{KeyHash: h})
		wantErr(e.t, "LookupAPIKey "+h+" after DeleteTenant", err, store.ErrNotFound)
	}
	_, err = e.s.ListAPIKeys(e.ctx, &store.ListAPIKeysParams{Tenant: tenant})
	wantErr(e.t, "ListAPIKeys after DeleteTenant", err, store.ErrNotFound)
	for _, id := range ids {
		e.gone(id)
	}
	if xs := e.list(store.ListParams{Tenant: tenant}); len(xs) != 0 {
		e.t.Errorf("%d executions of the deleted tenant listed", len(xs))
	}
	_, err = e.s.GetSchedule(e.ctx, &store.GetScheduleParams{Tenant: tenant, Name: "s"})
	wantErr(e.t, "GetSchedule after DeleteTenant", err, store.ErrNotFound)
	for _, s := range e.dueSchedules(at(100 * time.Hour)) {
		if s.Tenant == tenant {
			e.t.Errorf("schedule %s of the deleted tenant is still due", s.Name)
		}
	}
	_, err = e.s.GetRateLimit(e.ctx, &store.GetRateLimitParams{Tenant: tenant, Key: "k"})
	wantErr(e.t, "GetRateLimit after DeleteTenant", err, store.ErrNotFound)
	e.claimNone(tenant, at(100*time.Hour))
}

// wantFreshTenant creates acme again after its delete and checks that it
// starts from nothing: no quota in use, no dedup key, no concurrency-key
// count, no bucket.
func (e *env) wantFreshTenant(now time.Time) {
	e.t.Helper()
	tn, err := e.s.CreateTenant(e.ctx, &store.CreateTenantParams{Name: acme, MaxInflight: 1, KeyHash: "hash-acme-new", Now: now})
	e.must(err, "CreateTenant again")
	if tn.Inflight != 0 {
		e.t.Errorf("the new tenant has Inflight %d", tn.Inflight)
	}
	e.wantInflight(acme, 0)
	if ks := e.keys(acme); len(ks) != 1 {
		e.t.Errorf("the new tenant has %d keys, want 1", len(ks))
	}
	s := keyed("run", "dk-run", `{}`)
	s.ConcurrencyKey, s.ConcurrencyLimit = "ck", 1
	s.RateKey = "k"
	it := e.admitOne(acme, now, s)
	e.must(it.Err, "Admit to the new tenant")
	if it.Deduplicated {
		e.t.Error("a dedup key of the deleted tenant still maps to an execution")
	}
	l := e.claimOne(acme, now)
	if l.ExecutionID != it.Execution.ID {
		e.t.Errorf("claimed %s, want %s", l.ExecutionID, it.Execution.ID)
	}
	e.wantInflight(acme, 1)
	if ss := e.dueSchedules(now.Add(100 * time.Hour)); len(ss) != 0 && ss[0].Tenant == acme {
		e.t.Errorf("the new tenant has schedule %s", ss[0].Name)
	}
}
