package redis

import (
	"context"
	"errors"
	"fmt"

	goredis "github.com/redis/go-redis/v9"

	"github.com/latch-run/latch/store"
)

// Tenants and keys on the router.
//
// The home namespace holds a tenant's creation record (the tenant hash as
// CreateTenant wrote it: the registry's entry, which its API keys hang
// off) and its keys; the tenant's namespace holds its authoritative hash
// (settings, inflight, disabled). CreateTenant writes home first — the
// name and the key hash are claimed there, atomically, by the usual
// script — then the tenant namespace; DeleteTenant deletes in the tenant
// namespace first (the usual script: refused there, with nothing written,
// while work is in flight), then the home record with its keys, workers
// and activity; before both, unless the tenant has work in flight and the
// delete is not forced, it revokes the tenant's keys (revokeKeys). A
// crash between the two steps of a create leaves a registered tenant
// without a namespace (it reads as missing; DeleteTenant removes it); of a
// delete, a registry entry whose namespace is gone (DeleteTenant again
// removes it). Either way its keys authenticate nothing: LookupAPIKey
// answers ErrNotFound for a key whose tenant's hash is missing.

func (r *Router) CreateTenant(ctx context.Context, p *store.CreateTenantParams) (*store.Tenant, error) {
	ten, err := r.home.CreateTenant(ctx, p)
	if err != nil {
		return nil, err
	}
	np := *p
	np.KeyHash, np.KeyID = "", ""
	if _, err := r.view(p.Name).CreateTenant(ctx, &np); err != nil && !errors.Is(err, store.ErrTenantExists) {
		return nil, err
	}
	return ten, nil
}

func (r *Router) GetTenant(ctx context.Context, p *store.GetTenantParams) (*store.Tenant, error) {
	return r.view(p.Name).GetTenant(ctx, p)
}

func (r *Router) ListTenants(ctx context.Context, p *store.ListTenantsParams) ([]*store.Tenant, error) {
	names, err := r.tenants(ctx)
	if err != nil {
		return nil, err
	}
	return readTenantPage(ctx, r.home.rdb, names, p, func(n string) string { return r.view(n).k.tenant(n) })
}

func (r *Router) UpdateTenant(ctx context.Context, p *store.UpdateTenantParams) (*store.Tenant, error) {
	ten, err := r.view(p.Name).UpdateTenant(ctx, p)
	r.unsure(err)
	if err == nil && p.Disabled != nil && !*p.Disabled {
		// Enabled again: its work and its ticks may be due.
		r.lower(ctx, p.Name, 0, hintClaim, hintFire)
	}
	return ten, err
}

func (r *Router) DeleteTenant(ctx context.Context, p *store.DeleteTenantParams) error {
	v := r.view(p.Name)
	// The tenant's keys go first, unless the delete will be refused for
	// work in flight (read here; a call admitted since is refused below
	// with its keys gone, as the tenant is being deleted anyway).
	revoke := p.Force
	if !revoke {
		ten, err := v.GetTenant(ctx, &store.GetTenantParams{Name: p.Name})
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err // not known to be deletable: its keys stay
		}
		revoke = err != nil || ten.Inflight == 0
	}
	if revoke {
		if err := r.revokeKeys(ctx, p.Name); err != nil {
			return err
		}
	}
	err := v.DeleteTenant(ctx, p)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	hp := *p
	hp.Force = true
	herr := r.home.DeleteTenant(ctx, &hp)
	if err != nil && herr != nil {
		return err // in neither: not found
	}
	if herr != nil && !errors.Is(herr, store.ErrNotFound) {
		return herr
	}
	ctx = context.WithoutCancel(ctx)
	_, _ = r.home.rdb.Pipelined(ctx, func(pipe goredis.Pipeliner) error {
		for _, w := range allHints {
			pipe.ZRem(ctx, r.home.k.hint(w), p.Name)
			pipe.Del(ctx, r.home.k.hintGen(w, p.Name))
		}
		pipe.ZRem(ctx, r.home.k.shardTurns(), p.Name)
		return nil
	})
	return nil
}

// revokeKeys deletes tenant t's API keys in the home namespace (one
// MULTI), leaving its registry entry and record.
func (r *Router) revokeKeys(ctx context.Context, t string) error {
	h := r.home
	hashes, err := h.rdb.HVals(ctx, h.k.keyIDs(t)).Result()
	if err != nil {
		return fmt.Errorf("redis: delete tenant: %w", interpretError(err))
	}
	if _, err := h.rdb.TxPipelined(ctx, func(pipe goredis.Pipeliner) error {
		for _, kh := range hashes {
			pipe.Del(ctx, h.k.apiKey(kh))
		}
		pipe.Del(ctx, h.k.keyIDs(t))
		return nil
	}); err != nil {
		return fmt.Errorf("redis: delete tenant: %w", interpretError(err))
	}
	return nil
}

func (r *Router) AddAPIKey(ctx context.Context, p *store.AddAPIKeyParams) error {
	return r.home.AddAPIKey(ctx, p)
}

// LookupAPIKey reads the key in the home namespace and its tenant's
// Disabled flag in the tenant's namespace; ErrNotFound when the tenant's
// hash is not there (a create or delete cut short by a crash).
func (r *Router) LookupAPIKey(ctx context.Context, p *store.LookupAPIKeyParams) (*store.APIKey, error) {
	return r.home.lookupAPIKey(ctx, p, func(t string) (*Store, string) { v := r.view(t); return v, v.k.tenant(t) })
}

func (r *Router) ListAPIKeys(ctx context.Context, p *store.ListAPIKeysParams) ([]*store.APIKeyInfo, error) {
	return r.home.ListAPIKeys(ctx, p)
}

func (r *Router) DeleteAPIKey(ctx context.Context, p *store.DeleteAPIKeyParams) error {
	return r.home.DeleteAPIKey(ctx, p)
}

func (r *Router) TouchAPIKey(ctx context.Context, p *store.TouchAPIKeyParams) error {
	return r.home.TouchAPIKey(ctx, p)
}

func (r *Router) EnsureAdminKey(ctx context.Context, p *store.EnsureAdminKeyParams) (*store.EnsureAdminKeyResult, error) {
	return r.home.EnsureAdminKey(ctx, p)
}

func (r *Router) CreateSession(ctx context.Context, p *store.CreateSessionParams) error {
	return r.home.CreateSession(ctx, p)
}

func (r *Router) GetSession(ctx context.Context, p *store.GetSessionParams) (*store.Session, error) {
	return r.home.GetSession(ctx, p)
}

func (r *Router) DeleteSession(ctx context.Context, p *store.DeleteSessionParams) error {
	return r.home.DeleteSession(ctx, p)
}

func (r *Router) ReportServer(ctx context.Context, p *store.ServerReport) error {
	return r.home.ReportServer(ctx, p)
}

func (r *Router) Presence(ctx context.Context, p *store.PresenceParams) (*store.Presence, error) {
	return r.home.Presence(ctx, p)
}

func (r *Router) Activity(ctx context.Context, p *store.ActivityParams) ([]*store.ActivityMinute, error) {
	return r.home.Activity(ctx, p)
}
