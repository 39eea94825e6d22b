package postgres

import (
	"context"
	"slices"

	"github.com/jackc/pgx/v5"
)

// Transaction-scoped advisory locks on (tenant, name) pairs: one lock per
// pair in a lock space (migrate.go), taken in the order given (unnest keeps
// the arrays' order) and held until the transaction ends. $1 is the lock
// space; $2 and $3 are the tenants and names, pairwise.
const (
	sqlLockPairs = `
SELECT count(pg_advisory_xact_lock($1, hashtext(t || E'\n' || k)))
FROM unnest($2::text[], $3::text[]) AS u(t, k)`

	sqlLockPairsShared = `
SELECT count(pg_advisory_xact_lock_shared($1, hashtext(t || E'\n' || k)))
FROM unnest($2::text[], $3::text[]) AS u(t, k)`
)

// lockPairs takes the advisory locks of space on the pairs (tenants[i],
// names[i]), exclusive or shared, in the order given: callers give them in
// (tenant, name) order, so that two transactions that lock several wait for
// each other in one order.
//
// Uses:
//   - lockSpaceConcurrency, exclusive: claimers of one tenant's concurrency
//     key count and lease one after the other, so two claimers that each saw
//     room cannot together overshoot the limit (claimTx, I4);
//   - lockSpaceSchedule: FireSchedule holds its schedule's lock exclusive
//     from its overlap check to its commit, and every transaction that
//     admits an execution of a schedule holds the schedule's lock shared
//     until it commits (lockSchedules), so the check sees every execution
//     of the schedule there will be (I6).
func lockPairs(ctx context.Context, tx pgx.Tx, space int, shared bool, tenants, names []string) error {
	if len(tenants) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, pick(shared, sqlLockPairsShared, sqlLockPairs), space, tenants, names)
	return err
}

// lockSchedules takes the schedule locks of tenant's schedules names (any
// order, repeats allowed), shared or exclusive, in name order.
func lockSchedules(ctx context.Context, tx pgx.Tx, tenant string, names []string, shared bool) error {
	names = slices.Compact(slices.Sorted(slices.Values(names)))
	tenants := make([]string, len(names))
	for i := range tenants {
		tenants[i] = tenant
	}
	return lockPairs(ctx, tx, lockSpaceSchedule, shared, tenants, names)
}
