package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/latch-run/latch/store"
)

// sqlNextKind finds the next (tenant, kind) after the given one in the
// lanes (executions_ready_kind holds the queued and scheduled executions
// by tenant and kind): one probe. sqlKindReady asks whether the pair has
// an execution ready at now: the first of its lane that is queued or
// due.
const (
	sqlNextKind = `SELECT tenant, kind FROM executions INDEXED BY executions_ready_kind
		WHERE status IN ('queued', 'scheduled') AND (tenant, kind) > (?, ?) ORDER BY tenant, kind LIMIT 1`
	sqlNextKindOf = `SELECT tenant, kind FROM executions INDEXED BY executions_ready_kind
		WHERE status IN ('queued', 'scheduled') AND tenant = ? AND kind > ? ORDER BY tenant, kind LIMIT 1`
	sqlKindReady = `SELECT EXISTS (SELECT 1 FROM executions INDEXED BY executions_ready_kind
		WHERE status IN ('queued', 'scheduled') AND tenant = ? AND kind = ? AND (status = 'queued' OR run_at <= ?))`
)

// ReadyKinds implements store.Store: a skip scan of the lanes in one read
// transaction, two probes per pair.
func (s *Store) ReadyKinds(ctx context.Context, p *store.ReadyKindsParams) ([]*store.ReadyKind, error) {
	t := ns(now(p.Now))
	tx, err := s.read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("sqlite: ready kinds: %w", interpretError(err))
	}
	defer func() { _ = tx.Rollback() }()
	var out []*store.ReadyKind
	tenant, kind := p.Tenant, ""
	for len(out) < store.MaxReadyKinds {
		var row *sql.Row
		if p.Tenant != "" {
			row = tx.QueryRowContext(ctx, sqlNextKindOf, p.Tenant, kind)
		} else {
			row = tx.QueryRowContext(ctx, sqlNextKind, tenant, kind)
		}
		if err := row.Scan(&tenant, &kind); errors.Is(err, sql.ErrNoRows) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("sqlite: ready kinds: %w", interpretError(err))
		}
		var ready bool
		if err := tx.QueryRowContext(ctx, sqlKindReady, tenant, kind, t).Scan(&ready); err != nil {
			return nil, fmt.Errorf("sqlite: ready kinds: %w", interpretError(err))
		}
		if ready {
			out = append(out, &store.ReadyKind{Tenant: tenant, Kind: kind})
		}
	}
	return out, nil
}
