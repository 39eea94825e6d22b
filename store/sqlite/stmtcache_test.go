package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"modernc.org/sqlite"
)

// countingDriver counts the statements its connections prepare.
type countingDriver struct {
	d        driver.Driver
	prepares *atomic.Int64
}

func (d countingDriver) Open(name string) (driver.Conn, error) {
	c, err := d.d.Open(name)
	if err != nil {
		return nil, err
	}
	return countingConn{c.(fullConn), d.prepares}, nil
}

type fullConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

type countingConn struct {
	fullConn
	prepares *atomic.Int64
}

func (c countingConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	c.prepares.Add(1)
	return c.fullConn.PrepareContext(ctx, q)
}

type connector struct {
	d    driver.Driver
	name string
}

func (c connector) Connect(context.Context) (driver.Conn, error) { return c.d.Open(c.name) }
func (c connector) Driver() driver.Driver                        { return c.d }

// openCounting opens a one-connection database through the caching driver
// and returns it with the count of statements its connection prepared.
func openCounting(t *testing.T) (*sql.DB, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	d := cachingDriver{countingDriver{&sqlite.Driver{}, &n}}
	db := sql.OpenDB(connector{d, "file:" + filepath.Join(t.TempDir(), "c.db")})
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)`); err != nil {
		t.Fatal(err)
	}
	n.Store(0)
	return db, &n
}

func TestStmtCachePreparesEachTextOnce(t *testing.T) {
	db, prepares := openCounting(t)
	for i := range 100 {
		if _, err := db.Exec(`INSERT INTO t (k, v) VALUES (?, ?)`, i, fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
		var v string
		if err := db.QueryRow(`SELECT v FROM t WHERE k = ?`, i).Scan(&v); err != nil || v != fmt.Sprint(i) {
			t.Fatalf("read back %d: %q, %v", i, v, err)
		}
	}
	if got := prepares.Load(); got != 2 {
		t.Fatalf("200 runs of 2 statement texts prepared %d statements, want 2", got)
	}
}

// A query of a text whose rows are still open runs on a statement of its
// own: the outer rows read on, undisturbed.
func TestStmtCacheNestedQueryOfOneText(t *testing.T) {
	db, _ := openCounting(t)
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	for i := range 5 {
		if _, err := tx.Exec(`INSERT INTO t (k, v) VALUES (?, ?)`, i, fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	const q = `SELECT k FROM t WHERE k >= ? ORDER BY k`
	rows, err := tx.Query(q, 0)
	if err != nil {
		t.Fatal(err)
	}
	var outer []int
	for rows.Next() {
		var k int
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		outer = append(outer, k)
		var inner int
		if err := tx.QueryRow(q, 4).Scan(&inner); err != nil || inner != 4 {
			t.Fatalf("inner query: %d, %v", inner, err)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if fmt.Sprint(outer) != "[0 1 2 3 4]" {
		t.Fatalf("outer rows read %v, want [0 1 2 3 4]", outer)
	}
}

// Past stmtCacheSize texts the least recently used are finalized, also one
// evicted while its rows are open (when they close), and every text still
// runs.
func TestStmtCacheEvicts(t *testing.T) {
	db, prepares := openCounting(t)
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const first = `SELECT 0 UNION ALL SELECT 1`
	rows, err := conn.QueryContext(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	rows.Next() // the statement is busy, and the oldest in the cache
	for i := range stmtCacheSize + 10 {
		var got int
		if err := conn.QueryRowContext(ctx, fmt.Sprintf(`SELECT %d`, i)).Scan(&got); err != nil || got != i {
			t.Fatalf("SELECT %d: %d, %v", i, got, err)
		}
	}
	var last int
	if !rows.Next() {
		t.Fatalf("the evicted statement's rows ended early: %v", rows.Err())
	}
	if err := rows.Scan(&last); err != nil || last != 1 {
		t.Fatalf("the evicted statement's rows: %d, %v", last, err)
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	before := prepares.Load()
	if err := conn.QueryRowContext(ctx, first).Scan(&last); err != nil || last != 0 {
		t.Fatalf("%s again: %d, %v", first, last, err)
	}
	if prepares.Load() != before+1 {
		t.Fatalf("an evicted text ran without being prepared again")
	}
}
