package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// testErrors covers the error contract every backend shares: a thing that
// exists already is store.ErrExists (whatever the driver said), and
// nothing of the refused call is written.
func testErrors(t *testing.T, ns NewStore) {
	t.Run("TenantExistsIsErrExists", func(t *testing.T) {
		e := start(t, ns)
		_, err := e.s.CreateTenant(e.ctx, &store.CreateTenantParams{Name: acme, Now: at(time.Second)})
		wantErr(t, "CreateTenant of a taken name", err, store.ErrTenantExists)
		wantErr(t, "CreateTenant of a taken name", err, store.ErrExists)
	})

	t.Run("AddAPIKeyWithTakenHashIsExists", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		err := e.s.AddAPIKey(e.ctx, &store.AddAPIKeyParams{Tenant: globex, KeyHash: "hash-" + acme, Now: at(time.Second)})
		wantErr(t, "AddAPIKey of a stored hash", err, store.ErrExists)
		if errors.Is(err, store.ErrTenantExists) || errors.Is(err, store.ErrInvalid) {
			t.Errorf("AddAPIKey of a stored hash: %v, want ErrExists only", err)
		}
		k, err := e.s.LookupAPIKey(e.ctx, &store.LookupAPIKeyParams{KeyHash: "hash-" + acme})
		e.must(err, "LookupAPIKey")
		if k.Tenant != acme {
			t.Errorf("the stored hash now resolves to %q, want %q", k.Tenant, acme)
		}
		keys, err := e.s.ListAPIKeys(e.ctx, &store.ListAPIKeysParams{Tenant: globex})
		e.must(err, "ListAPIKeys")
		if len(keys) != 1 {
			t.Errorf("globex has %d keys after a refused AddAPIKey, want 1", len(keys))
		}
	})

	t.Run("CreateTenantWithTakenKeyHashIsExists", func(t *testing.T) {
		e := start(t, ns)
		_, err := e.s.CreateTenant(e.ctx, &store.CreateTenantParams{Name: globex, KeyHash: "hash-" + acme, Now: at(time.Second)})
		wantErr(t, "CreateTenant with a stored key hash", err, store.ErrExists)
		if errors.Is(err, store.ErrTenantExists) {
			t.Errorf("CreateTenant with a stored key hash: %v, want ErrExists, not ErrTenantExists (the name is free)", err)
		}
		_, err = e.s.GetTenant(e.ctx, &store.GetTenantParams{Name: globex})
		wantErr(t, "the refused tenant", err, store.ErrNotFound)
	})

	t.Run("AdmitTakenIDIsExists", func(t *testing.T) {
		e := start(t, ns)
		first := e.submit(acme, base, job("echo"))
		sub := job("other")
		sub.ID = first.ID
		res, err := e.s.Admit(e.ctx, &store.AdmitParams{Tenant: acme, Items: []store.Submission{sub}, Now: at(time.Second)})
		if err == nil {
			checkAdmitResult(t, res, 1)
			err = res.Items[0].Err
		}
		wantErr(t, "Admit with a taken id", err, store.ErrExists)
		if got := e.get(first.ID); got.Kind != "echo" {
			t.Errorf("the execution with the taken id has kind %q, want echo", got.Kind)
		}
		e.wantInflight(acme, 1)
	})
}
