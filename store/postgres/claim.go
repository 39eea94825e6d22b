package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/latch-run/latch/store"
)

// DefaultLease is the lease length used when ClaimParams.LeaseDuration is 0.
const DefaultLease = 30 * time.Second

// Claim statements. $1 is now; {filters} is replaced by claimFilters.
const (
	// Ready executions in claim order, locked, skipping those another
	// transaction holds. An execution whose concurrency key is already at
	// its limit within its tenant (keys are scoped per tenant; in this
	// statement's snapshot) is left out, so a backlog of blocked work cannot
	// hide runnable work behind it; the authoritative count is taken under
	// the key's lock (claimTx). $2 is how many.
	sqlClaimCandidates = `
SELECT e.id, e.tenant, e.concurrency_key, e.concurrency_limit, e.priority, e.run_at
FROM latch_executions e
WHERE e.status IN ('queued', 'scheduled') AND (e.status = 'queued' OR e.run_at <= $1)
  AND (e.concurrency_key IS NULL OR e.concurrency_limit > (SELECT count(*) FROM latch_executions r
       WHERE r.status = 'running' AND r.tenant = e.tenant AND r.concurrency_key = e.concurrency_key))
  {filters}
ORDER BY e.priority DESC, e.run_at, e.id
LIMIT $2
FOR UPDATE OF e SKIP LOCKED`

	// What a claim sets: $1 now, $3 worker, $4 lease expiry. A fresh random
	// token per attempt fences every later call (I5).
	sqlClaimSet = `status = 'running', attempt = x.attempt + 1, lease_token = gen_random_uuid(),
    worker_id = $3, lease_expires_at = $4, started_at = $1`

	sqlClaimReturning = `x.id::text, x.tenant, x.kind, x.queue, x.payload, x.attempt, x.max_attempts,
    x.timeout_seconds, x.lease_token::text, x.priority, x.run_at`

	// claimTx's candidates, with the id as text.
	sqlClaimTxCandidates = `SELECT c.id::text, c.tenant, c.concurrency_key, c.concurrency_limit, c.priority, c.run_at
FROM (` + sqlClaimCandidates + `) c`

	// Lease what claimTx chose; its rows are already locked by it.
	sqlClaimChosen = `
UPDATE latch_executions x SET ` + sqlClaimSet + `
WHERE x.id = ANY($2::text[]::uuid[])
RETURNING ` + sqlClaimReturning

	// One transaction-scoped advisory lock per (tenant, concurrency key),
	// taken in (tenant, key) order (unnest keeps the arrays' order):
	// claimers of one tenant's key count and lease one after the other, so
	// two claimers that each saw room cannot together overshoot the limit.
	// Held until commit. $2 and $3 are the tenants and keys, pairwise.
	sqlLockConcurrencyKeys = `
SELECT count(pg_advisory_xact_lock($1, hashtext(t || E'\n' || k)))
FROM unnest($2::text[], $3::text[]) AS u(t, k)`

	// Running executions per (tenant, concurrency key); $1 and $2 are the
	// tenants and keys, pairwise.
	sqlCountRunning = `
SELECT tenant, concurrency_key, count(*) FROM latch_executions
WHERE status = 'running' AND concurrency_key = ANY($2::text[])
  AND (tenant, concurrency_key) IN (SELECT * FROM unnest($1::text[], $2::text[]))
GROUP BY tenant, concurrency_key`
)

// Claim implements store.Store. Executions without a concurrency key are
// leased by one statement (sqlClaimMany), shared with concurrent claims of
// the same filters (group.go); when a candidate has a key, the claim runs as
// a transaction that counts the key's running executions of the candidate's
// tenant under the (tenant, key) advisory lock (claimTx, I4).
func (s *Store) Claim(ctx context.Context, p *store.ClaimParams) (*store.ClaimResult, error) {
	t := now(p.Now)
	maxN := max(p.Max, 1)
	lease := p.LeaseDuration
	if lease <= 0 {
		lease = DefaultLease
	}
	expires := micro(t.Add(lease))
	op := &claimOp{p: p, max: maxN, now: t, expires: expires}
	if err := s.run(ctx, op); err != nil {
		return nil, fmt.Errorf("postgres: claim: %w", interpretError(err))
	}
	got := op.leases
	if op.keyed {
		var err error
		if got, err = s.claimTx(ctx, p, t, maxN, expires); err != nil {
			return nil, err
		}
	}
	res := &store.ClaimResult{Leases: leasesInOrder(got, expires)}
	if len(got) > 0 {
		s.changes.announce()
	}
	return res, nil
}

// claimFilters renders the tenant, queue and kind filters with parameters
// numbered from first, and their arguments.
func claimFilters(p *store.ClaimParams, first int) (string, []any) {
	var b strings.Builder
	var args []any
	add := func(format string, v any) {
		fmt.Fprintf(&b, format, first+len(args))
		args = append(args, v)
	}
	if p.Tenant != "" {
		add(" AND e.tenant = $%d", p.Tenant)
	}
	if len(p.Queues) > 0 {
		add(" AND e.queue = ANY($%d::text[])", p.Queues)
	}
	if len(p.Kinds) > 0 {
		add(" AND e.kind = ANY($%d::text[])", p.Kinds)
	}
	return b.String(), args
}

// claimed is one leased execution and its place in claim order.
type claimed struct {
	lease    store.Lease
	priority int
	runAt    time.Time
}

