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
		q, err := loadQuota(ctx, tx, p.Tenant)
		if err != nil {
			return false, err
		}
		added, stored := 0, q.stored
		for i := range p.Items {
			if res.Items[i].Err = store.CheckItem(&p.Items[i]); res.Items[i].Err != nil {
				continue // a refusal of this item, not of the group
			}
			item, err := admitOne(ctx, tx, p.Tenant, &p.Items[i], t, &q, added)
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
		return true, addInflight(ctx, tx, p.Tenant, added, q.stored-stored)
	})
	if err != nil {
		return nil, err
	}
	return s.feed.Admitted(res, nil)
}

// quota is what admission needs of a tenant, read inside its transaction.
// stored counts the bytes admitted so far in the transaction too.
type quota struct {
	maxInflight, inflight int
	dedupTTL              int64
	maxStored, stored     int64
}

// loadQuota reads the tenant's quota and dedup TTL; ErrNotFound for an
// unknown tenant.
func loadQuota(ctx context.Context, tx *sql.Tx, tenant string) (quota, error) {
	var q quota
	err := tx.QueryRowContext(ctx,
		`SELECT max_inflight, inflight, dedup_ttl, max_stored_bytes, stored_bytes FROM tenants WHERE name = ?`, tenant).
		Scan(&q.maxInflight, &q.inflight, &q.dedupTTL, &q.maxStored, &q.stored)
	if errors.Is(err, sql.ErrNoRows) {
		return q, fmt.Errorf("tenant %q: %w", tenant, store.ErrNotFound)
	}
	if err != nil {
		return q, fmt.Errorf("sqlite: admit: %w", err)
	}
	return q, nil
}

// addInflight takes n more quota slots of the tenant (I3) and counts the
// bytes admitted with them.
func addInflight(ctx context.Context, tx *sql.Tx, tenant string, n int, bytes int64) error {
	_, err := tx.ExecContext(ctx, `UPDATE tenants SET inflight = inflight + ?, stored_bytes = stored_bytes + ?
		WHERE name = ?`, n, bytes, tenant)
	if err != nil {
		return fmt.Errorf("sqlite: admit: %w", err)
	}
	return nil
}

// admitOne decides one submission inside the admit transaction, added
// executions after the quota q was read. A business refusal is returned in
// Admitted.Err; a non-nil error aborts the group.
func admitOne(ctx context.Context, tx *sql.Tx, tenant string, sub *store.Submission,
	t time.Time, q *quota, added int) (store.Admitted, error) {
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
	return admitNew(ctx, tx, tenant, sub, t, q, added)
}

// admitNew admits a submission whose dedup key (if any) maps to no live
// execution: the quota and storage checks, the execution row and its dedup
// mapping. It does not count the slot in tenants.inflight nor the bytes in
// tenants.stored_bytes; it adds the bytes to q.stored, and the caller adds
// its admissions up (addInflight).
func admitNew(ctx context.Context, tx *sql.Tx, tenant string, sub *store.Submission,
	t time.Time, q *quota, added int) (store.Admitted, error) {
	if q.inflight+added+1 > q.maxInflight {
		return store.Admitted{Err: fmt.Errorf("tenant %q has %d of %d in flight: %w",
			tenant, q.inflight+added, q.maxInflight, store.ErrQuotaExceeded)}, nil
	}
	e := store.NewExecution(newID(sub), tenant, sub, t)
	if q.stored+e.StoredBytes > q.maxStored {
		return store.Admitted{Err: fmt.Errorf("tenant %q stores %d of %d bytes; the payload has %d: %w",
			tenant, q.stored, q.maxStored, e.StoredBytes, store.ErrStorageExceeded)}, nil
	}
	if err := insertWithDedup(ctx, tx, e, t, q.dedupTTL); err != nil {
		return store.Admitted{}, err
	}
	q.stored += e.StoredBytes
	return store.Admitted{Execution: e}, nil
}

// insertWithDedup writes an execution and, if it has a dedup key, the key's
// mapping to it, expiring dedupTTL after t.
func insertWithDedup(ctx context.Context, tx *sql.Tx, e *store.Execution, t time.Time, dedupTTL int64) error {
	if err := insertExecution(ctx, tx, e, 0); err != nil {
		return err
	}
	if e.DedupKey == "" {
		return nil
	}
	_, err := tx.ExecContext(ctx,
		`INSERT INTO dedup_keys (tenant, dedup_key, execution_id, expires_at) VALUES (?, ?, ?, ?)`,
		e.Tenant, e.DedupKey, e.ID, ns(t)+dedupTTL)
	if err != nil {
		return fmt.Errorf("sqlite: admit: dedup key: %w", err)
	}
	return nil
}

