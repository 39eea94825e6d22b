package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// quotaShards is how many rows hold each tenant's quota (doc.go, "Quota"):
// up to this many transactions of one tenant take or return units at the
// same moment without waiting for each other.
const quotaShards = 32

// Quota statements. A unit of quota is one execution in flight (scheduled,
// queued, running or suspended: store.Status.Inflight); latch_quota_shards.free
// counts the units not in use.
const (
	// Take up to $2 units from one shard that has some and that no other
	// transaction holds. FOR UPDATE locks the newest version of the row, so
	// c.free is current, not the statement snapshot's.
	sqlTakeQuota = `
UPDATE latch_quota_shards q SET free = q.free - least(c.free, $2)
FROM (SELECT shard, free FROM latch_quota_shards
      WHERE tenant = $1 AND free > 0
      ORDER BY shard LIMIT 1 FOR UPDATE SKIP LOCKED) c
WHERE q.tenant = $1 AND q.shard = c.shard
RETURNING least(c.free, $2)`

	// Give $2 units back to one shard that is not frozen and that no other
	// transaction holds.
	sqlReturnQuota = `
UPDATE latch_quota_shards q SET free = q.free + $2
FROM (SELECT shard FROM latch_quota_shards
      WHERE tenant = $1 AND free >= 0
      ORDER BY shard LIMIT 1 FOR UPDATE SKIP LOCKED) c
WHERE q.tenant = $1 AND q.shard = c.shard
RETURNING 1`

	// The exact path: lock every shard of the tenant, in shard order, waiting
	// for whoever holds one. Everyone who waits for shards takes them in this
	// order and holds no other shard meanwhile, so these waits cannot
	// deadlock (SKIP LOCKED takers never wait while holding a shard).
	sqlLockQuota = `SELECT shard, free, debt FROM latch_quota_shards WHERE tenant = $1 ORDER BY shard FOR UPDATE`

	sqlWriteQuota = `
UPDATE latch_quota_shards q SET free = u.free, debt = u.debt
FROM unnest($2::int[], $3::int[], $4::int[]) AS u(shard, free, debt)
WHERE q.tenant = $1 AND q.shard = u.shard AND (q.free, q.debt) IS DISTINCT FROM (u.free, u.debt)`

	sqlCountInflight = `SELECT count(*) FROM latch_executions
WHERE tenant = $1 AND status IN ('scheduled', 'queued', 'running', 'suspended')`
)

// shardState is one locked shard row.
type shardState struct {
	shard, free, debt int
}

// takeQuota takes up to n units of tenant's quota inside tx and returns how
// many it got. Fewer than n means the tenant is at its limit: the shortfall
// is decided on the exact path, with every shard of the tenant locked, so a
// unit held for a moment by another transaction is waited for rather than
// missed, and a refusal is never spurious.
func takeQuota(ctx context.Context, tx pgx.Tx, tenant string, n int) (int, error) {
	if n == 0 {
		return 0, nil
	}
	// Fast path: units from shards nobody holds. A savepoint lets the exact
	// path start from nothing: rolling back to it gives back the units taken
	// here and releases their locks, so the exact path waits for shards
	// while holding none (no deadlock).
	sp, err := tx.Begin(ctx)
	if err != nil {
		return 0, err
	}
	got := 0
	for got < n {
		var k int
		err := sp.QueryRow(ctx, sqlTakeQuota, tenant, n-got).Scan(&k)
		if errors.Is(err, pgx.ErrNoRows) {
			break
		}
		if err != nil {
			return 0, err
		}
		got += k
	}
	if got == n {
		return n, sp.Commit(ctx)
	}
	if err := sp.Rollback(ctx); err != nil {
		return 0, err
	}
	shards, err := lockQuota(ctx, tx, tenant)
	if err != nil {
		return 0, err
	}
	got = 0
	for i := range shards {
		if got == n {
			break
		}
		if k := min(max(shards[i].free, 0), n-got); k > 0 {
			shards[i].free -= k
			got += k
		}
	}
	return got, writeQuota(ctx, tx, tenant, shards)
}

// returnQuota gives n units back to tenant's quota inside tx: to a free
// shard if one is at hand, else on the exact path, which also pays off debt
// left by lowering max_inflight below the number in flight.
func returnQuota(ctx context.Context, tx pgx.Tx, tenant string, n int) error {
	if n == 0 {
		return nil
	}
	sp, err := tx.Begin(ctx)
	if err != nil {
		return err
	}
	var one int
	err = sp.QueryRow(ctx, sqlReturnQuota, tenant, n).Scan(&one)
	if err == nil {
		return sp.Commit(ctx)
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	if err := sp.Rollback(ctx); err != nil {
		return err
	}
	shards, err := lockQuota(ctx, tx, tenant)
	if err != nil {
		return err
	}
	if len(shards) == 0 {
		return nil // the tenant is gone: nothing to give back to
	}
	if shards[0].free < 0 { // frozen: pay off the debt first
		pay := min(n, shards[0].debt)
		shards[0].debt -= pay
		n -= pay
		if shards[0].debt > 0 {
			return writeQuota(ctx, tx, tenant, shards)
		}
		for i := range shards {
			shards[i].free = 0
		}
	}
	shards[0].free += n
	return writeQuota(ctx, tx, tenant, shards)
}

// resetQuota recomputes tenant's shards from the ground truth: maxInflight
// and the count of its executions in flight. It locks every shard first, so
// no other transaction takes or returns units meanwhile; every transaction
// that took or returned one before has committed, and its executions are
// counted as they are.
func resetQuota(ctx context.Context, tx pgx.Tx, tenant string, maxInflight int) error {
	shards, err := lockQuota(ctx, tx, tenant)
	if err != nil {
		return err
	}
	var inflight int
	if err := tx.QueryRow(ctx, sqlCountInflight, tenant).Scan(&inflight); err != nil {
		return err
	}
	spread(shards, maxInflight, inflight)
	return writeQuota(ctx, tx, tenant, shards)
}

// spread sets the shards for maxInflight units of which inflight are in use.
func spread(shards []shardState, maxInflight, inflight int) {
	if len(shards) == 0 {
		return
	}
	free := maxInflight - inflight
	for i := range shards {
		shards[i].debt = 0
		if free < 0 {
			shards[i].free = -1 // frozen
			continue
		}
		shards[i].free = free / len(shards)
		if i < free%len(shards) {
			shards[i].free++
		}
	}
	if free < 0 {
		shards[0].debt = -free
	}
}

func lockQuota(ctx context.Context, tx pgx.Tx, tenant string) ([]shardState, error) {
	rows, err := tx.Query(ctx, sqlLockQuota, tenant)
	if err != nil {
		return nil, err
	}
	shards, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (shardState, error) {
		var s shardState
		err := r.Scan(&s.shard, &s.free, &s.debt)
		return s, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: lock quota: %w", err)
	}
	return shards, nil
}

func writeQuota(ctx context.Context, tx pgx.Tx, tenant string, shards []shardState) error {
	ids := make([]int, len(shards))
	free := make([]int, len(shards))
	debt := make([]int, len(shards))
	for i, s := range shards {
		ids[i], free[i], debt[i] = s.shard, s.free, s.debt
	}
	if _, err := tx.Exec(ctx, sqlWriteQuota, tenant, ids, free, debt); err != nil {
		return fmt.Errorf("postgres: write quota: %w", err)
	}
	return nil
}
