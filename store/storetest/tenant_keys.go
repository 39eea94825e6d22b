package storetest

import (
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// testTenantKeys covers key ids, listing, deletion (revocation), the
// last-used throttle, disabling a tenant and console sessions.
func testTenantKeys(t *testing.T, ns NewStore) {
	t.Run("KeysListedByIDNeverByHash", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.createTenant(store.CreateTenantParams{Name: acme, KeyHash: "hash-acme", KeyID: "key_first", Now: base})
		e.createTenant(store.CreateTenantParams{Name: globex, KeyHash: "hash-globex", KeyID: "key_globex", Now: base})
		e.must(e.s.AddAPIKey(e.ctx, &store.AddAPIKeyParams{Tenant: acme, KeyHash: "hash-acme-2", KeyID: "key_second",
			Now: at(time.Second)}), "AddAPIKey")
		ks := e.keys(acme)
		if len(ks) != 2 || ks[0].KeyID != "key_first" || ks[1].KeyID != "key_second" {
			t.Fatalf("ListAPIKeys acme = %s, want key_first, key_second", keyIDs(ks))
		}
		wantTime(t, "key_first CreatedAt", ks[0].CreatedAt, base)
		wantTime(t, "key_second CreatedAt", ks[1].CreatedAt, at(time.Second))
		for _, k := range ks {
			if !k.LastUsedAt.IsZero() {
				t.Errorf("%s: LastUsedAt %s before any use, want zero", k.KeyID, fmtTime(k.LastUsedAt))
			}
		}
		k, err := e.s.LookupAPIKey(e.ctx, &store.LookupAPIKeyParams{KeyHash: "hash-acme-2"})
		e.must(err, "LookupAPIKey")
		if k.KeyID != "key_second" || k.Tenant != acme || k.TenantDisabled {
			t.Errorf("LookupAPIKey hash-acme-2 = %+v, want key_second of acme, enabled", *k)
		}
		_, err = e.s.ListAPIKeys(e.ctx, &store.ListAPIKeysParams{Tenant: "nobody"})
		wantErr(t, "ListAPIKeys of an unknown tenant", err, store.ErrNotFound)
	})

	t.Run("KeysWithoutIDGetOne", func(t *testing.T) {
		e := start(t, ns) // no KeyID given
		e.must(e.s.AddAPIKey(e.ctx, &store.AddAPIKeyParams{Tenant: acme, KeyHash: "hash-acme-2", Now: base}), "AddAPIKey")
		ks := e.keys(acme)
		if len(ks) != 2 || ks[0].KeyID == "" || ks[1].KeyID == "" || ks[0].KeyID == ks[1].KeyID {
			t.Errorf("ListAPIKeys = %s, want two distinct ids", keyIDs(ks))
		}
	})

	t.Run("DeleteAPIKeyRevokesAtOnce", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.createTenant(store.CreateTenantParams{Name: acme, KeyHash: "hash-acme", KeyID: "key_first"})
		e.createTenant(store.CreateTenantParams{Name: globex, KeyHash: "hash-globex", KeyID: "key_globex"})
		e.must(e.s.AddAPIKey(e.ctx, &store.AddAPIKeyParams{Tenant: acme, KeyHash: "hash-acme-2", KeyID: "key_second", Now: base}), "AddAPIKey")

		err := e.s.DeleteAPIKey(e.ctx, &store.DeleteAPIKeyParams{Tenant: globex, KeyID: "key_second"})
		wantErr(t, "DeleteAPIKey of acme's key as globex", err, store.ErrNotFound)
		e.must(e.s.DeleteAPIKey(e.ctx, &store.DeleteAPIKeyParams{Tenant: acme, KeyID: "key_second"}), "DeleteAPIKey")
		_, err = e.s.LookupAPIKey(e.ctx, &store.LookupAPIKeyParams{KeyHash: "hash-acme-2"})
		wantErr(t, "LookupAPIKey of the deleted key", err, store.ErrNotFound)
		if ks := e.keys(acme); len(ks) != 1 || ks[0].KeyID != "key_first" {
			t.Errorf("ListAPIKeys after the delete = %s, want key_first", keyIDs(ks))
		}
		err = e.s.DeleteAPIKey(e.ctx, &store.DeleteAPIKeyParams{Tenant: acme, KeyID: "key_second"})
		wantErr(t, "DeleteAPIKey again", err, store.ErrNotFound)
		for _, h := range []string{"hash-acme", "hash-globex"} {
			_, err := e.s.LookupAPIKey(e.ctx, &store.LookupAPIKeyParams{KeyHash: h})
			e.must(err, "LookupAPIKey of a key not deleted "+h)
		}
		// A touch of a deleted key does not bring it back.
		e.must(e.s.TouchAPIKey(e.ctx, &store.TouchAPIKeyParams{KeyHash: "hash-acme-2", Every: time.Minute, Now: at(time.Hour)}), "TouchAPIKey")
		_, err = e.s.LookupAPIKey(e.ctx, &store.LookupAPIKeyParams{KeyHash: "hash-acme-2"})
		wantErr(t, "LookupAPIKey of the deleted key after a touch", err, store.ErrNotFound)
	})

	t.Run("TouchWritesAtMostOncePerInterval", func(t *testing.T) {
		e := start(t, ns)
		touch := func(d time.Duration) {
			t.Helper()
			e.must(e.s.TouchAPIKey(e.ctx, &store.TouchAPIKeyParams{KeyHash: "hash-acme", Every: time.Minute, Now: at(d)}), "TouchAPIKey")
		}
		used := func(want time.Duration) {
			t.Helper()
			k, err := e.s.LookupAPIKey(e.ctx, &store.LookupAPIKeyParams{KeyHash: "hash-acme"})
			e.must(err, "LookupAPIKey")
			wantTime(t, "LookupAPIKey LastUsedAt", k.LastUsedAt, at(want))
			ks := e.keys(acme)
			if len(ks) != 1 {
				t.Fatalf("ListAPIKeys: %d keys, want 1", len(ks))
			}
			wantTime(t, "ListAPIKeys LastUsedAt", ks[0].LastUsedAt, at(want))
		}
		touch(10 * time.Second)
		used(10 * time.Second)
		touch(40 * time.Second) // within the minute: no write
		used(10 * time.Second)
		touch(70 * time.Second)
		used(70 * time.Second)
		touch(5 * time.Second) // never backwards
		used(70 * time.Second)
	})

	t.Run("DisableAndEnable", func(t *testing.T) {
		e := start(t, ns)
		e.submit(acme, base, job("echo"))
		yes, no := true, false
		tn, err := e.s.UpdateTenant(e.ctx, &store.UpdateTenantParams{Name: acme, Disabled: &yes})
		e.must(err, "UpdateTenant disable")
		want := store.Tenant{Name: acme, MaxInflight: store.DefaultMaxInflight, Inflight: 1,
			DedupTTL: store.DefaultDedupTTL, Retention: store.DefaultRetention, CreatedAt: base, Disabled: true}
		wantTenant(t, "UpdateTenant answer", tn, want)
		wantTenant(t, "GetTenant", e.tenant(acme), want)
		k, err := e.s.LookupAPIKey(e.ctx, &store.LookupAPIKeyParams{KeyHash: "hash-acme"})
		e.must(err, "LookupAPIKey")
		if !k.TenantDisabled || k.Tenant != acme {
			t.Errorf("LookupAPIKey of a disabled tenant's key = %+v, want TenantDisabled", *k)
		}
		n := 5 // another setting leaves the flag as it is
		tn, err = e.s.UpdateTenant(e.ctx, &store.UpdateTenantParams{Name: acme, MaxInflight: &n})
		e.must(err, "UpdateTenant max_inflight")
		if !tn.Disabled {
			t.Error("changing max_inflight enabled the tenant")
		}
		tn, err = e.s.UpdateTenant(e.ctx, &store.UpdateTenantParams{Name: acme, Disabled: &no})
		e.must(err, "UpdateTenant enable")
		if tn.Disabled || e.tenant(acme).Disabled {
			t.Error("the tenant is still disabled after enabling it")
		}
		k, err = e.s.LookupAPIKey(e.ctx, &store.LookupAPIKeyParams{KeyHash: "hash-acme"})
		e.must(err, "LookupAPIKey")
		if k.TenantDisabled {
			t.Error("LookupAPIKey says disabled after enabling")
		}
		e.wantInflight(acme, 1)
	})

	t.Run("DisabledTenantSchedulesDoNotTick", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		e.putSchedule(sched("s", store.OverlapAllow), base)
		other := sched("g", store.OverlapAllow)
		other.Tenant = globex
		e.putSchedule(other, base)
		yes, no := true, false
		_, err := e.s.UpdateTenant(e.ctx, &store.UpdateTenantParams{Name: acme, Disabled: &yes})
		e.must(err, "UpdateTenant disable")
		if got := names(e.dueSchedules(at(minute))); got != "g" {
			t.Errorf("due schedules with acme disabled = %q, want only globex's g", got)
		}
		res := e.fire(acme, "s", at(minute), at(minute))
		if res.Execution != nil || res.Advanced {
			t.Errorf("a regular fire of a disabled tenant's schedule fired %v, advanced %v; want nothing", res.Execution, res.Advanced)
		}
		wantTime(t, "NextRunAt after the refused fire", e.getSchedule(acme, "s").NextRunAt, at(minute))
		if xs := e.list(store.ListParams{Tenant: acme}); len(xs) != 0 {
			t.Errorf("the disabled tenant has %d executions, want 0", len(xs))
		}
		_, err = e.s.UpdateTenant(e.ctx, &store.UpdateTenantParams{Name: acme, Disabled: &no})
		e.must(err, "UpdateTenant enable")
		if got := names(e.dueSchedules(at(3 * minute))); got != "s,g" && got != "g,s" {
			t.Errorf("due schedules after enabling = %q, want s and g", got)
		}
		fired(t, "the tick kept while disabled", e.fire(acme, "s", at(minute), at(3*minute)), store.StatusQueued)
	})

	t.Run("Sessions", func(t *testing.T) {
		e := start(t, ns)
		e.must(e.s.CreateSession(e.ctx, &store.CreateSessionParams{IDHash: "sess-1", KeyHash: "hash-acme",
			ExpiresAt: at(time.Hour), Now: base}), "CreateSession")
		e.must(e.s.CreateSession(e.ctx, &store.CreateSessionParams{IDHash: "sess-2", KeyHash: "hash-acme",
			ExpiresAt: at(time.Hour), Now: base}), "CreateSession")
		ses, err := e.s.GetSession(e.ctx, &store.GetSessionParams{IDHash: "sess-1", Now: at(time.Minute)})
		e.must(err, "GetSession")
		if ses.KeyHash != "hash-acme" {
			t.Errorf("session key hash %q, want hash-acme", ses.KeyHash)
		}
		wantTime(t, "session ExpiresAt", ses.ExpiresAt, at(time.Hour))
		_, err = e.s.GetSession(e.ctx, &store.GetSessionParams{IDHash: "sess-1", Now: at(time.Hour)})
		wantErr(t, "GetSession at its expiry", err, store.ErrNotFound)
		e.must(e.s.DeleteSession(e.ctx, &store.DeleteSessionParams{IDHash: "sess-1"}), "DeleteSession")
		_, err = e.s.GetSession(e.ctx, &store.GetSessionParams{IDHash: "sess-1", Now: at(time.Minute)})
		wantErr(t, "GetSession after DeleteSession", err, store.ErrNotFound)
		e.must(e.s.DeleteSession(e.ctx, &store.DeleteSessionParams{IDHash: "sess-1"}), "DeleteSession again")
		_, err = e.s.GetSession(e.ctx, &store.GetSessionParams{IDHash: "sess-2", Now: at(time.Minute)})
		e.must(err, "GetSession of the other session")
		_, err = e.s.GetSession(e.ctx, &store.GetSessionParams{IDHash: "sess-none", Now: base})
		wantErr(t, "GetSession of an unknown session", err, store.ErrNotFound)
	})
}

func (e *env) keys(tenant string) []*store.APIKeyInfo {
	e.t.Helper()
	ks, err := e.s.ListAPIKeys(e.ctx, &store.ListAPIKeysParams{Tenant: tenant})
	e.must(err, "ListAPIKeys "+tenant)
	return ks
}

func keyIDs(ks []*store.APIKeyInfo) string {
	out := "["
	for i, k := range ks {
		if i > 0 {
			out += " "
		}
		out += k.KeyID
	}
	return out + "]"
}
