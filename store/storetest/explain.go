package storetest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// explain calls Explain for tenant ("" = any) at now and checks the
// answer's shape: the execution's id and status, a non-nil Gates.
func (e *env) explain(tenant, id string, now time.Time) *store.Explanation {
	e.t.Helper()
	x, err := e.s.Explain(e.ctx, &store.ExplainParams{Tenant: tenant, ID: id, Now: now})
	e.must(err, "Explain "+id)
	if x == nil || x.Gates == nil {
		e.t.Fatalf("Explain %s: %s, want an explanation with a non-nil Gates", id, show(x))
	}
	if x.ExecutionID != id {
		e.t.Errorf("Explain %s: ExecutionID %q", id, x.ExecutionID)
	}
	return x
}

// gateKinds lists the kinds of x's gates, in order.
func gateKinds(x *store.Explanation) []store.GateKind {
	var out []store.GateKind
	for _, g := range x.Gates {
		out = append(out, g.Gate)
	}
	return out
}

// wantGates asserts that x holds exactly the gates of the given kinds (in
// any order), each with a detail sentence, and returns them by kind.
func wantGates(t testing.TB, what string, x *store.Explanation, kinds ...store.GateKind) map[store.GateKind]store.Gate {
	t.Helper()
	got := slices.Sorted(slices.Values(gateKinds(x)))
	want := slices.Sorted(slices.Values(kinds))
	if !slices.Equal(got, want) {
		t.Errorf("%s: gates %v, want %v (%s)", what, got, want, show(x.Gates))
	}
	by := map[store.GateKind]store.Gate{}
	for _, g := range x.Gates {
		if g.Detail == "" {
			t.Errorf("%s: gate %s without a detail", what, g.Gate)
		}
		by[g.Gate] = g
	}
	return by
}

// liveWorker reports, at now, a worker of tenant ("" = every tenant)
// claiming queues and kinds (nil = every one).
func (e *env) liveWorker(id, tenant string, queues, kinds []string, now time.Time) {
	e.t.Helper()
	e.report(store.ServerReport{ID: "server-" + id, Host: "h", Version: "v", StartedAt: base, Now: now,
		Workers: []store.WorkerSeen{{ID: id, Tenant: tenant, LastSeenAt: now, Queues: queues, Kinds: kinds}}})
}

