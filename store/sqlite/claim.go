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
// per tenant.
func (s *Store) Claim(ctx context.Context, p *store.ClaimParams) (*store.ClaimResult, error) {
	t := now(p.Now)
	maxN := max(p.Max, 1)
	lease := p.LeaseDuration
	if lease <= 0 {
		lease = DefaultLease
	}
	res := &store.ClaimResult{}
	err := s.inTx(ctx, func(ctx context.Context, tx *sql.Tx) (bool, error) {
		query, args := claimQuery(p, t, maxN)
		rows, err := tx.QueryContext(ctx, query, args...)
		if err != nil {
			return false, fmt.Errorf("sqlite: claim: %w", err)
		}
		type candidate struct {
			lease  store.Lease
			ckey   sql.NullString
			climit sql.NullInt64
		}
		var cands []candidate
		for rows.Next() {
			var c candidate
			var payload string
			if err := rows.Scan(&c.lease.ExecutionID, &c.lease.Tenant, &c.lease.Kind, &c.lease.Queue,
				&payload, &c.lease.Attempt, &c.lease.MaxAttempts, &c.lease.TimeoutSeconds,
				&c.ckey, &c.climit); err != nil {
				rows.Close()
				return false, fmt.Errorf("sqlite: claim: %w", err)
			}
			c.lease.Payload = json.RawMessage(payload)
			cands = append(cands, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return false, fmt.Errorf("sqlite: claim: %w", err)
		}
		// Keys leased by this very claim count against their limits too.
		// A key is counted per tenant: the map is keyed by tenant and key.
		taken := map[[2]string]int{}
		expires := t.Add(lease)
		for _, c := range cands {
			if len(res.Leases) == maxN {
				break
			}
			if c.ckey.Valid {
				k := [2]string{c.lease.Tenant, c.ckey.String}
				if _, ok := taken[k]; !ok {
					var running int
					if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM executions
						WHERE status = 'running' AND tenant = ? AND concurrency_key = ?`,
						c.lease.Tenant, c.ckey.String).Scan(&running); err != nil {
						return false, fmt.Errorf("sqlite: claim: %w", err)
					}
					taken[k] = running
				}
				if int64(taken[k]) >= c.climit.Int64 {
					continue
				}
				taken[k]++
			}
			l := c.lease
			l.Token = uuid.NewString()
			l.Attempt++
			l.ExpiresAt = expires.UTC()
			if _, err := tx.ExecContext(ctx, `UPDATE executions SET status = 'running',
				attempt = attempt + 1, lease_token = ?, worker_id = ?, lease_expires_at = ?,
				started_at = ? WHERE id = ?`,
				l.Token, nullString(p.WorkerID), ns(expires), ns(t), l.ExecutionID); err != nil {
				return false, fmt.Errorf("sqlite: claim: %w", err)
			}
			res.Leases = append(res.Leases, l)
		}
		return len(res.Leases) > 0, nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// claimQuery selects ready candidates in claim order. Executions whose
// concurrency key is already at its limit within their tenant are filtered out in SQL so that a
// backlog of blocked work cannot hide runnable work behind it.
func claimQuery(p *store.ClaimParams, t time.Time, maxN int) (string, []any) {
	var b strings.Builder
	b.WriteString(`SELECT id, tenant, kind, queue, payload, attempt, max_attempts, timeout_seconds,
		concurrency_key, concurrency_limit FROM executions e
		WHERE status IN ('queued', 'scheduled') AND (status = 'queued' OR run_at <= ?)
		AND (concurrency_key IS NULL OR (SELECT COUNT(*) FROM executions r
			WHERE r.status = 'running' AND r.tenant = e.tenant
			AND r.concurrency_key = e.concurrency_key) < concurrency_limit)`)
	args := []any{ns(t)}
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
	b.WriteString(` ORDER BY priority DESC, run_at, id LIMIT ?`)
	args = append(args, maxN*2+8)
	return b.String(), args
}
