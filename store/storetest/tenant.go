package storetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// testTenant covers tenant records, API keys, the admin key and the rule
// that another tenant's executions look missing.
func testTenant(t *testing.T, ns NewStore) {
	t.Run("CreateAppliesDefaults", func(t *testing.T) {
		e := startEmpty(t, ns)
		now := at(time.Minute)
		tn := e.createTenant(store.CreateTenantParams{Name: acme, Now: now})
		want := store.Tenant{
			Name: acme, MaxInflight: store.DefaultMaxInflight, DedupTTL: store.DefaultDedupTTL,
			Retention: store.DefaultRetention, CreatedAt: now,
		}
		wantTenant(t, "CreateTenant answer", tn, want)
		wantTenant(t, "GetTenant", e.tenant(acme), want)
	})

	t.Run("CreateKeepsSettings", func(t *testing.T) {
		e := startEmpty(t, ns)
		tn := e.createTenant(store.CreateTenantParams{Name: acme, MaxInflight: 7, DedupTTL: time.Hour, Retention: 2 * time.Hour})
		want := store.Tenant{Name: acme, MaxInflight: 7, DedupTTL: time.Hour, Retention: 2 * time.Hour, CreatedAt: base}
		wantTenant(t, "CreateTenant answer", tn, want)
		wantTenant(t, "GetTenant", e.tenant(acme), want)
	})

	t.Run("CreateExistingNameFails", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.createTenant(store.CreateTenantParams{Name: acme, MaxInflight: 7})
		e.submit(acme, base, job("echo"))
		_, err := e.s.CreateTenant(e.ctx, &store.CreateTenantParams{Name: acme, MaxInflight: 99, KeyHash: "hash-second", Now: at(time.Second)})
		wantErr(t, "second CreateTenant", err, store.ErrTenantExists)
		tn := e.tenant(acme)
		if tn.MaxInflight != 7 || tn.Inflight != 1 {
			t.Errorf("after a refused CreateTenant: max_inflight %d inflight %d, want 7 and 1", tn.MaxInflight, tn.Inflight)
		}
		_, err = e.s.LookupAPIKey(e.ctx, &store.LookupAPIKeyParams{KeyHash: "hash-second"})
		wantErr(t, "the refused CreateTenant's key", err, store.ErrNotFound)
	})

	t.Run("GetUnknownIsNotFound", func(t *testing.T) {
		e := startEmpty(t, ns)
		_, err := e.s.GetTenant(e.ctx, &store.GetTenantParams{Name: acme})
		wantErr(t, "GetTenant of an unknown tenant", err, store.ErrNotFound)
	})

	t.Run("CreateRefusesBadNameOrSettings", func(t *testing.T) {
		e := startEmpty(t, ns)
		for _, p := range []store.CreateTenantParams{
			{Name: ""}, {Name: "Acme"}, {Name: "ac me"}, {Name: strings.Repeat("a", store.MaxTenantNameLen+1)},
			{Name: acme, MaxInflight: -1}, {Name: acme, MaxInflight: store.MaxInflightLimit + 1},
			{Name: acme, DedupTTL: -time.Second}, {Name: acme, Retention: store.MaxTenantDuration + time.Second},
		} {
			p.Now = base
			_, err := e.s.CreateTenant(e.ctx, &p)
			wantErr(t, fmt.Sprintf("CreateTenant %+v", p), err, store.ErrInvalid)
		}
		_, err := e.s.GetTenant(e.ctx, &store.GetTenantParams{Name: acme})
		wantErr(t, "GetTenant after refused creates", err, store.ErrNotFound)
	})

	t.Run("UpdateRefusesBadSettings", func(t *testing.T) {
		e := start(t, ns)
		neg, big := -1, store.MaxInflightLimit+1
		negD, bigD := -time.Second, store.MaxTenantDuration+time.Second
		for _, p := range []store.UpdateTenantParams{
			{MaxInflight: &neg}, {MaxInflight: &big}, {DedupTTL: &negD}, {Retention: &negD}, {Retention: &bigD},
		} {
			p.Name = acme
			_, err := e.s.UpdateTenant(e.ctx, &p)
			wantErr(t, "UpdateTenant out of bounds", err, store.ErrInvalid)
		}
		wantTenant(t, "GetTenant after refused updates", e.tenant(acme), store.Tenant{Name: acme,
			MaxInflight: store.DefaultMaxInflight, DedupTTL: store.DefaultDedupTTL, Retention: store.DefaultRetention, CreatedAt: base})
	})

	t.Run("UpdateChangesOnlyGivenFields", func(t *testing.T) {
		e := start(t, ns)
		e.submit(acme, base, job("echo"))
		maxInflight := 5
		tn, err := e.s.UpdateTenant(e.ctx, &store.UpdateTenantParams{Name: acme, MaxInflight: &maxInflight})
		e.must(err, "UpdateTenant")
		want := store.Tenant{Name: acme, MaxInflight: 5, Inflight: 1, DedupTTL: store.DefaultDedupTTL,
			Retention: store.DefaultRetention, CreatedAt: base}
		wantTenant(t, "UpdateTenant answer", tn, want)
		wantTenant(t, "GetTenant", e.tenant(acme), want)

		ttl, retention := time.Hour, 3*time.Hour
		tn, err = e.s.UpdateTenant(e.ctx, &store.UpdateTenantParams{Name: acme, DedupTTL: &ttl, Retention: &retention})
		e.must(err, "UpdateTenant")
		want.DedupTTL, want.Retention = ttl, retention
		wantTenant(t, "second UpdateTenant answer", tn, want)
		wantTenant(t, "GetTenant", e.tenant(acme), want)

		tn, err = e.s.UpdateTenant(e.ctx, &store.UpdateTenantParams{Name: acme})
		e.must(err, "UpdateTenant without changes")
		wantTenant(t, "empty UpdateTenant answer", tn, want)
	})

	t.Run("UpdateUnknownIsNotFound", func(t *testing.T) {
		e := startEmpty(t, ns)
		n := 3
		_, err := e.s.UpdateTenant(e.ctx, &store.UpdateTenantParams{Name: acme, MaxInflight: &n})
		wantErr(t, "UpdateTenant of an unknown tenant", err, store.ErrNotFound)
	})

	t.Run("LowerMaxInflightAppliesToAdmission", func(t *testing.T) {
		e := start(t, ns)
		for range 3 {
			e.submit(acme, base, job("echo"))
		}
		n := 3
		_, err := e.s.UpdateTenant(e.ctx, &store.UpdateTenantParams{Name: acme, MaxInflight: &n})
		e.must(err, "UpdateTenant")
		it := e.admitOne(acme, at(time.Second), job("echo"))
		wantErr(t, "Admit over the lowered limit", it.Err, store.ErrQuotaExceeded)
		e.wantInflight(acme, 3)
	})

	t.Run("APIKeysResolveToTheirTenant", func(t *testing.T) {
		e := start(t, ns) // first key "hash-acme"
		e.createTenant(store.CreateTenantParams{Name: globex, KeyHash: "hash-globex"})
		e.must(e.s.AddAPIKey(e.ctx, &store.AddAPIKeyParams{Tenant: acme, KeyHash: "hash-acme-2", Now: at(time.Second)}), "AddAPIKey")
		for hash, tenant := range map[string]string{"hash-acme": acme, "hash-acme-2": acme, "hash-globex": globex} {
			k, err := e.s.LookupAPIKey(e.ctx, &store.LookupAPIKeyParams{KeyHash: hash})
			e.must(err, "LookupAPIKey "+hash)
			if k.Admin || k.Tenant != tenant {
				t.Errorf("key %s resolves to %+v, want tenant %s", hash, *k, tenant)
			}
		}
	})

	t.Run("LookupUnknownKeyIsNotFound", func(t *testing.T) {
		e := start(t, ns)
		_, err := e.s.LookupAPIKey(e.ctx, &store.LookupAPIKeyParams{KeyHash: "hash-nobody"})
		wantErr(t, "LookupAPIKey of an unknown key", err, store.ErrNotFound)
	})

	t.Run("AddAPIKeyUnknownTenantIsNotFound", func(t *testing.T) {
		e := startEmpty(t, ns)
		err := e.s.AddAPIKey(e.ctx, &store.AddAPIKeyParams{Tenant: acme, KeyHash: "hash-x", Now: base})
		wantErr(t, "AddAPIKey for an unknown tenant", err, store.ErrNotFound)
		_, err = e.s.LookupAPIKey(e.ctx, &store.LookupAPIKeyParams{KeyHash: "hash-x"})
		wantErr(t, "LookupAPIKey of the refused key", err, store.ErrNotFound)
	})

	t.Run("EnsureAdminKeyCreatesOnce", func(t *testing.T) {
		e := start(t, ns)
		res, err := e.s.EnsureAdminKey(e.ctx, &store.EnsureAdminKeyParams{KeyHash: "hash-admin", Now: base})
		e.must(err, "EnsureAdminKey")
		if !res.Created {
			t.Error("first EnsureAdminKey: Created = false")
		}
		for _, hash := range []string{"hash-admin-2", "hash-admin"} {
			res, err = e.s.EnsureAdminKey(e.ctx, &store.EnsureAdminKeyParams{KeyHash: hash, Now: at(time.Second)})
			e.must(err, "EnsureAdminKey again")
			if res.Created {
				t.Errorf("EnsureAdminKey %s after the first: Created = true", hash)
			}
		}
		k, err := e.s.LookupAPIKey(e.ctx, &store.LookupAPIKeyParams{KeyHash: "hash-admin"})
		e.must(err, "LookupAPIKey of the admin key")
		if !k.Admin || k.Tenant != "" {
			t.Errorf("admin key resolves to %+v, want Admin and no tenant", *k)
		}
		_, err = e.s.LookupAPIKey(e.ctx, &store.LookupAPIKeyParams{KeyHash: "hash-admin-2"})
		wantErr(t, "the second admin key", err, store.ErrNotFound)
		k, err = e.s.LookupAPIKey(e.ctx, &store.LookupAPIKeyParams{KeyHash: "hash-acme"})
		e.must(err, "LookupAPIKey of a tenant key")
		if k.Admin {
			t.Error("a tenant key resolves as admin")
		}
	})

	t.Run("OtherTenantsExecutionsLookMissing", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		x := e.submit(acme, base, job("echo"))
		_, err := e.s.Get(e.ctx, &store.GetParams{Tenant: globex, ID: x.ID})
		wantErr(t, "Get as globex", err, store.ErrNotFound)
		_, err = e.cancel(globex, x.ID, at(time.Second))
		wantErr(t, "Cancel as globex", err, store.ErrNotFound)
		wantErr(t, "Delete as globex", e.del(globex, x.ID, true, at(time.Second)), store.ErrNotFound)
		if xs := e.list(store.ListParams{Tenant: globex}); len(xs) != 0 {
			t.Errorf("globex lists %d executions, want 0", len(xs))
		}
		e.claimNone(globex, at(time.Second))
		sameExecution(t, "acme's execution", e.get(x.ID), x)
		e.wantInflight(acme, 1)
		e.wantInflight(globex, 0)
	})

	testTenantKeys(t, ns)
	testTenantDelete(t, ns)

	t.Run("Ping", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.must(e.s.Ping(e.ctx), "Ping")
	})
}

func wantTenant(t testing.TB, what string, got *store.Tenant, want store.Tenant) {
	t.Helper()
	if got == nil {
		t.Errorf("%s: nil tenant", what)
		return
	}
	if got.Name != want.Name || got.MaxInflight != want.MaxInflight || got.Inflight != want.Inflight ||
		got.DedupTTL != want.DedupTTL || got.Retention != want.Retention || !got.CreatedAt.Equal(want.CreatedAt) ||
		got.Disabled != want.Disabled {
		t.Errorf("%s: got %+v, want %+v", what, *got, want)
	}
}
