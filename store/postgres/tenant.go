package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/latch-run/latch/store"
)

// Tenant statements.
const (
	// The tenant, its quota shards, its storage count and its first key, in one statement. A
	// name already taken inserts nothing (the primary key decides); created
	// is then false.
	sqlCreateTenant = `
WITH t AS (
    INSERT INTO latch_tenants (name, max_inflight, dedup_ttl, retention, created_at, event_retention)
    VALUES ($1, $2, $3, $4, $5, $10)
    ON CONFLICT DO NOTHING
    RETURNING name
), q AS (
    INSERT INTO latch_quota_shards (tenant, shard, free)
    SELECT t.name, s, $2 / $7 + CASE WHEN s < $2 % $7 THEN 1 ELSE 0 END
    FROM t, generate_series(0, $7 - 1) AS s
), k AS (
    INSERT INTO latch_api_keys (hash, tenant, key_id, created_at)
    SELECT $6, t.name, $8, $5 FROM t WHERE $6 <> ''
), st AS (
    INSERT INTO latch_storage (tenant, max_bytes) SELECT t.name, $9 FROM t
)
SELECT EXISTS (SELECT 1 FROM t)`

	// Inflight is exact: the units of the tenant's quota in use, which every
	// admission and every finish move in the same transaction as the
	// execution's status. When frozen (free = -1, see the migration) the
	// tenant owes debt units beyond max_inflight.
	sqlGetTenant = `
SELECT t.name, t.max_inflight, t.dedup_ttl, t.retention, t.created_at, t.disabled, t.event_retention,
    CASE WHEN bool_or(q.free < 0) THEN t.max_inflight + sum(q.debt)
         ELSE t.max_inflight - coalesce(sum(q.free), 0) END,
    ` + sqlStorageColumns + `
FROM latch_tenants t LEFT JOIN latch_quota_shards q ON q.tenant = t.name
WHERE t.name = $1
GROUP BY t.name`

	sqlLockTenant = `SELECT max_inflight FROM latch_tenants WHERE name = $1 FOR UPDATE`

	sqlUpdateTenant = `
UPDATE latch_tenants SET max_inflight = coalesce($2, max_inflight),
    dedup_ttl = coalesce($3, dedup_ttl), retention = coalesce($4, retention),
    disabled = coalesce($5, disabled), event_retention = coalesce($6, event_retention)
WHERE name = $1`

	sqlDeleteTenantLockSchedules = `SELECT 1 FROM latch_schedules WHERE tenant = $1 ORDER BY name FOR UPDATE`
	sqlDeleteTenantLockInflight  = `SELECT 1 FROM latch_executions
WHERE tenant = $1 AND status IN ('scheduled', 'queued', 'running', 'suspended') ORDER BY id FOR UPDATE`

	// Everything of the tenant without a foreign key to it (executions with
	// their journals, signals, runs and consumed events; its events and
	// subscriptions; its workers and activity minutes),
	// then the tenant (the foreign keys take the rest).
	sqlDeleteTenant = `
WITH wk AS (
    DELETE FROM latch_workers WHERE tenant = $1
), ac AS (
    DELETE FROM latch_activity WHERE tenant = $1
), ses AS (
    DELETE FROM latch_console_sessions WHERE key_hash IN (SELECT hash FROM latch_api_keys WHERE tenant = $1)
), d AS (
    DELETE FROM latch_dedup_keys WHERE tenant = $1
), e AS (
    DELETE FROM latch_executions WHERE tenant = $1 RETURNING id
), h AS (
    SELECT latch_delete_history(ARRAY(SELECT id FROM e)) AS gone
), ev AS (
    SELECT latch_delete_events($1) AS gone
)
DELETE FROM latch_tenants WHERE name = $1 AND (SELECT gone FROM h) IS NOT NULL AND (SELECT gone FROM ev) IS NOT NULL`

	sqlAddAPIKey = `INSERT INTO latch_api_keys (hash, tenant, key_id, created_at) VALUES ($1, $2, $4, $3)`

	sqlLookupAPIKey = `SELECT coalesce(k.tenant, ''), k.admin, k.key_id, k.last_used_at, coalesce(t.disabled, false)
FROM latch_api_keys k LEFT JOIN latch_tenants t ON t.name = k.tenant WHERE k.hash = $1`

	// The unique index latch_api_keys_one_admin lets one admin key exist;
	// whoever inserts second inserts nothing.
	sqlEnsureAdminKey = `INSERT INTO latch_api_keys (hash, admin, key_id, created_at) VALUES ($1, true, $3, $2)
ON CONFLICT DO NOTHING`
)

