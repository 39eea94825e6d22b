package auth_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/latch-run/latch/auth"
	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/sqlite"
)

func TestHashKey(t *testing.T) {
	if got := auth.HashKey("abc"); got != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Fatalf("HashKey = %q, want the hex SHA-256", got)
	}
	if auth.HashKey("a") == auth.HashKey("b") {
		t.Fatal("two keys, one hash")
	}
	k := auth.NewKey()
	if len(k) != len("lk_")+43 || k[:3] != "lk_" || k == auth.NewKey() {
		t.Fatalf("NewKey = %q", k)
	}
}

// Identify resolves a tenant key, a stored admin key, a pinned admin key
// (which then refuses the stored one) and refuses unknown keys; it records
// a key's use at most once per TouchInterval.
func TestIdentify(t *testing.T) {
	ctx := t.Context()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "auth.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme", KeyHash: auth.HashKey("acme-key"),
		KeyID: store.NewKeyID(), MaxInflight: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.EnsureAdminKey(ctx, &store.EnsureAdminKeyParams{KeyHash: auth.HashKey("stored-admin")}); err != nil {
		t.Fatal(err)
	}
	now := time.Now().Truncate(time.Millisecond)
	a := auth.Authenticator{Store: st, Now: func() time.Time { return now }}

	if id, err := a.Identify(ctx, "acme-key"); err != nil || id != (auth.Identity{Tenant: "acme"}) {
		t.Fatalf("tenant key: %+v, %v", id, err)
	}
	if id, err := a.Identify(ctx, "stored-admin"); err != nil || id != (auth.Identity{Admin: true}) {
		t.Fatalf("stored admin key: %+v, %v", id, err)
	}
	if _, err := a.Identify(ctx, "lk_nope"); !errors.Is(err, auth.ErrUnknownKey) {
		t.Fatalf("unknown key: %v, want ErrUnknownKey", err)
	}
	pinned := auth.Authenticator{Store: st, AdminKeyHash: auth.HashKey("pinned")}
	if id, err := pinned.Identify(ctx, "pinned"); err != nil || !id.Admin {
		t.Fatalf("pinned admin key: %+v, %v", id, err)
	}
	if _, err := pinned.Identify(ctx, "stored-admin"); !errors.Is(err, auth.ErrUnknownKey) {
		t.Fatalf("stored admin key under a pinned one: %v, want ErrUnknownKey", err)
	}
	if id, err := pinned.IdentifyHash(ctx, auth.HashKey("acme-key")); err != nil || id.Tenant != "acme" {
		t.Fatalf("IdentifyHash: %+v, %v", id, err)
	}

	lastUsed := func() time.Time {
		t.Helper()
		k, err := st.LookupAPIKey(ctx, &store.LookupAPIKeyParams{KeyHash: auth.HashKey("acme-key")})
		if err != nil {
			t.Fatal(err)
		}
		return k.LastUsedAt
	}
	first := lastUsed()
	if !first.Equal(now) {
		t.Fatalf("last used %v after the first use at %v", first, now)
	}
	now = now.Add(auth.TouchInterval / 2)
	if _, err := a.Identify(ctx, "acme-key"); err != nil {
		t.Fatal(err)
	}
	if got := lastUsed(); !got.Equal(first) {
		t.Fatalf("last used moved to %v within TouchInterval", got)
	}
	now = now.Add(auth.TouchInterval)
	if _, err := a.Identify(ctx, "acme-key"); err != nil {
		t.Fatal(err)
	}
	if got := lastUsed(); !got.Equal(now) {
		t.Fatalf("last used %v, want %v after TouchInterval", got, now)
	}

	disabled := true
	if _, err := st.UpdateTenant(ctx, &store.UpdateTenantParams{Name: "acme", Disabled: &disabled}); err != nil {
		t.Fatal(err)
	}
	if id, err := a.Identify(ctx, "acme-key"); err != nil || !id.Disabled {
		t.Fatalf("disabled tenant's key: %+v, %v", id, err)
	}
}
