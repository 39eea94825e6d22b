package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/latch-run/latch/store"
)

// DefaultLease is the lease length used when ClaimParams.LeaseDuration is 0.
const DefaultLease = 30 * time.Second

// Claim implements store.Store. Candidates are read and leased inside one
// IMMEDIATE transaction, so two claimers can never lease the same attempt.
// A candidate with a concurrency key is skipped while its tenant already has
// concurrency_limit running executions with that key (I4): keys are scoped
// per tenant. A candidate that may run by its key then asks its tenant's
// bucket for its rate key (I7): the token is taken, and the bucket's TAT
// written, in the transaction that starts it; a refused candidate is
// deferred (scheduled at the bucket's next free start) in it too.
func (s *Store) Claim(ctx context.Context, p *store.ClaimParams) (*store.ClaimResult, error) {
	t := now(p.Now)
	maxN := max(p.Max, 1)
	lease := p.LeaseDuration
	if lease <= 0 {
		lease = DefaultLease
	}
	var res *store.ClaimResult
	err := s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) (bool, error) {
		c := &claim{tx: tx, p: p, t: t, expires: t.Add(lease), maxN: maxN,
			running: map[[2]string]int{}, buckets: newBuckets(tx), res: &store.ClaimResult{}}
		if err := c.run(ctx); err != nil {
			return false, err
		}
		res = c.res
		return len(res.Leases) > 0, nil
	})
	if err != nil {
		return nil, err
	}
	return s.feed.Claimed(res, nil)
}

// claim is one Claim's state inside its transaction.
type claim struct {
	tx      *sql.Tx
	p       *store.ClaimParams
	t       time.Time
	expires time.Time
	maxN    int
	// running counts, per tenant and concurrency key, the running
	// executions, those this claim started included.
	running  map[[2]string]int
	buckets  *buckets
	deferred int
	res      *store.ClaimResult
}

type candidate struct {
	lease  store.Lease
	ckey   sql.NullString
	climit sql.NullInt64
	rkey   sql.NullString
}

// maxDeferred bounds the candidates one claim defers for their rate limits,
// and with them the work of one write step; the next claim goes on.
const maxDeferred = defaultBatch

// run takes candidates batch by batch until Max are leased or none is left.
// Every candidate of a batch leaves the candidate set (started, deferred to
// a later RunAt, or held by a concurrency key now at its limit), so the next
// batch holds only new ones: a backlog of deferred work cannot hide runnable
// work behind it.
func (c *claim) run(ctx context.Context) error {
	for len(c.res.Leases) < c.maxN && c.deferred < maxDeferred {
		cands, full, err := c.candidates(ctx)
		if err != nil {
			return err
		}
		moved := false
		for _, cand := range cands {
			if len(c.res.Leases) == c.maxN || c.deferred == maxDeferred {
				break
			}
			done, err := c.try(ctx, &cand)
			if err != nil {
				return err
			}
			moved = moved || done
		}
		if !full || !moved {
			break
		}
	}
	return c.buckets.save(ctx)
}

// candidates reads the next batch in claim order; full reports whether the
// batch was cut by its limit (more may follow).
func (c *claim) candidates(ctx context.Context) (cands []candidate, full bool, err error) {
	query, args, limit := claimQuery(c.p, c.t, c.maxN)
	rows, err := c.tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, false, fmt.Errorf("sqlite: claim: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var cand candidate
		var payload string
		if err := rows.Scan(&cand.lease.ExecutionID, &cand.lease.Tenant, &cand.lease.Kind, &cand.lease.Queue,
			&payload, &cand.lease.Attempt, &cand.lease.MaxAttempts, &cand.lease.TimeoutSeconds,
			&cand.ckey, &cand.climit, &cand.rkey); err != nil {
			return nil, false, fmt.Errorf("sqlite: claim: %w", err)
		}
		cand.lease.Payload = json.RawMessage(payload)
		cands = append(cands, cand)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("sqlite: claim: %w", err)
	}
	return cands, len(cands) == limit, nil
}

