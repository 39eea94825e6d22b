package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/latch-run/latch/store"
)

// CreateTenant implements store.Store.
func (s *Store) CreateTenant(ctx context.Context, p *store.CreateTenantParams) (*store.Tenant, error) {
	t := now(p.Now)
	ten, err := p.NewTenant(fromNS(ns(t)))
	if err != nil {
		return nil, err
	}
	err = s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) (bool, error) {
		_, err := tx.ExecContext(ctx, `INSERT INTO tenants (name, max_inflight, dedup_ttl, retention, created_at, max_stored_bytes,
			event_retention) VALUES (?, ?, ?, ?, ?, ?, ?)`, ten.Name, ten.MaxInflight, int64(ten.DedupTTL), int64(ten.Retention),
			ns(t), ten.MaxStoredBytes, int64(ten.EventRetention))
		if isUniqueViolation(err) {
			return false, fmt.Errorf("tenant %q: %w", p.Name, store.ErrTenantExists)
		}
		if err != nil {
			return false, fmt.Errorf("sqlite: create tenant: %w", err)
		}
		if p.KeyHash != "" {
			if _, err := tx.ExecContext(ctx, `INSERT INTO api_keys (hash, tenant, key_id, created_at) VALUES (?, ?, ?, ?)`,
				p.KeyHash, p.Name, store.KeyIDOrNew(p.KeyID), ns(t)); err != nil {
				return false, fmt.Errorf("sqlite: create tenant key: %w", err)
			}
		}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	return ten, nil
}

// GetTenant implements store.Store.
func (s *Store) GetTenant(ctx context.Context, p *store.GetTenantParams) (*store.Tenant, error) {
	return interpreted(getTenant(ctx, s.read, p.Name))
}

// tenantColumns are what scanTenant reads, in its order.
const tenantColumns = `name, max_inflight, inflight, dedup_ttl, retention, created_at, disabled,
	max_stored_bytes, stored_bytes, event_retention`

// scanTenant reads one row of tenantColumns.
func scanTenant(row interface{ Scan(...any) error }) (*store.Tenant, error) {
	var ten store.Tenant
	var ttl, ret, created, events int64
	if err := row.Scan(&ten.Name, &ten.MaxInflight, &ten.Inflight, &ttl, &ret, &created, &ten.Disabled,
		&ten.MaxStoredBytes, &ten.StoredBytes, &events); err != nil {
		return nil, err
	}
	ten.EventRetention = durationNS(events)
	ten.DedupTTL, ten.Retention, ten.CreatedAt = durationNS(ttl), durationNS(ret), fromNS(created)
	return &ten, nil
}

