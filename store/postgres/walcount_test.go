package postgres_test

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// walCount counts, from the server's WAL (pg_walinspect), the transactions
// that wrote to one schema's tables and committed between start and stop.
// Under synchronous_commit = on each of them waits for a WAL flush before
// its commit returns (a transaction that wrote no WAL record before its
// commit record, such as a NOTIFY alone, does not: PostgreSQL commits it
// asynchronously), so their number is how many flushes the workload asks
// for. The server may serve several of them with one flush when they
// commit at once (pg_stat_wal.wal_sync counts the flushes it made), but
// the number asked for depends only on what the store commits, not on the
// machine's load, and other clients of the server (other schemas, other
// databases) are not counted.
//
// A temporary physical replication slot holds the WAL from start on, so
// that a checkpoint meanwhile does not remove what stop reads.
type walCount struct {
	conn   *pgxpool.Conn
	schema string
	ext    string // the schema of pg_walinspect's functions
	from   string // pg_lsn
}

// walInspectSchema holds pg_walinspect's functions in the test database.
// The extension is installed once per database and left there (one
// installation serves every test binary; dropping it under a count
// running in another would break that count).
const walInspectSchema = "latch_walinspect"

// walInspect installs pg_walinspect if it is not, and returns the schema
// of its functions.
func walInspect(ctx context.Context, conn *pgxpool.Conn) (string, error) {
	var err error
	for range 3 { // two installations racing: one fails, then finds the other's
		var schema string
		if err = conn.QueryRow(ctx, `SELECT extnamespace::regnamespace::text FROM pg_extension
			WHERE extname = 'pg_walinspect'`).Scan(&schema); err == nil {
			return schema, nil
		}
		ident := pgx.Identifier{walInspectSchema}.Sanitize()
		if _, err = conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+ident); err == nil {
			_, err = conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_walinspect SCHEMA "+ident)
		}
	}
	return "", err
}

// walRecordsRead bounds the WAL a count reads, so that a count taken
// while another client writes heavily stays a bounded read.
const walRecordsRead = 2_000_000

// startWALCount starts counting the transactions that write to schema's
// tables. It skips t when pg_walinspect cannot be installed (PostgreSQL
// built without contrib), or fails it under LATCH_REQUIRE_BACKENDS.
func startWALCount(t testing.TB, pool *pgxpool.Pool, schema string) *walCount {
	t.Helper()
	ctx := t.Context()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ext, err := walInspect(ctx, conn)
	if err != nil {
		conn.Release()
		requireOrSkip(t, fmt.Sprintf("pg_walinspect (PostgreSQL's contrib) is needed to count WAL flushes: %v", err))
	}
	var from string
	if err := conn.QueryRow(ctx, `SELECT lsn::text FROM pg_create_physical_replication_slot($1, true, true)`,
		"latch_walcount_"+schema[len(schema)-12:]).Scan(&from); err != nil {
		conn.Release()
		t.Fatalf("reserving the WAL to count: %v", err)
	}
	if err := conn.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&from); err != nil {
		conn.Release()
		t.Fatal(err)
	}
	return &walCount{conn: conn, schema: schema, ext: ext, from: from}
}

// walTx is what one counted transaction wrote: the tables it changed (an
// index counts as its table) and its records' kinds.
type walTx struct {
	tables  map[string]bool
	records map[string]int
}

// signature names a transaction by the tables it wrote, and says when it
// only locked rows.
func (x *walTx) signature() string {
	sig := strings.Join(slices.Sorted(maps.Keys(x.tables)), "+")
	for r := range x.records {
		if r != "Heap/LOCK" {
			return sig
		}
	}
	return sig + " (row locks only)"
}

// walCounts is a count's result: the flushing commits by signature.
type walCounts struct {
	Flushes int            // commits that waited for a flush
	By      map[string]int // the same, by walTx.signature
}

func (c *walCounts) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d commits waiting for a WAL flush", c.Flushes)
	keys := slices.SortedFunc(maps.Keys(c.By), func(a, b string) int { return c.By[b] - c.By[a] })
	for _, k := range keys {
		fmt.Fprintf(&b, "\n  %5d  %s", c.By[k], k)
	}
	return b.String()
}

var (
	walBlockRef = regexp.MustCompile(`rel \d+/(\d+)/(\d+)`)
	walSubxacts = regexp.MustCompile(`subxacts:((?: \d+)+)`)
)