// try starts or defers one candidate; done is false when its concurrency
// key holds it back (it is then not charged a token).
func (c *claim) try(ctx context.Context, cand *candidate) (done bool, err error) {
	k := [2]string{cand.lease.Tenant, cand.ckey.String}
	if cand.ckey.Valid {
		if _, ok := c.running[k]; !ok {
			var n int
			// INDEXED BY: see claimQuery.
			if err := c.tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM executions INDEXED BY executions_concurrency
				WHERE status = 'running' AND tenant = ? AND concurrency_key = ?`,
				cand.lease.Tenant, cand.ckey.String).Scan(&n); err != nil {
				return false, fmt.Errorf("sqlite: claim: %w", err)
			}
			c.running[k] = n
		}
		if int64(c.running[k]) >= cand.climit.Int64 {
			return false, nil
		}
	}
	if cand.rkey.Valid {
		b, err := c.buckets.get(ctx, cand.lease.Tenant, cand.rkey.String)
		if err != nil {
			return false, err
		}
		if ok, retryAt := b.take(c.t); !ok {
			return true, c.deferTo(ctx, cand.lease.ExecutionID, retryAt)
		}
	}
	if cand.ckey.Valid {
		c.running[k]++
	}
	return true, c.start(ctx, cand.lease)
}

// start leases the candidate to the claiming worker.
func (c *claim) start(ctx context.Context, l store.Lease) error {
	l.Token = uuid.NewString()
	l.Attempt++
	l.ExpiresAt = c.expires.UTC()
	if _, err := c.tx.ExecContext(ctx, `UPDATE executions SET status = 'running',
		attempt = attempt + 1, lease_token = ?, worker_id = ?, lease_expires_at = ?,
		started_at = ? WHERE id = ?`,
		l.Token, nullString(c.p.WorkerID), ns(c.expires), ns(c.t), l.ExecutionID); err != nil {
		return fmt.Errorf("sqlite: claim: %w", err)
	}
	c.res.Leases = append(c.res.Leases, l)
	return nil
}

// deferTo makes a candidate its rate limit refused scheduled at runAt,
// Attempt and quota slot unchanged, and keeps the earliest such runAt as
// the claim's RetryAt.
func (c *claim) deferTo(ctx context.Context, id string, runAt time.Time) error {
	if _, err := c.tx.ExecContext(ctx, `UPDATE executions SET status = 'scheduled', run_at = ?
		WHERE id = ?`, ns(runAt), id); err != nil {
		return fmt.Errorf("sqlite: claim: defer: %w", err)
	}
	c.deferred++
	if c.res.RetryAt.IsZero() || runAt.Before(c.res.RetryAt) {
		c.res.RetryAt = runAt.UTC()
	}
	return nil
}

// claimQuery selects ready candidates in claim order. Executions whose
// concurrency key is already at its limit within their tenant are filtered out in SQL so that a
// backlog of blocked work cannot hide runnable work behind it.
//
// The running count of a key names its index (INDEXED BY): without table
// statistics the planner otherwise picks executions_tenant and reads every
// execution the tenant ever had, per candidate with a key, in every claim,
// so claims slowed down as a tenant's history grew (found by the soak,
// internal/soak: 100 submits/s fell to 28/s after 10 minutes).
func claimQuery(p *store.ClaimParams, t time.Time, maxN int) (query string, args []any, limit int) {
	var b strings.Builder
	b.WriteString(`SELECT id, tenant, kind, queue, payload, attempt, max_attempts, timeout_seconds,
		concurrency_key, concurrency_limit, rate_key FROM executions e
		WHERE status IN ('queued', 'scheduled') AND (status = 'queued' OR run_at <= ?)
		AND (concurrency_key IS NULL OR (SELECT COUNT(*) FROM executions r INDEXED BY executions_concurrency
			WHERE r.status = 'running' AND r.tenant = e.tenant
			AND r.concurrency_key = e.concurrency_key) < concurrency_limit)`)
	args = []any{ns(t)}
	if p.Tenant != "" {
		b.WriteString(` AND tenant = ?`)
		args = append(args, p.Tenant)
	}
	in := func(col string, vals []string) {
		if len(vals) == 0 {
			return
		}
		b.WriteString(` AND ` + col + ` IN (?` + strings.Repeat(`, ?`, len(vals)-1) + `)`)
		for _, v := range vals {
			args = append(args, v)
		}
	}
	in("queue", p.Queues)
	in("kind", p.Kinds)
	// A few spare candidates let the in-batch concurrency count skip some.
	limit = maxN*2 + 8
	b.WriteString(` ORDER BY priority DESC, run_at, id LIMIT ?`)
	args = append(args, limit)
	return b.String(), args, limit
}
