package redis

import (
	"context"
	"fmt"
	"slices"

	goredis "github.com/redis/go-redis/v9"

	"github.com/latch-run/latch/store"
)

// CreateTenant implements store.Store (create_tenant.lua). Durations are
// kept to the microsecond.
func (s *Store) CreateTenant(ctx context.Context, p *store.CreateTenantParams) (*store.Tenant, error) {
	ten, err := p.NewTenant(fromUS(us(now(p.Now))))
	if err != nil {
		return nil, err
	}
	ten.DedupTTL = fromDurUS(durUS(ten.DedupTTL))
	ten.Retention = fromDurUS(durUS(ten.Retention))
	ten.EventRetention = fromDurUS(durUS(ten.EventRetention))
	keys := []string{s.k.tenant(p.Name), s.k.tenants()}
	if p.KeyHash != "" {
		keys = append(keys, s.k.apiKey(p.KeyHash), s.k.keyIDs(p.Name))
	}
	arr, err := s.run(ctx, "create tenant", scriptCreateTenant, keys, s.k.ns, p.Name,
		ten.MaxInflight, itoa(durUS(ten.DedupTTL)), itoa(durUS(ten.Retention)), itoa(us(ten.CreatedAt)), p.KeyHash,
		store.KeyIDOrNew(p.KeyID), itoa(ten.MaxStoredBytes), itoa(durUS(ten.EventRetention)))
	if err != nil {
		return nil, err
	}
	if err := status(arr, fmt.Sprintf("tenant %q", p.Name)); err != nil {
		return nil, err
	}
	return ten, nil
}

func parseTenant(m map[string]string) *store.Tenant {
	t := &store.Tenant{
		Name:        m["name"],
		MaxInflight: int(hashInt(m, "max_inflight")),
		Inflight:    int(hashInt(m, "inflight")),
		DedupTTL:    fromDurUS(hashInt(m, "dedup_ttl")),
		Retention:   fromDurUS(hashInt(m, "retention")),
		CreatedAt:   fromUS(hashInt(m, "created")),
		Disabled:    m["disabled"] == "1",
		// A tenant created before the storage budget has the default.
		MaxStoredBytes: store.DefaultMaxStoredBytes,
		StoredBytes:    hashInt(m, "stored"),
		EventRetention: eventRetention(m),
	}
	if _, ok := m["max_bytes"]; ok {
		t.MaxStoredBytes = hashInt(m, "max_bytes")
	}
	return t
}

// GetTenant implements store.Store.
func (s *Store) GetTenant(ctx context.Context, p *store.GetTenantParams) (*store.Tenant, error) {
	m, err := s.rdb.HGetAll(ctx, s.k.tenant(p.Name)).Result()
	if err != nil {
		return nil, fmt.Errorf("redis: get tenant: %w", interpretError(err))
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("tenant %q: %w", p.Name, store.ErrNotFound)
	}
	return parseTenant(m), nil
}

// ListTenants implements store.Store: the names from the tenants set,
// sorted here, then one pipelined read of the page's records. A tenant
// deleted between the two is left out.
func (s *Store) ListTenants(ctx context.Context, p *store.ListTenantsParams) ([]*store.Tenant, error) {
	names, err := s.rdb.SMembers(ctx, s.k.tenants()).Result()
	if err != nil {
		return nil, fmt.Errorf("redis: list tenants: %w", interpretError(err))
	}
	slices.Sort(names)
	return readTenantPage(ctx, s.rdb, names, p, s.k.tenant)
}

