package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/latch-run/latch/store"
)

// The storage budget (store/storage.go): executions.stored_bytes is what an
// execution counts, events.size what a retained event counts (events.go),
// tenants.stored_bytes the sum of both, each changed in the transaction
// that writes or deletes the bytes counted.

// charge counts n more bytes for execution id and its tenant: refused with
// ErrStorageExceeded, nothing changed, when the tenant's count would pass
// its budget, unless force (a failure's text, which is never refused). The
// caller's transaction rolls back on the error, taking what it wrote.
func charge(ctx context.Context, tx *sql.Tx, id string, n int64, force bool) error {
	if n == 0 {
		return nil
	}
	res, err := tx.ExecContext(ctx, `UPDATE tenants SET stored_bytes = stored_bytes + ?1
		WHERE name = (SELECT tenant FROM executions WHERE id = ?2) AND (?3 OR stored_bytes + ?1 <= max_stored_bytes)`,
		n, id, force)
	if err != nil {
		return fmt.Errorf("sqlite: storage: %w", err)
	}
	if k, err := res.RowsAffected(); err != nil || k == 0 {
		return fmt.Errorf("execution %s: %d bytes more would pass its tenant's storage budget: %w", id, n, store.ErrStorageExceeded)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE executions SET stored_bytes = stored_bytes + ? WHERE id = ?`, n, id); err != nil {
		return fmt.Errorf("sqlite: storage: %w", err)
	}
	return nil
}

// release gives execution id's bytes back to its tenant, before the
// caller deletes the execution in the same transaction.
func release(ctx context.Context, tx *sql.Tx, id string) error {
	_, err := tx.ExecContext(ctx, `UPDATE tenants SET stored_bytes = tenants.stored_bytes - e.n
		FROM (SELECT tenant, stored_bytes AS n FROM executions WHERE id = ?) AS e
		WHERE tenants.name = e.tenant AND e.n <> 0`, id)
	if err != nil {
		return fmt.Errorf("sqlite: storage: release: %w", err)
	}
	return nil
}