// lookupDedup resolves a dedup key. found is true when the key maps to a
// live execution (deduplicated, or reused with other content), false when
// the submission must be admitted as new.
func lookupDedup(ctx context.Context, tx *sql.Tx, tenant string, sub *store.Submission,
	payload []byte, t time.Time) (hit store.Admitted, found bool, err error) {
	e, err := liveDedup(ctx, tx, tenant, sub.DedupKey, t)
	if e == nil || err != nil {
		return hit, false, err
	}
	if e.Kind != sub.Kind || !bytes.Equal(e.Payload, payload) {
		return store.Admitted{Err: fmt.Errorf("dedup key %q maps to execution %s: %w",
			sub.DedupKey, e.ID, store.ErrDedupKeyReused)}, true, nil
	}
	if err := countDedupHit(ctx, tx, e, t); err != nil {
		return hit, false, err
	}
	return store.Admitted{Execution: e, Deduplicated: true}, true, nil
}

// countDedupHit counts, in the step that answers it, a dedup hit on e (a
// submit or schedule tick its dedup key answered with e), and shows it in
// e. Only a hit writes: the path that admits a new execution pays nothing.
func countDedupHit(ctx context.Context, tx *sql.Tx, e *store.Execution, t time.Time) error {
	if _, err := tx.ExecContext(ctx, `UPDATE executions SET dedup_hits = dedup_hits + 1,
		last_dedup_hit_at = ? WHERE id = ?`, ns(t), e.ID); err != nil {
		return fmt.Errorf("sqlite: dedup hit: %w", err)
	}
	e.DedupHits++
	at := fromNS(ns(t))
	e.LastDedupHitAt = &at
	return nil
}

// liveDedup returns the execution the tenant's dedup key maps to at t, or
// nil when it maps to none. An expired mapping is removed by
// compare-and-delete on the execution it names.
func liveDedup(ctx context.Context, tx *sql.Tx, tenant, key string, t time.Time) (*store.Execution, error) {
	var execID string
	var expires int64
	err := tx.QueryRowContext(ctx,
		`SELECT execution_id, expires_at FROM dedup_keys WHERE tenant = ? AND dedup_key = ?`,
		tenant, key).Scan(&execID, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: admit: dedup lookup: %w", err)
	}
	if expires > ns(t) {
		e, err := getExecution(ctx, tx, tenant, execID)
		if err == nil || !errors.Is(err, store.ErrNotFound) {
			return e, err
		}
		// A mapping without its execution cannot be made by this store; if
		// one exists anyway it is stale, and is removed below.
	}
	_, err = tx.ExecContext(ctx,
		`DELETE FROM dedup_keys WHERE tenant = ? AND dedup_key = ? AND execution_id = ?`,
		tenant, key, execID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: admit: dedup expiry: %w", err)
	}
	return nil, nil
}

// newID is the id of sub's execution: its own, or a time-ordered UUIDv7.
func newID(sub *store.Submission) string {
	if sub.ID != "" {
		return sub.ID
	}
	return uuid.Must(uuid.NewV7()).String()
}

// insertExecution writes e; a child (e.ParentID set) with seq, its place
// among its parent's children.
func insertExecution(ctx context.Context, tx *sql.Tx, e *store.Execution, seq int) error {
	var climit, parentSeq sql.NullInt64
	if e.ConcurrencyKey != "" {
		climit = sql.NullInt64{Int64: int64(e.ConcurrencyLimit), Valid: true}
	}
	if e.ParentID != "" {
		parentSeq = sql.NullInt64{Int64: int64(seq), Valid: true}
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO executions (id, tenant, kind, queue, priority, status,
		dedup_key, concurrency_key, concurrency_limit, rate_key, payload, max_attempts,
		timeout_seconds, schedule, created_at, run_at, finished_at, trace_parent, stored_bytes,
		parent_id, parent_step, parent_seq, on_parent_end, depth)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		e.ID, e.Tenant, e.Kind, e.Queue, e.Priority, string(e.Status),
		nullString(e.DedupKey), nullString(e.ConcurrencyKey), climit, nullString(e.RateKey),
		string(e.Payload), e.MaxAttempts, e.TimeoutSeconds, nullString(e.Schedule),
		ns(e.CreatedAt), ns(e.RunAt), nullNS(e.FinishedAt), nullString(e.TraceParent), e.StoredBytes,
		nullString(e.ParentID), nullString(e.ParentStep), parentSeq, nullString(string(e.OnParentEnd)), e.Depth)
	if err != nil {
		return fmt.Errorf("sqlite: insert execution: %w", err)
	}
	return nil
}