// readTenantPage reads the page p asks for of the sorted tenant names, in
// one pipeline, each record at recordKey(name); a tenant deleted
// meanwhile is left out. The Router shares it (its tenants' records live
// in their own namespaces).
func readTenantPage(ctx context.Context, rdb goredis.UniversalClient, names []string, p *store.ListTenantsParams,
	recordKey func(name string) string) ([]*store.Tenant, error) {
	from, _ := slices.BinarySearch(names, p.After)
	if from < len(names) && names[from] == p.After {
		from++
	}
	names = names[from:min(len(names), from+p.PageLimit())]
	cmds := make([]*goredis.MapStringStringCmd, len(names))
	if _, err := rdb.Pipelined(ctx, func(pipe goredis.Pipeliner) error {
		for i, n := range names {
			cmds[i] = pipe.HGetAll(ctx, recordKey(n))
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("redis: list tenants: %w", interpretError(err))
	}
	out := make([]*store.Tenant, 0, len(names))
	for _, c := range cmds {
		if m := c.Val(); len(m) > 0 {
			out = append(out, parseTenant(m))
		}
	}
	return out, nil
}

// UpdateTenant implements store.Store (update_tenant.lua).
func (s *Store) UpdateTenant(ctx context.Context, p *store.UpdateTenantParams) (*store.Tenant, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var maxInflight int
	var ttl, retention int64
	if p.MaxInflight != nil {
		maxInflight = *p.MaxInflight
	}
	if p.DedupTTL != nil {
		ttl = durUS(*p.DedupTTL)
	}
	if p.Retention != nil {
		retention = durUS(*p.Retention)
	}
	var maxBytes, eventRet int64
	if p.MaxStoredBytes != nil {
		maxBytes = *p.MaxStoredBytes
	}
	if p.EventRetention != nil {
		eventRet = durUS(*p.EventRetention)
	}
	arr, err := s.run(ctx, "update tenant", scriptUpdateTenant, []string{s.k.tenant(p.Name)}, s.k.ns,
		flag(p.MaxInflight != nil), maxInflight, flag(p.DedupTTL != nil), itoa(ttl),
		flag(p.Retention != nil), itoa(retention), flag(p.Disabled != nil), flag(p.Disabled != nil && *p.Disabled),
		flag(p.MaxStoredBytes != nil), itoa(maxBytes), flag(p.EventRetention != nil), itoa(eventRet))
	if err != nil {
		return nil, err
	}
	if err := status(arr, fmt.Sprintf("tenant %q", p.Name)); err != nil {
		return nil, err
	}
	return parseTenant(asMap(at(arr, 1))), nil
}

// DeleteTenant implements store.Store (delete_tenant.lua).
func (s *Store) DeleteTenant(ctx context.Context, p *store.DeleteTenantParams) error {
	t := p.Name
	arr, err := s.run(ctx, "delete tenant", scriptDeleteTenant,
		[]string{s.k.tenant(t), s.k.tenants(), s.k.listTenant(t), s.k.dedup(t), s.k.dedupExp(), s.k.schedules(t),
			s.k.nextRun(), s.k.rateLimits(t), s.k.keyIDs(t)},
		s.k.ns, t, flag(p.Force))
	if err != nil {
		return err
	}
	return status(arr, fmt.Sprintf("tenant %q", t))
}

// AddAPIKey implements store.Store (add_api_key.lua).
func (s *Store) AddAPIKey(ctx context.Context, p *store.AddAPIKeyParams) error {
	arr, err := s.run(ctx, "add api key", scriptAddAPIKey,
		[]string{s.k.tenant(p.Tenant), s.k.apiKey(p.KeyHash), s.k.keyIDs(p.Tenant)},
		s.k.ns, p.Tenant, itoa(us(now(p.Now))), store.KeyIDOrNew(p.KeyID), p.KeyHash)
	if err != nil {
		return err
	}
	return status(arr, fmt.Sprintf("tenant %q", p.Tenant))
}

// LookupAPIKey implements store.Store.
func (s *Store) LookupAPIKey(ctx context.Context, p *store.LookupAPIKeyParams) (*store.APIKey, error) {
	return s.lookupAPIKey(ctx, p, nil)
}

// lookupAPIKey is LookupAPIKey; tenantHash, when not nil, says where a
// tenant's hash is (the tenant router's namespaces), else it is s's.
func (s *Store) lookupAPIKey(ctx context.Context, p *store.LookupAPIKeyParams, tenantHash func(t string) (*Store, string)) (*store.APIKey, error) {
	m, err := s.rdb.HGetAll(ctx, s.k.apiKey(p.KeyHash)).Result()
	if err != nil {
		return nil, fmt.Errorf("redis: lookup api key: %w", interpretError(err))
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("api key: %w", store.ErrNotFound)
	}
	k := &store.APIKey{Admin: m["admin"] == "1", Tenant: m["tenant"], KeyID: m["key_id"]}
	if m["used"] != "" {
		k.LastUsedAt = fromUS(hashInt(m, "used"))
	}
	if k.Tenant != "" {
		// A second read: the tenant's flag may change between the two,
		// as it may just after a read of both.
		hs, key := s, s.k.tenant(k.Tenant)
		if tenantHash != nil {
			hs, key = tenantHash(k.Tenant)
		}
		vals, err := hs.rdb.HMGet(ctx, key, "name", "disabled").Result()
		if err != nil {
			return nil, fmt.Errorf("redis: lookup api key: %w", interpretError(err))
		}
		if vals[0] == nil && tenantHash != nil {
			// The tenant router's tenant hash is in the tenant's namespace,
			// written after the key (CreateTenant) and deleted before it
			// (DeleteTenant): a crash between the two leaves a key of a
			// tenant that is not there, which authenticates nothing.
			return nil, fmt.Errorf("api key: tenant %s: %w", k.Tenant, store.ErrNotFound)
		}
		k.TenantDisabled = vals[1] == "1"
	}
	return k, nil
}

// EnsureAdminKey implements store.Store (ensure_admin_key.lua).
func (s *Store) EnsureAdminKey(ctx context.Context, p *store.EnsureAdminKeyParams) (*store.EnsureAdminKeyResult, error) {
	arr, err := s.run(ctx, "ensure admin key", scriptEnsureAdminKey, []string{s.k.admin(), s.k.apiKey(p.KeyHash)},
		s.k.ns, p.KeyHash, itoa(us(now(p.Now))), store.NewKeyID())
	if err != nil {
		return nil, err
	}
	return &store.EnsureAdminKeyResult{Created: asInt(at(arr, 0)) == 1}, nil
}