// scanClaimed reads sqlClaimReturning's columns (nullable: sqlClaimMany
// answers one row of NULLs when it leased nothing).
func scanClaimed(row pgx.Row, prefix ...any) (*claimed, error) {
	var (
		id, tenant, kind, queue, payload, token *string
		attempt, maxAttempts, timeout, priority *int
		runAt                                   *time.Time
	)
	dest := append(prefix, &id, &tenant, &kind, &queue, &payload, &attempt, &maxAttempts,
		&timeout, &token, &priority, &runAt)
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	if id == nil {
		return nil, nil
	}
	return &claimed{
		lease: store.Lease{
			ExecutionID: *id, Tenant: *tenant, Kind: *kind, Queue: *queue,
			Payload: json.RawMessage(*payload), Attempt: *attempt, MaxAttempts: *maxAttempts,
			TimeoutSeconds: *timeout, Token: *token,
		},
		priority: *priority, runAt: *runAt,
	}, nil
}

// leasesInOrder returns the leases highest priority first, then oldest
// run_at, then id, as Claim promises (RETURNING has no order).
func leasesInOrder(cs []claimed, expires time.Time) []store.Lease {
	slices.SortFunc(cs, func(a, b claimed) int {
		if a.priority != b.priority {
			return b.priority - a.priority
		}
		if c := a.runAt.Compare(b.runAt); c != 0 {
			return c
		}
		return strings.Compare(a.lease.ExecutionID, b.lease.ExecutionID)
	})
	out := make([]store.Lease, len(cs))
	for i, c := range cs {
		out[i] = c.lease
		out[i].ExpiresAt = expires
	}
	return out
}

// claimTx claims when candidates carry concurrency keys. It locks the
// candidates (SKIP LOCKED), then each of their (tenant, key) pairs (advisory
// locks, in (tenant, key) order; keys are scoped per tenant), and only then counts the keys' running executions, in a statement
// whose snapshot is taken after the locks and so sees every claim of those
// keys that held them before. Only claims raise a key's running count, and
// they do so under its lock, so the limit holds (I4).
func (s *Store) claimTx(ctx context.Context, p *store.ClaimParams, t time.Time, maxN int, expires time.Time) ([]claimed, error) {
	filters, fargs := claimFilters(p, 3)
	query := strings.Replace(sqlClaimTxCandidates, "{filters}", filters, 1)
	var leases []claimed
	err := s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) (bool, error) {
		leases = nil
		type candidate struct {
			id     string
			tenant string
			key    *string
			limit  *int
			c      claimed
		}
		var cands []candidate
		var c candidate
		// A few spare candidates let the count skip some.
		rows, err := tx.Query(ctx, query, append([]any{t, maxN*2 + 8}, fargs...)...)
		if err != nil {
			return false, err
		}
		_, err = pgx.ForEachRow(rows, []any{&c.id, &c.tenant, &c.key, &c.limit, &c.c.priority, &c.c.runAt}, func() error {
			c.c.lease.ExecutionID = c.id
			cands = append(cands, c)
			return nil
		})
		if err != nil {
			return false, err
		}
		slices.SortFunc(cands, func(a, b candidate) int {
			if a.c.priority != b.c.priority {
				return b.c.priority - a.c.priority
			}
			if x := a.c.runAt.Compare(b.c.runAt); x != 0 {
				return x
			}
			return strings.Compare(a.id, b.id)
		})
		// A concurrency key is scoped per tenant: locks and counts are per
		// (tenant, key).
		type tkey struct{ tenant, key string }
		var keys []tkey
		for _, c := range cands {
			if c.key != nil && !slices.Contains(keys, tkey{c.tenant, *c.key}) {
				keys = append(keys, tkey{c.tenant, *c.key})
			}
		}
		slices.SortFunc(keys, func(a, b tkey) int {
			if x := strings.Compare(a.tenant, b.tenant); x != 0 {
				return x
			}
			return strings.Compare(a.key, b.key)
		})
		running := map[tkey]int{}
		if len(keys) > 0 {
			tenants, names := make([]string, len(keys)), make([]string, len(keys))
			for i, k := range keys {
				tenants[i], names[i] = k.tenant, k.key
			}
			if _, err := tx.Exec(ctx, sqlLockConcurrencyKeys, lockSpaceConcurrency, tenants, names); err != nil {
				return false, err
			}
			rows, err := tx.Query(ctx, sqlCountRunning, tenants, names)
			if err != nil {
				return false, err
			}
			var k tkey
			var n int
			if _, err := pgx.ForEachRow(rows, []any{&k.tenant, &k.key, &n}, func() error { running[k] = n; return nil }); err != nil {
				return false, err
			}
		}
		var chosen []string
		for _, c := range cands {
			if len(chosen) == maxN {
				break
			}
			if c.key != nil {
				k := tkey{c.tenant, *c.key}
				if running[k] >= *c.limit {
					continue
				}
				running[k]++ // leased by this very claim
			}
			chosen = append(chosen, c.id)
		}
		if len(chosen) == 0 {
			return false, nil
		}
		rows, err = tx.Query(ctx, sqlClaimChosen, t, chosen, p.WorkerID, expires)
		if err != nil {
			return false, err
		}
		defer rows.Close()
		for rows.Next() {
			l, err := scanClaimed(rows)
			if err != nil {
				return false, err
			}
			leases = append(leases, *l)
		}
		return true, rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: claim: %w", err)
	}
	return leases, nil
}