// testExplain covers Store.Explain: each gate held in turn and answered
// with its figures, by the rules Claim applies (a held gate's execution
// is not claimed; once the gate opens, it is), and an Explain that
// changes nothing.
func testExplain(t *testing.T, ns NewStore) {
	t.Run("NotFoundAndOtherTenant", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		x := e.submit(acme, base, job("echo"))
		_, err := e.s.Explain(e.ctx, &store.ExplainParams{ID: "00000000-0000-7000-8000-000000000000", Now: base})
		wantErr(t, "Explain of a missing execution", err, store.ErrNotFound)
		_, err = e.s.Explain(e.ctx, &store.ExplainParams{Tenant: globex, ID: x.ID, Now: base})
		wantErr(t, "Explain of another tenant's execution", err, store.ErrNotFound)
		e.explain(acme, x.ID, base)
		e.explain("", x.ID, base)
	})

	t.Run("NothingHolds", func(t *testing.T) {
		e := start(t, ns)
		e.liveWorker("w1", "", nil, nil, base)
		x := e.submit(acme, base, job("echo"))
		got := e.explain(acme, x.ID, base)
		if got.Status != store.StatusQueued {
			t.Errorf("Status %q, want queued", got.Status)
		}
		wantGates(t, "a queued execution a live worker claims", got)
	})

	t.Run("RunningAndTerminalAnswerNoGate", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("echo"))
		got := e.explain(acme, l.ExecutionID, at(time.Second))
		if got.Status != store.StatusRunning {
			t.Errorf("Status %q, want running", got.Status)
		}
		wantGates(t, "running", got)
		_, err := e.complete(l, at(time.Second), nil)
		e.must(err, "Complete")
		got = e.explain(acme, l.ExecutionID, at(2*time.Second))
		if got.Status != store.StatusSucceeded {
			t.Errorf("Status %q, want succeeded", got.Status)
		}
		wantGates(t, "succeeded", got)
	})

	t.Run("NoWorker", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		sub := job("resize-image")
		sub.Queue = "media"
		x := e.submit(acme, base, sub)
		g := wantGates(t, "no worker at all", e.explain(acme, x.ID, base), store.GateNoWorker)[store.GateNoWorker]
		if g.Queue != "media" || g.Kind != "resize-image" {
			t.Errorf("no_worker: queue %q kind %q, want media resize-image", g.Queue, g.Kind)
		}
		// Workers that do not claim it: other kinds, other queues,
		// another tenant's, one seen too long ago.
		e.liveWorker("w-kind", "", nil, []string{"echo"}, base)
		e.liveWorker("w-queue", "", []string{"default"}, nil, base)
		e.liveWorker("w-globex", globex, nil, nil, base)
		e.liveWorker("w-old", acme, nil, nil, at(-store.WorkerAlive-time.Second))
		wantGates(t, "no worker that claims it", e.explain(acme, x.ID, base), store.GateNoWorker)
		// The tenant's own worker claiming its queue and kind.
		e.liveWorker("w-acme", acme, []string{"default", "media"}, []string{"echo", "resize-image"}, at(time.Second))
		wantGates(t, "a live worker of the tenant claims it", e.explain(acme, x.ID, at(2*time.Second)))
		// It is live for WorkerAlive, then gone.
		wantGates(t, "the worker no longer seen", e.explain(acme, x.ID, at(store.WorkerAlive+2*time.Second)),
			store.GateNoWorker)
	})

	t.Run("PresenceKeepsClaimFilters", func(t *testing.T) {
		e := start(t, ns)
		e.liveWorker("w1", acme, []string{"a", "b"}, []string{"k"}, base)
		p := e.presence(acme, base)
		if len(p.Workers) != 1 || !slices.Equal(p.Workers[0].Queues, []string{"a", "b"}) ||
			!slices.Equal(p.Workers[0].Kinds, []string{"k"}) {
			t.Errorf("Presence: %s, want w1 claiming queues [a b] kinds [k]", showItems(p.Workers))
		}
		// A later report of the worker without filters: it claims every
		// queue and kind now.
		e.liveWorker("w1", acme, nil, nil, at(time.Second))
		p = e.presence(acme, base)
		if len(p.Workers) != 1 || len(p.Workers[0].Queues) != 0 || len(p.Workers[0].Kinds) != 0 {
			t.Errorf("Presence after a report without filters: %s, want w1 with none", showItems(p.Workers))
		}
	})

	// An HTTP worker is named in presence by its tenant and its id
	// together: two tenants' workers of one id, reported by one server,
	// are two workers, each with its own filters, and only the tenant's
	// own counts for its work (store.WorkerSeen).
	t.Run("WorkerIDPerTenant", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		sub := job("resize-image")
		sub.Queue = "media"
		x := e.submit(acme, base, sub)
		e.report(store.ServerReport{ID: "api-1", Host: "h", Version: "v", StartedAt: base, Now: base,
			Workers: []store.WorkerSeen{
				{ID: "w-1", Tenant: globex, LastSeenAt: base, Queues: []string{"media"}, Kinds: []string{"resize-image"}},
				{ID: "w-1", Tenant: acme, LastSeenAt: base, Kinds: []string{"echo"}},
			}})
		wantGates(t, "another tenant's worker of the same id claims it", e.explain(acme, x.ID, base), store.GateNoWorker)
		for _, c := range []struct{ tenant, kind string }{{acme, "echo"}, {globex, "resize-image"}} {
			p := e.presence(c.tenant, base)
			if len(p.Workers) != 1 || p.Workers[0].ID != "w-1" || p.Workers[0].Tenant != c.tenant ||
				!slices.Equal(p.Workers[0].Kinds, []string{c.kind}) || p.Servers != nil {
				t.Errorf("Presence of %s: %s, want its own w-1 claiming [%s] and no servers",
					c.tenant, showItems(p.Workers), c.kind)
			}
		}
		if p := e.presence("", base); len(p.Workers) != 2 {
			t.Errorf("Presence of every tenant: %s, want both w-1", showItems(p.Workers))
		}
		// acme's w-1 claims it now: it is acme's worker that counts.
		e.report(store.ServerReport{ID: "api-1", Host: "h", Version: "v", StartedAt: base, Now: at(time.Second),
			Workers: []store.WorkerSeen{{ID: "w-1", Tenant: acme, LastSeenAt: at(time.Second), Queues: []string{"media"},
				Kinds: []string{"resize-image"}}}})
		wantGates(t, "its tenant's worker claims it", e.explain(acme, x.ID, at(2*time.Second)))
	})

	t.Run("RunAt", func(t *testing.T) {
		e := start(t, ns)
		e.liveWorker("w1", "", nil, nil, base)
		sub := job("echo")
		sub.RunAt = at(time.Hour)
		x := e.submit(acme, base, sub)
		g := wantGates(t, "scheduled", e.explain(acme, x.ID, base), store.GateRunAt)[store.GateRunAt]
		wantTime(t, "run_at", g.RunAt, at(time.Hour))
		e.claimNone(acme, base)
		e.liveWorker("w1", "", nil, nil, at(time.Hour))
		wantGates(t, "scheduled and due", e.explain(acme, x.ID, at(time.Hour)))
		if l := e.claimOne(acme, at(time.Hour)); l.ExecutionID != x.ID {
			t.Errorf("claimed %s, want %s", l.ExecutionID, x.ID)
		}
	})

	t.Run("ConcurrencyKey", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		e.liveWorker("w1", "", nil, nil, base)
		sub := job("echo")
		sub.ConcurrencyKey, sub.ConcurrencyLimit = "account-7", 2
		l1 := e.run(acme, base, sub)
		l2 := e.run(acme, base, sub)
		e.run(globex, base, sub) // another tenant's key of the same name counts for nothing
		x := e.submit(acme, at(time.Second), sub)
		g := wantGates(t, "key at its limit", e.explain(acme, x.ID, at(time.Second)),
			store.GateConcurrencyKey)[store.GateConcurrencyKey]
		holders := slices.Sorted(slices.Values([]string{l1.ExecutionID, l2.ExecutionID}))
		if g.Key != "account-7" || g.Limit != 2 || g.Running != 2 || !slices.Equal(g.Holders, holders) {
			t.Errorf("concurrency_key: %s, want account-7 limit 2 running 2 holders %v", show(g), holders)
		}
		e.claimNone(acme, at(time.Second))
		_, err := e.complete(l1, at(2*time.Second), nil)
		e.must(err, "Complete")
		wantGates(t, "key with room", e.explain(acme, x.ID, at(2*time.Second)))
		if l := e.claimOne(acme, at(2*time.Second)); l.ExecutionID != x.ID {
			t.Errorf("claimed %s, want %s", l.ExecutionID, x.ID)
		}
	})

	t.Run("RateLimit", func(t *testing.T) {
		e := start(t, ns)
		e.liveWorker("w1", "", nil, nil, base)
		e.putRateLimit(acme, "api", 1, time.Minute, 1, base)
		e.run(acme, base, rated("api"))
		x := e.submit(acme, at(time.Second), rated("api"))
		g := wantGates(t, "bucket empty", e.explain(acme, x.ID, at(time.Second)),
			store.GateRateLimit)[store.GateRateLimit]
		if g.Key != "api" {
			t.Errorf("rate_limit: key %q, want api", g.Key)
		}
		wantTime(t, "next_token_at", g.NextTokenAt, at(time.Minute))
		// The claim defers it to that very time: then run_at holds it too.
		res := e.claimRes(acme, 1, at(time.Second))
		if len(res.Leases) != 0 || res.Deferred != 1 {
			t.Fatalf("claim: %d leases, %d deferred, want it deferred", len(res.Leases), res.Deferred)
		}
		g = wantGates(t, "deferred", e.explain(acme, x.ID, at(2*time.Second)),
			store.GateRunAt, store.GateRateLimit)[store.GateRunAt]
		wantTime(t, "run_at of the deferred", g.RunAt, at(time.Minute))
		e.liveWorker("w1", "", nil, nil, at(time.Minute))
		wantGates(t, "a token free", e.explain(acme, x.ID, at(time.Minute)))
		if l := e.claimOne(acme, at(time.Minute)); l.ExecutionID != x.ID {
			t.Errorf("claimed %s, want %s", l.ExecutionID, x.ID)
		}
	})

	t.Run("Waiting", func(t *testing.T) {
		e := start(t, ns)
		e.liveWorker("w1", "", nil, nil, base)
		l := e.run(acme, base, job("flow"))
		_, err := e.wait(l, at(time.Second), "approval", "approved", time.Hour)
		e.must(err, "Suspend (wait)")
		g := wantGates(t, "waiting for a signal", e.explain(acme, l.ExecutionID, at(2*time.Second)),
			store.GateWaiting)[store.GateWaiting]
		if g.WaitingFor != "approved" {
			t.Errorf("waiting_for %q, want approved", g.WaitingFor)
		}
		wantTimePtr(t, "wake_at", g.WakeAt, at(time.Second+time.Hour))

		l2 := e.run(acme, at(3*time.Second), job("flow"))
		_, err = e.sleep(l2, at(3*time.Second), "nap", at(time.Minute))
		e.must(err, "Suspend (sleep)")
		g = wantGates(t, "sleeping", e.explain(acme, l2.ExecutionID, at(4*time.Second)),
			store.GateWaiting)[store.GateWaiting]
		if g.WaitingFor != "" {
			t.Errorf("a sleep: waiting_for %q, want none", g.WaitingFor)
		}
		wantTimePtr(t, "a sleep's wake_at", g.WakeAt, at(time.Minute))
	})

	t.Run("FairTurn", func(t *testing.T) {
		e := start(t, ns)
		for _, name := range []string{globex, "initech", "umbrella"} {
			e.createTenant(store.CreateTenantParams{Name: name})
		}
		e.liveWorker("w1", "", nil, nil, base)
		xa := e.admit(acme, base, job("echo"), job("echo"))
		xg := e.admit(globex, base, job("echo"), job("echo"))
		// initech has work, but none ready; umbrella's tenant is disabled.
		later := job("echo")
		later.RunAt = at(time.Hour)
		e.submit("initech", base, later)
		e.submit("umbrella", base, job("echo"))
		e.disable("umbrella", true)
		// Every turn 0: acme comes first (name order); a claim of one
		// serves acme and moves its turn past every other's.
		if l := e.claim(store.ClaimParams{Now: base}); len(l) != 1 || l[0].ExecutionID != xa[0].Execution.ID {
			t.Fatalf("first claim: %s, want acme's first", show(l))
		}
		g := wantGates(t, "acme after its turn", e.explain(acme, xa[1].Execution.ID, base),
			store.GateFairTurn)[store.GateFairTurn]
		if g.TenantsAhead != 1 {
			t.Errorf("tenants_ahead %d, want 1 (globex)", g.TenantsAhead)
		}
		wantGates(t, "globex, first in turn", e.explain(globex, xg[0].Execution.ID, base))
		// The claim serves globex next, as explained.
		if l := e.claim(store.ClaimParams{Now: base}); len(l) != 1 || l[0].ExecutionID != xg[0].Execution.ID {
			t.Fatalf("second claim: %s, want globex's first", show(l))
		}
		wantGates(t, "acme, first again", e.explain(acme, xa[1].Execution.ID, base))
	})

	t.Run("TenantDisabled", func(t *testing.T) {
		e := start(t, ns)
		e.liveWorker("w1", "", nil, nil, base)
		x := e.submit(acme, base, job("echo"))
		e.disable(acme, true)
		wantGates(t, "tenant disabled", e.explain(acme, x.ID, base), store.GateTenantDisabled)
		e.claimNone("", base)
		e.disable(acme, false)
		wantGates(t, "tenant enabled again", e.explain(acme, x.ID, base))
	})

	t.Run("ChangesNothing", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		e.putRateLimit(acme, "api", 1, time.Minute, 1, base)
		e.run(acme, base, rated("api"))
		sub := rated("api")
		sub.ConcurrencyKey = "k"
		e.run(globex, base, job("echo"))
		held := e.submit(acme, at(time.Second), sub)
		other := e.submit(globex, at(time.Second), job("echo"))
		beforeX, beforeO := e.get(held.ID), e.get(other.ID)
		beforeT, beforeRL := e.tenant(acme), e.getRateLimit(acme, "api")
		for i := range 3 {
			e.explain(acme, held.ID, at(time.Duration(i+1)*time.Second))
			e.explain("", other.ID, at(time.Duration(i+1)*time.Second))
		}
		sameExecution(t, "the explained execution", e.get(held.ID), beforeX)
		sameExecution(t, "the other tenant's", e.get(other.ID), beforeO)
		if got := e.tenant(acme); got.Inflight != beforeT.Inflight || got.Disabled != beforeT.Disabled {
			t.Errorf("tenant after Explain: %s, want %s", show(got), show(beforeT))
		}
		wantTime(t, "the bucket's TAT", e.getRateLimit(acme, "api").TAT, beforeRL.TAT)
		// Turns unmoved: globex (served after acme) still comes after it.
		if l := e.claim(store.ClaimParams{Now: at(time.Minute), Max: 1}); len(l) != 1 || l[0].Tenant != acme {
			t.Errorf("claim after Explain: %s, want acme's first", show(l))
		}
		e.wantInflight(acme, 2)
	})
}