// CreateTenant implements store.Store.
func (s *Store) CreateTenant(ctx context.Context, p *store.CreateTenantParams) (*store.Tenant, error) {
	t := now(p.Now)
	ten, err := p.NewTenant(t)
	if err != nil {
		return nil, err
	}
	var created bool
	err = s.write(ctx, func(ctx context.Context, c *pgxpool.Conn) error {
		return c.QueryRow(ctx, sqlCreateTenant, ten.Name, ten.MaxInflight, int64(ten.DedupTTL),
			int64(ten.Retention), t, p.KeyHash, quotaShards, store.KeyIDOrNew(p.KeyID), ten.MaxStoredBytes,
			int64(ten.EventRetention)).Scan(&created)
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: create tenant: %w", interpretError(err))
	}
	if !created {
		return nil, fmt.Errorf("tenant %q: %w", p.Name, store.ErrTenantExists)
	}
	return ten, nil
}

// GetTenant implements store.Store.
func (s *Store) GetTenant(ctx context.Context, p *store.GetTenantParams) (*store.Tenant, error) {
	return getTenant(ctx, s.pool, p.Name)
}

func getTenant(ctx context.Context, q querier, name string) (*store.Tenant, error) {
	var ten store.Tenant
	var ttl, ret, evret int64
	err := q.QueryRow(ctx, sqlGetTenant, name).Scan(&ten.Name, &ten.MaxInflight, &ttl, &ret, &ten.CreatedAt, &ten.Disabled, &evret, &ten.Inflight,
		&ten.MaxStoredBytes, &ten.StoredBytes)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("tenant %q: %w", name, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: get tenant: %w", interpretError(err))
	}
	ten.DedupTTL, ten.Retention, ten.CreatedAt = durationNS(ttl), durationNS(ret), ten.CreatedAt.UTC()
	ten.EventRetention = durationNS(evret)
	return &ten, nil
}

// UpdateTenant implements store.Store, as one transaction. A new
// max_inflight re-spreads the tenant's quota from the ground truth
// (resetQuota), with every shard locked.
func (s *Store) UpdateTenant(ctx context.Context, p *store.UpdateTenantParams) (*store.Tenant, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var ten *store.Tenant
	err := s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) (bool, error) {
		var cur int
		if err := tx.QueryRow(ctx, sqlLockTenant, p.Name).Scan(&cur); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return false, fmt.Errorf("tenant %q: %w", p.Name, store.ErrNotFound)
			}
			return false, err
		}
		var ttl, ret *int64
		if p.DedupTTL != nil {
			v := int64(*p.DedupTTL)
			ttl = &v
		}
		if p.Retention != nil {
			v := int64(*p.Retention)
			ret = &v
		}
		var evret *int64
		if p.EventRetention != nil {
			v := int64(*p.EventRetention)
			evret = &v
		}
		if _, err := tx.Exec(ctx, sqlUpdateTenant, p.Name, p.MaxInflight, ttl, ret, p.Disabled, evret); err != nil {
			return false, err
		}
		// The quota shards before the storage row: the store's lock order
		// (doc.go).
		if p.MaxInflight != nil && *p.MaxInflight != cur {
			if err := resetQuota(ctx, tx, p.Name, *p.MaxInflight); err != nil {
				return false, err
			}
		}
		if p.MaxStoredBytes != nil {
			if _, err := tx.Exec(ctx, sqlSetStorageBudget, p.Name, *p.MaxStoredBytes); err != nil {
				return false, err
			}
		}
		var err error
		ten, err = getTenant(ctx, tx, p.Name)
		return false, err
	})
	if err != nil {
		return nil, err
	}
	return ten, nil
}

