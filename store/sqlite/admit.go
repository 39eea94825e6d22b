package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/latch-run/latch/store"
)

// Admit implements store.Store. The whole group is one IMMEDIATE
// transaction: the dedup lookup, the quota check, the execution row (which
// is also its queue entry) and the dedup mapping are written together or
// not at all, so no reader or crash can ever see a key without its row.
func (s *Store) Admit(ctx context.Context, p *store.AdmitParams) (*store.AdmitResult, error) {
	t := now(p.Now)
	res := &store.AdmitResult{Items: make([]store.Admitted, len(p.Items))}
	err := s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) (bool, error) {
		var maxInflight, inflight int
		var dedupTTL int64
		err := tx.QueryRowContext(ctx,
			`SELECT max_inflight, inflight, dedup_ttl FROM tenants WHERE name = ?`, p.Tenant).
			Scan(&maxInflight, &inflight, &dedupTTL)
		if errors.Is(err, sql.ErrNoRows) {
			return false, fmt.Errorf("tenant %q: %w", p.Tenant, store.ErrNotFound)
		}
		if err != nil {
			return false, fmt.Errorf("sqlite: admit: %w", err)
		}
		added := 0
		for i := range p.Items {
			item, err := admitOne(ctx, tx, p.Tenant, &p.Items[i], t, dedupTTL, maxInflight, inflight+added)
			if err != nil {
				return false, err
			}
			if item.Execution != nil && !item.Deduplicated {
				added++
			}
			res.Items[i] = item
		}
		if added == 0 {
			return false, nil
		}
		_, err = tx.ExecContext(ctx, `UPDATE tenants SET inflight = inflight + ? WHERE name = ?`, added, p.Tenant)
		if err != nil {
			return false, fmt.Errorf("sqlite: admit: %w", err)
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// admitOne decides one submission inside the admit transaction. A business
// refusal is returned in Admitted.Err; a non-nil error aborts the group.
func admitOne(ctx context.Context, tx *sql.Tx, tenant string, sub *store.Submission,
	t time.Time, dedupTTL int64, maxInflight, inflight int) (store.Admitted, error) {
	if sub.Kind == "" {
		return store.Admitted{Err: fmt.Errorf("%w: kind is empty", store.ErrInvalid)}, nil
	}
	payload := []byte(sub.Payload)
	if len(payload) == 0 {
		payload = []byte("{}")
	}
	if sub.DedupKey != "" {
		hit, found, err := lookupDedup(ctx, tx, tenant, sub, payload, t)
		if found || err != nil {
			return hit, err
		}
	}
	if inflight+1 > maxInflight {
		return store.Admitted{Err: fmt.Errorf("tenant %q has %d of %d in flight: %w",
			tenant, inflight, maxInflight, store.ErrQuotaExceeded)}, nil
	}
	e := newExecution(tenant, sub, t)
	if err := insertExecution(ctx, tx, e); err != nil {
		return store.Admitted{}, err
	}
	if sub.DedupKey != "" {
		_, err := tx.ExecContext(ctx,
			`INSERT INTO dedup_keys (tenant, dedup_key, execution_id, expires_at) VALUES (?, ?, ?, ?)`,
			tenant, sub.DedupKey, e.ID, ns(t)+dedupTTL)
		if err != nil {
			return store.Admitted{}, fmt.Errorf("sqlite: admit: dedup key: %w", err)
		}
	}
	return store.Admitted{Execution: e}, nil
}

// lookupDedup resolves a dedup key. found is true when the key maps to a
// live execution (deduplicated, or reused with other content), false when
// the submission must be admitted as new. An expired mapping is
// removed by compare-and-delete on the execution it names.
func lookupDedup(ctx context.Context, tx *sql.Tx, tenant string, sub *store.Submission,
	payload []byte, t time.Time) (hit store.Admitted, found bool, err error) {
	var execID string
	var expires int64
	err = tx.QueryRowContext(ctx,
		`SELECT execution_id, expires_at FROM dedup_keys WHERE tenant = ? AND dedup_key = ?`,
		tenant, sub.DedupKey).Scan(&execID, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return hit, false, nil
	}
	if err != nil {
		return hit, false, fmt.Errorf("sqlite: admit: dedup lookup: %w", err)
	}
	if expires > ns(t) {
		e, err := getExecution(ctx, tx, tenant, execID)
		switch {
		case err == nil:
			if e.Kind != sub.Kind || !bytes.Equal(e.Payload, payload) {
				return store.Admitted{Err: fmt.Errorf("dedup key %q maps to execution %s: %w",
					sub.DedupKey, e.ID, store.ErrDedupKeyReused)}, true, nil
			}
			return store.Admitted{Execution: e, Deduplicated: true}, true, nil
		case !errors.Is(err, store.ErrNotFound):
			return hit, false, err
		}
		// A mapping without its execution cannot be made by this store; if
		// one exists anyway it is stale, and is removed below.
	}
	_, err = tx.ExecContext(ctx,
		`DELETE FROM dedup_keys WHERE tenant = ? AND dedup_key = ? AND execution_id = ?`,
		tenant, sub.DedupKey, execID)
	if err != nil {
		return hit, false, fmt.Errorf("sqlite: admit: dedup expiry: %w", err)
	}
	return hit, false, nil
}

func newExecution(tenant string, sub *store.Submission, t time.Time) *store.Execution {
	id := sub.ID
	if id == "" {
		id = uuid.Must(uuid.NewV7()).String()
	}
	return store.NewExecution(id, tenant, sub, t)
}

func insertExecution(ctx context.Context, tx *sql.Tx, e *store.Execution) error {
	var climit sql.NullInt64
	if e.ConcurrencyKey != "" {
		climit = sql.NullInt64{Int64: int64(e.ConcurrencyLimit), Valid: true}
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO executions (id, tenant, kind, queue, priority, status,
		dedup_key, concurrency_key, concurrency_limit, rate_key, payload, max_attempts,
		timeout_seconds, schedule, created_at, run_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		e.ID, e.Tenant, e.Kind, e.Queue, e.Priority, string(e.Status),
		nullString(e.DedupKey), nullString(e.ConcurrencyKey), climit, nullString(e.RateKey),
		string(e.Payload), e.MaxAttempts, e.TimeoutSeconds, nullString(e.Schedule),
		ns(e.CreatedAt), ns(e.RunAt))
	if err != nil {
		return fmt.Errorf("sqlite: insert execution: %w", err)
	}
	return nil
}