func getTenant(ctx context.Context, q querier, name string) (*store.Tenant, error) {
	ten, err := scanTenant(q.QueryRowContext(ctx, `SELECT `+tenantColumns+` FROM tenants WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("tenant %q: %w", name, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: get tenant: %w", err)
	}
	return ten, nil
}

// ListTenants implements store.Store.
func (s *Store) ListTenants(ctx context.Context, p *store.ListTenantsParams) ([]*store.Tenant, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT `+tenantColumns+` FROM tenants WHERE name > ?
		ORDER BY name LIMIT ?`, p.After, p.PageLimit())
	if err != nil {
		return nil, fmt.Errorf("sqlite: list tenants: %w", interpretError(err))
	}
	defer rows.Close()
	var out []*store.Tenant
	for rows.Next() {
		ten, err := scanTenant(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list tenants: %w", interpretError(err))
		}
		out = append(out, ten)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list tenants: %w", interpretError(err))
	}
	return out, nil
}

// UpdateTenant implements store.Store.
func (s *Store) UpdateTenant(ctx context.Context, p *store.UpdateTenantParams) (*store.Tenant, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var ten *store.Tenant
	err := s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) (bool, error) {
		var sets []string
		var args []any
		if p.MaxInflight != nil {
			sets, args = append(sets, "max_inflight = ?"), append(args, *p.MaxInflight)
		}
		if p.DedupTTL != nil {
			sets, args = append(sets, "dedup_ttl = ?"), append(args, int64(*p.DedupTTL))
		}
		if p.Retention != nil {
			sets, args = append(sets, "retention = ?"), append(args, int64(*p.Retention))
		}
		if p.Disabled != nil {
			sets, args = append(sets, "disabled = ?"), append(args, *p.Disabled)
		}
		if p.MaxStoredBytes != nil {
			sets, args = append(sets, "max_stored_bytes = ?"), append(args, *p.MaxStoredBytes)
		}
		if p.EventRetention != nil {
			sets, args = append(sets, "event_retention = ?"), append(args, int64(*p.EventRetention))
		}
		if len(sets) > 0 {
			args = append(args, p.Name)
			if _, err := tx.ExecContext(ctx, `UPDATE tenants SET `+strings.Join(sets, ", ")+` WHERE name = ?`, args...); err != nil {
				return false, fmt.Errorf("sqlite: update tenant: %w", err)
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

// DeleteTenant implements store.Store, as one transaction. The foreign
// keys remove its keys, schedules and rate limits with the tenant row;
// executions, their journals, signals, consumed events and histories,
// dedup keys, events, subscriptions, workers and activity minutes have none
// (admission does not look the tenant up by key), so they are deleted here.
func (s *Store) DeleteTenant(ctx context.Context, p *store.DeleteTenantParams) error {
	return s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) (bool, error) {
		if _, err := getTenant(ctx, tx, p.Name); err != nil {
			return false, err
		}
		if !p.Force {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM executions
				WHERE tenant = ? AND status IN ('scheduled', 'queued', 'running', 'suspended')`, p.Name).Scan(&n); err != nil {
				return false, fmt.Errorf("sqlite: delete tenant: %w", err)
			}
			if n > 0 {
				return false, fmt.Errorf("tenant %q has %d executions in flight: %w", p.Name, n, store.ErrNotTerminal)
			}
		}
		owned := `execution_id IN (SELECT id FROM executions WHERE tenant = ?)`
		if err := deleteFlow(ctx, tx, owned, p.Name); err != nil {
			return false, err
		}
		// Children never cross tenants: the tenant's spawns are its own.
		if _, err := tx.ExecContext(ctx, `DELETE FROM spawns WHERE parent_id IN (SELECT id FROM executions WHERE tenant = ?)`,
			p.Name); err != nil {
			return false, fmt.Errorf("sqlite: delete tenant: %w", err)
		}
		if err := deleteRuns(ctx, tx, owned, p.Name); err != nil {
			return false, err
		}
		for _, q := range []string{
			`DELETE FROM console_sessions WHERE key_hash IN (SELECT hash FROM api_keys WHERE tenant = ?)`,
			`DELETE FROM dedup_keys WHERE tenant = ?`,
			`DELETE FROM events WHERE tenant = ?`,
			`DELETE FROM subscriptions WHERE tenant = ?`,
			`DELETE FROM workers WHERE tenant = ?`,
			`DELETE FROM activity WHERE tenant = ?`,
			`DELETE FROM executions WHERE tenant = ?`,
			`DELETE FROM tenants WHERE name = ?`,
		} {
			if _, err := tx.ExecContext(ctx, q, p.Name); err != nil {
				return false, fmt.Errorf("sqlite: delete tenant: %w", err)
			}
		}
		return true, nil
	})
}

// AddAPIKey implements store.Store.
func (s *Store) AddAPIKey(ctx context.Context, p *store.AddAPIKeyParams) error {
	t := now(p.Now)
	return s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) (bool, error) {
		if _, err := getTenant(ctx, tx, p.Tenant); err != nil {
			return false, err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO api_keys (hash, tenant, key_id, created_at) VALUES (?, ?, ?, ?)`,
			p.KeyHash, p.Tenant, store.KeyIDOrNew(p.KeyID), ns(t))
		if err != nil {
			return false, fmt.Errorf("sqlite: add api key: %w", err)
		}
		return false, nil
	})
}

// LookupAPIKey implements store.Store.
func (s *Store) LookupAPIKey(ctx context.Context, p *store.LookupAPIKeyParams) (*store.APIKey, error) {
	var tenant, id sql.NullString
	var admin, disabled int
	var used sql.NullInt64
	err := s.read.QueryRowContext(ctx, `SELECT k.tenant, k.admin, k.key_id, k.last_used_at, coalesce(t.disabled, 0)
		FROM api_keys k LEFT JOIN tenants t ON t.name = k.tenant WHERE k.hash = ?`, p.KeyHash).
		Scan(&tenant, &admin, &id, &used, &disabled)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("api key: %w", store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: lookup api key: %w", interpretError(err))
	}
	k := &store.APIKey{Admin: admin != 0, Tenant: tenant.String, KeyID: id.String, TenantDisabled: disabled != 0}
	if used.Valid {
		k.LastUsedAt = fromNS(used.Int64)
	}
	return k, nil
}

// EnsureAdminKey implements store.Store.
func (s *Store) EnsureAdminKey(ctx context.Context, p *store.EnsureAdminKeyParams) (*store.EnsureAdminKeyResult, error) {
	t := now(p.Now)
	res := &store.EnsureAdminKeyResult{}
	err := s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) (bool, error) {
		r, err := tx.ExecContext(ctx, `INSERT INTO api_keys (hash, admin, key_id, created_at) VALUES (?, 1, ?, ?)
			ON CONFLICT DO NOTHING`, p.KeyHash, store.NewKeyID(), ns(t))
		if err != nil {
			return false, fmt.Errorf("sqlite: ensure admin key: %w", err)
		}
		n, _ := r.RowsAffected()
		res.Created = n == 1
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}