// stop reads the WAL written since start and counts.
func (w *walCount) stop(t testing.TB) *walCounts {
	t.Helper()
	ctx := context.WithoutCancel(t.Context())
	defer w.conn.Release()
	defer func() {
		// The slot is temporary: it goes with the session. Drop it now,
		// for the connection goes back to the pool.
		_, _ = w.conn.Exec(ctx, `SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots
			WHERE slot_name = $1`, "latch_walcount_"+w.schema[len(w.schema)-12:])
	}()
	// The relations of the schema, by file node, named by their table.
	rels := map[string]string{}
	rows, err := w.conn.Query(ctx, `SELECT pg_relation_filenode(c.oid)::text, coalesce(t.relname, c.relname)
FROM pg_class c
LEFT JOIN pg_index i ON i.indexrelid = c.oid
LEFT JOIN pg_class t ON t.oid = i.indrelid
WHERE c.relnamespace = $1::regnamespace AND pg_relation_filenode(c.oid) IS NOT NULL
UNION ALL
SELECT pg_relation_filenode(c.reltoastrelid)::text, c.relname || '(toast)'
FROM pg_class c WHERE c.relnamespace = $1::regnamespace AND c.reltoastrelid <> 0`, w.schema)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var node, name string
		if err := rows.Scan(&node, &name); err != nil {
			t.Fatal(err)
		}
		rels[node] = name
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var db string
	if err := w.conn.QueryRow(ctx, `SELECT oid::text FROM pg_database WHERE datname = current_database()`).Scan(&db); err != nil {
		t.Fatal(err)
	}
	// The WAL is read up to where it was written when the workload
	// ended, once it is flushed there (the WAL writer flushes what
	// asynchronous commits left within wal_writer_delay).
	var to string
	if err := w.conn.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&to); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		var flushed bool
		if err := w.conn.QueryRow(ctx, `SELECT pg_current_wal_flush_lsn() >= $1::pg_lsn`, to).Scan(&flushed); err != nil {
			t.Fatal(err)
		}
		if flushed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the WAL was not flushed up to %s within 10s", to)
		}
		time.Sleep(20 * time.Millisecond)
	}
	rows, err = w.conn.Query(ctx, `SELECT xid::text, resource_manager, record_type, coalesce(description, ''), coalesce(block_ref, '')
FROM `+pgx.Identifier{w.ext}.Sanitize()+`.pg_get_wal_records_info($1::pg_lsn, $2::pg_lsn) LIMIT $3`, w.from, to, walRecordsRead)
	if err != nil {
		t.Fatal(err)
	}
	txs := map[string]*walTx{}       // by xid: what each wrote to the schema
	wrote := map[string]bool{}       // xids that wrote a record other than their commit
	commits := map[string][]string{} // committed top-level xid -> its subtransactions
	read := 0
	for rows.Next() {
		read++
		var xid, rmgr, typ, desc, refs string
		if err := rows.Scan(&xid, &rmgr, &typ, &desc, &refs); err != nil {
			t.Fatal(err)
		}
		if xid == "0" {
			continue // not a transaction's (pruning, checkpoints, full-page images)
		}
		if rmgr == "Transaction" {
			if typ == "COMMIT" {
				var subs []string
				if m := walSubxacts.FindStringSubmatch(desc); m != nil {
					subs = strings.Fields(m[1])
				}
				commits[xid] = subs
			}
			continue
		}
		wrote[xid] = true
		for _, m := range walBlockRef.FindAllStringSubmatch(refs, -1) {
			if m[1] != db {
				continue
			}
			table, ok := rels[m[2]]
			if !ok {
				continue
			}
			x := txs[xid]
			if x == nil {
				x = &walTx{tables: map[string]bool{}, records: map[string]int{}}
				txs[xid] = x
			}
			x.tables[table] = true
			x.records[rmgr+"/"+typ]++
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if read == walRecordsRead {
		t.Fatalf("more than %d WAL records were written during the count: run it on a quieter server", walRecordsRead)
	}
	res := &walCounts{By: map[string]int{}}
	for xid, subs := range commits {
		// A subtransaction's records carry its own xid; its top-level
		// commit record names it.
		all := &walTx{tables: map[string]bool{}, records: map[string]int{}}
		mine, flushed := false, wrote[xid]
		for _, id := range append([]string{xid}, subs...) {
			flushed = flushed || wrote[id]
			if x := txs[id]; x != nil {
				mine = true
				maps.Copy(all.tables, x.tables)
				for r, n := range x.records {
					all.records[r] += n
				}
			}
		}
		if mine && flushed {
			res.Flushes++
			res.By[all.signature()]++
		}
	}
	return res
}

// perJob formats n over jobs.
func perJob(n, jobs int) string {
	return strconv.FormatFloat(float64(n)/float64(jobs), 'f', 2, 64)
}