// disable sets tenant's Disabled flag.
func (e *env) disable(tenant string, disabled bool) {
	e.t.Helper()
	_, err := e.s.UpdateTenant(e.ctx, &store.UpdateTenantParams{Name: tenant, Disabled: &disabled})
	e.must(err, "UpdateTenant "+tenant)
}

// testReadyKinds covers Store.ReadyKinds: the tenants and kinds with work
// ready now, and only those.
func testReadyKinds(t *testing.T, ns NewStore) {
	t.Run("TenantsAndKinds", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		later := job("later")
		later.RunAt = at(time.Hour)
		due := job("due")
		due.RunAt = at(time.Second)
		e.run(acme, base, job("running"))
		l := e.run(globex, base, job("flow"))
		_, err := e.sleep(l, base, "nap", at(time.Hour))
		e.must(err, "Suspend")
		e.admit(acme, base, job("resize"), job("resize"), job("echo"), later, due)
		e.admit(globex, base, job("resize"))
		want := []*store.ReadyKind{{Tenant: acme, Kind: "due"}, {Tenant: acme, Kind: "echo"},
			{Tenant: acme, Kind: "resize"}, {Tenant: globex, Kind: "resize"}}
		got := e.readyKinds("", at(2*time.Second))
		if kindsOf(got) != kindsOf(want) {
			t.Errorf("ReadyKinds: %s, want %s", kindsOf(got), kindsOf(want))
		}
		got = e.readyKinds(globex, at(2*time.Second))
		if kindsOf(got) != kindsOf(want[3:]) {
			t.Errorf("ReadyKinds of globex: %s, want %s", kindsOf(got), kindsOf(want[3:]))
		}
		// Before the due one is due; after acme's are claimed.
		if got := e.readyKinds(acme, base); kindsOf(got) != kindsOf(want[1:3]) {
			t.Errorf("ReadyKinds before the due one: %s, want %s", kindsOf(got), kindsOf(want[1:3]))
		}
		e.claim(store.ClaimParams{Tenant: acme, Max: 10, Now: at(2 * time.Second)})
		if got := e.readyKinds(acme, at(2*time.Second)); len(got) != 0 {
			t.Errorf("ReadyKinds after the claim: %s, want none", kindsOf(got))
		}
	})
}

func (e *env) readyKinds(tenant string, now time.Time) []*store.ReadyKind {
	e.t.Helper()
	got, err := e.s.ReadyKinds(e.ctx, &store.ReadyKindsParams{Tenant: tenant, Now: now})
	e.must(err, "ReadyKinds")
	return got
}

// kindsOf shows ready kinds as tenant/kind, in order.
func kindsOf(ks []*store.ReadyKind) string {
	var b []string
	for _, k := range ks {
		b = append(b, k.Tenant+"/"+k.Kind)
	}
	return strings.Join(b, " ")
}
