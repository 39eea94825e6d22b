package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/store"
)

func wantUnavailable(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error", what)
	}
	got := interpretError(err)
	if !errors.Is(got, store.ErrUnavailable) {
		t.Errorf("%s: %v is not ErrUnavailable", what, got)
	}
	if !errors.Is(got, err) {
		t.Errorf("%s: the driver's error %v is lost", what, err)
	}
}

// TestInterpretErrorUnavailable: SQLITE_BUSY after the busy timeout (another
// process held the write lock that long) and a closed Store map to
// store.ErrUnavailable (the API's 503); other driver errors do not.
func TestInterpretErrorUnavailable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	path := testdb.SQLite(t)
	open := func() *sql.DB {
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(50)&_pragma=journal_mode(WAL)&_txlock=immediate")
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		t.Cleanup(func() { db.Close() })
		return db
	}
	holder, other := open(), open()
	if _, err := holder.ExecContext(ctx, `CREATE TABLE t (k TEXT PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	tx, err := holder.BeginTx(ctx, nil) // IMMEDIATE: holds the write lock
	if err != nil {
		t.Fatal(err)
	}
	_, err = other.BeginTx(ctx, nil)
	wantUnavailable(t, "a write while another connection holds the lock past the busy timeout", err)
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}

	// An answer of a database that is there is not an outage.
	if _, err := holder.ExecContext(ctx, `INSERT INTO t VALUES ('a')`); err != nil {
		t.Fatal(err)
	}
	_, err = holder.ExecContext(ctx, `INSERT INTO t VALUES ('a')`)
	if err == nil || errors.Is(interpretError(err), store.ErrUnavailable) {
		t.Errorf("a constraint violation (%v) is mapped to ErrUnavailable", err)
	}
	for _, err := range []error{context.Canceled, context.DeadlineExceeded} {
		if errors.Is(interpretError(err), store.ErrUnavailable) {
			t.Errorf("%v is mapped to ErrUnavailable", err)
		}
	}

	// A closed Store: its writes are unavailable, as answered by the Store.
	s, err := Open(ctx, testdb.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err = s.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme", KeyHash: "h"})
	if !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("a write on a closed Store: %v, want ErrUnavailable", err)
	}
}
