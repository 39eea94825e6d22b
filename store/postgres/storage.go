package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/latch-run/latch/store"
)

// The storage budget (store/storage.go). latch_executions.stored_bytes is
// what an execution counts; the statements that write bytes add to it, and
// migration 11's triggers keep latch_storage.stored_bytes, the tenant's
// sum, in the same statement, ending one that would pass the budget with
// LA002 (interpretError: store.ErrStorageExceeded; on a fast path,
// aborted: the transaction path decides).

const (
	// A tenant's budget and count, as columns of a select over
	// latch_tenants t.
	sqlStorageColumns = `(SELECT s.max_bytes FROM latch_storage s WHERE s.tenant = t.name),
    (SELECT s.stored_bytes FROM latch_storage s WHERE s.tenant = t.name)`

	sqlSetStorageBudget = `UPDATE latch_storage SET max_bytes = $2 WHERE tenant = $1`

	sqlStorageRoom = `SELECT max_bytes - stored_bytes FROM latch_storage WHERE tenant = $1 FOR UPDATE`
	sqlCharge      = `UPDATE latch_executions SET stored_bytes = stored_bytes + $2 WHERE id = $1`
)

// storageRoom locks tenant's count until the transaction ends and returns
// how many bytes its budget has left (0 or less: none).
func storageRoom(ctx context.Context, tx pgx.Tx, tenant string) (int64, error) {
	var room int64
	err := tx.QueryRow(ctx, sqlStorageRoom, tenant).Scan(&room)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("tenant %q: %w", tenant, store.ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("postgres: storage: %w", err)
	}
	return room, nil
}

// charge counts n more bytes for execution id (and, by the trigger, its
// tenant): ErrStorageExceeded past the budget, and the caller's
// transaction rolls back.
func charge(ctx context.Context, tx pgx.Tx, id any, n int64) error {
	if n == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, sqlCharge, id, n); err != nil {
		return interpretError(err)
	}
	return nil
}
