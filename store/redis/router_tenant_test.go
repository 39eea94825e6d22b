package redis_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/latch-run/latch/store"
)

// TestRouterKeyOfMissingTenantRefused (M1): a crash between CreateTenant's
// two steps (home record and key written, tenant namespace not) or
// DeleteTenant's (namespace deleted, home record and keys not) leaves an
// API key whose tenant's hash is missing; it authenticates nothing.
// DeleteTenant revokes the keys before it deletes the tenant's data, and
// not while a delete is refused for work in flight.
func TestRouterKeyOfMissingTenantRefused(t *testing.T) {
	url := clusterURL(t)
	r := openRouter(t, url, newClusterPrefix(t, url))
	defer r.Close()
	ctx := t.Context()
	for _, n := range []string{"acme", "beta"} {
		if _, err := r.CreateTenant(ctx, &store.CreateTenantParams{Name: n, KeyHash: "hash-" + n}); err != nil {
			t.Fatal(err)
		}
		if k, err := r.LookupAPIKey(ctx, &store.LookupAPIKeyParams{KeyHash: "hash-" + n}); err != nil || k.Tenant != n {
			t.Fatalf("lookup %s: %v %v", n, k, err)
		}
	}
	// The state a crash leaves: acme's namespace hash gone, its home
	// record and key still there.
	if err := r.RawClient().Del(ctx, r.TenantNamespace("acme")+":tenant:acme").Err(); err != nil {
		t.Fatal(err)
	}
	if k, err := r.LookupAPIKey(ctx, &store.LookupAPIKeyParams{KeyHash: "hash-acme"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("lookup of a key whose tenant's hash is missing: %v %v, want ErrNotFound", k, err)
	}
	if _, err := r.LookupAPIKey(ctx, &store.LookupAPIKeyParams{KeyHash: "hash-beta"}); err != nil {
		t.Errorf("lookup of beta's key: %v", err)
	}
	if err := r.DeleteTenant(ctx, &store.DeleteTenantParams{Name: "acme"}); err != nil {
		t.Errorf("delete of the half-created tenant: %v", err)
	}

	// A delete refused for work in flight keeps the keys.
	if _, err := r.Admit(ctx, &store.AdmitParams{Tenant: "beta", Items: []store.Submission{{Kind: "k"}}}); err != nil {
		t.Fatal(err)
	}
	if err := r.DeleteTenant(ctx, &store.DeleteTenantParams{Name: "beta"}); err == nil {
		t.Fatal("delete of a tenant with work in flight succeeded")
	}
	if _, err := r.LookupAPIKey(ctx, &store.LookupAPIKeyParams{KeyHash: "hash-beta"}); err != nil {
		t.Errorf("lookup of beta's key after a refused delete: %v", err)
	}
	// A forced delete revokes the keys first: the home keys are gone even
	// if the namespace's delete then fails (here: its hash made a string,
	// so its script answers WRONGTYPE).
	if err := r.RawClient().Set(ctx, r.TenantNamespace("beta")+":list:beta", "broken", 0).Err(); err != nil {
		t.Fatal(err)
	}
	err := r.DeleteTenant(ctx, &store.DeleteTenantParams{Name: "beta", Force: true})
	if err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Fatalf("forced delete of the broken namespace: %v, want its WRONGTYPE", err)
	}
	if k, err := r.LookupAPIKey(ctx, &store.LookupAPIKeyParams{KeyHash: "hash-beta"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("lookup of beta's key after a delete that failed midway: %v %v, want ErrNotFound (revoked first)", k, err)
	}
}