// DeleteTenant implements store.Store, as one transaction. It locks the
// tenant, its schedules (a fire of one waits, then finds it gone), its
// executions in flight (a worker's Complete waits, then loses its lease)
// and then every quota shard (an admission waits, then finds no quota): so
// no execution of the tenant is added or ended while it decides, and the
// locks are taken in the order those operations take them. The foreign
// keys remove the keys, shards, schedules and rate limits with the tenant
// row; executions and dedup keys have none (doc.go), so they go here.
func (s *Store) DeleteTenant(ctx context.Context, p *store.DeleteTenantParams) error {
	return s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) (bool, error) {
		if _, err := tx.Exec(ctx, sqlDeleteTenantLockSchedules, p.Name); err != nil {
			return false, err
		}
		var cur int
		if err := tx.QueryRow(ctx, sqlLockTenant, p.Name).Scan(&cur); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return false, fmt.Errorf("tenant %q: %w", p.Name, store.ErrNotFound)
			}
			return false, err
		}
		if _, err := tx.Exec(ctx, sqlDeleteTenantLockInflight, p.Name); err != nil {
			return false, err
		}
		if _, err := lockQuota(ctx, tx, p.Name); err != nil {
			return false, err
		}
		if !p.Force {
			var n int
			if err := tx.QueryRow(ctx, sqlCountInflight, p.Name).Scan(&n); err != nil {
				return false, err
			}
			if n > 0 {
				return false, fmt.Errorf("tenant %q has %d executions in flight: %w", p.Name, n, store.ErrNotTerminal)
			}
		}
		_, err := tx.Exec(ctx, sqlDeleteTenant, p.Name)
		return true, err
	})
}

// AddAPIKey implements store.Store: one statement; the foreign key refuses
// an unknown tenant.
func (s *Store) AddAPIKey(ctx context.Context, p *store.AddAPIKeyParams) error {
	err := s.write(ctx, func(ctx context.Context, c *pgxpool.Conn) error {
		_, err := c.Exec(ctx, sqlAddAPIKey, p.KeyHash, p.Tenant, now(p.Now), store.KeyIDOrNew(p.KeyID))
		return err
	})
	if pgCode(err) == codeForeignKeyViolation {
		return fmt.Errorf("tenant %q: %w", p.Tenant, store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("postgres: add api key: %w", interpretError(err))
	}
	return nil
}

// LookupAPIKey implements store.Store.
func (s *Store) LookupAPIKey(ctx context.Context, p *store.LookupAPIKeyParams) (*store.APIKey, error) {
	var k store.APIKey
	var used *time.Time
	err := s.pool.QueryRow(ctx, sqlLookupAPIKey, p.KeyHash).Scan(&k.Tenant, &k.Admin, &k.KeyID, &used, &k.TenantDisabled)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("api key: %w", store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: lookup api key: %w", interpretError(err))
	}
	if used != nil {
		k.LastUsedAt = used.UTC()
	}
	return &k, nil
}

// EnsureAdminKey implements store.Store: one statement.
func (s *Store) EnsureAdminKey(ctx context.Context, p *store.EnsureAdminKeyParams) (*store.EnsureAdminKeyResult, error) {
	var created bool
	err := s.write(ctx, func(ctx context.Context, c *pgxpool.Conn) error {
		tag, err := c.Exec(ctx, sqlEnsureAdminKey, p.KeyHash, now(p.Now), store.NewKeyID())
		created = tag.RowsAffected() == 1
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: ensure admin key: %w", interpretError(err))
	}
	return &store.EnsureAdminKeyResult{Created: created}, nil
}

func durationNS(v int64) time.Duration { return time.Duration(v) }
