package main

import (
	"context"
	"fmt"
	"time"
)

// walStats is what the server counts of its WAL and commits (--wal):
// pg_stat_wal for the whole server and pg_stat_database for the database
// both sides use. A delta covers everything the server did meanwhile: run
// on a server nothing else uses for figures that are one side's alone.
type walStats struct {
	Syncs   int64  `json:"wal_sync"`      // WAL flushes to disk (fdatasync and the like)
	Writes  int64  `json:"wal_write"`     // WAL writes to the kernel
	Records int64  `json:"wal_records"`   // WAL records
	FPI     int64  `json:"wal_fpi"`       // full page images
	Bytes   int64  `json:"wal_bytes"`     // WAL bytes
	Commits int64  `json:"xact_commit"`   // transactions committed, read-only ones included
	LSN     string `json:"lsn,omitempty"` // pg_current_wal_lsn, for pg_waldump
}

// walPause lets backends that just went idle or exited report their
// statistics, which PostgreSQL flushes at most once a second.
const walPause = 1500 * time.Millisecond

func (s *schemas) walStats(ctx context.Context) (*walStats, error) {
	time.Sleep(walPause)
	w := &walStats{}
	err := s.admin.QueryRow(ctx, `SELECT w.wal_sync, w.wal_write, w.wal_records, w.wal_fpi, w.wal_bytes::bigint,
    d.xact_commit, pg_current_wal_flush_lsn()::text
FROM pg_stat_wal w, pg_stat_database d WHERE d.datname = current_database()`).
		Scan(&w.Syncs, &w.Writes, &w.Records, &w.FPI, &w.Bytes, &w.Commits, &w.LSN)
	return w, err
}

// flushCommits counts, in the WAL between from and to (pg_walinspect), the
// transactions that wrote a record and then committed: under
// synchronous_commit = on each waits for a WAL flush (a transaction that
// wrote nothing before its commit record, a NOTIFY alone, commits
// asynchronously). The server may serve several with one flush when they
// commit at once (wal_sync counts the flushes it made); their number is
// what the workload asks for, whatever the machine's load. Records of a
// subtransaction carry its own id and are not counted. -1 when
// pg_walinspect is not available.
func (s *schemas) flushCommits(ctx context.Context, from, to string) int64 {
	if _, err := s.admin.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_walinspect`); err != nil {
		return -1
	}
	var n int64
	err := s.admin.QueryRow(ctx, `SELECT count(*) FROM (
    SELECT xid FROM pg_get_wal_records_info($1::pg_lsn, $2::pg_lsn) WHERE xid <> '0'
    GROUP BY xid
    HAVING bool_or(resource_manager = 'Transaction' AND record_type = 'COMMIT')
       AND bool_or(resource_manager <> 'Transaction')) x`, from, to).Scan(&n)
	if err != nil {
		return -1
	}
	return n
}

// walDelta is the server's work over one side's workload, per job
// (Ops) as well as in all.
type walDelta struct {
	Ops     int    `json:"ops"`
	Flushes int64  `json:"flush_commits"` // flushCommits; -1 unknown
	Syncs   int64  `json:"wal_sync"`
	Writes  int64  `json:"wal_write"`
	Records int64  `json:"wal_records"`
	FPI     int64  `json:"wal_fpi"`
	Bytes   int64  `json:"wal_bytes"`
	Commits int64  `json:"xact_commit"`
	From    string `json:"lsn_from,omitempty"`
	To      string `json:"lsn_to,omitempty"`
}

func (s *schemas) diffWAL(ctx context.Context, a, b *walStats, ops int) *walDelta {
	// Each snapshot's own query commits once (read-only, no WAL).
	return &walDelta{Ops: ops, Flushes: s.flushCommits(ctx, a.LSN, b.LSN), Syncs: b.Syncs - a.Syncs, Writes: b.Writes - a.Writes,
		Records: b.Records - a.Records, FPI: b.FPI - a.FPI, Bytes: b.Bytes - a.Bytes,
		Commits: b.Commits - a.Commits - 1, From: a.LSN, To: b.LSN}
}

func (d *walDelta) String() string {
	per := func(v int64) float64 { return float64(v) / float64(max(d.Ops, 1)) }
	return fmt.Sprintf("per job: %.2f commits waiting for a flush, %.2f wal_sync, %.2f wal_write, %.2f xact_commit, %.1f wal_records, %.0f wal_bytes "+
		"(in all: %d flushing commits, %d syncs, %d writes, %d commits, %d records, %d fpi, %d bytes over %d jobs; lsn %s..%s)",
		per(d.Flushes), per(d.Syncs), per(d.Writes), per(d.Commits), per(d.Records), per(d.Bytes),
		d.Flushes, d.Syncs, d.Writes, d.Commits, d.Records, d.FPI, d.Bytes, d.Ops, d.From, d.To)
}
