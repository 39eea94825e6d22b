package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/latch-run/latch/internal/batch"
	"github.com/latch-run/latch/store"
)

// Store is the SQLite implementation of store.Store.
type Store struct {
	write *sql.DB // one connection; every write transaction is IMMEDIATE
	read  *sql.DB // read-only pool

	steps     *batch.Batcher[txOp, struct{}] // write steps, for the writer (group.go)
	closeOnce sync.Once

	mu      sync.Mutex
	changed chan struct{}
	feed    store.Feed // store.ChangeFeed: which executions changed
	w       watch      // another connection's commits (watch.go)
	wal     string     // the write-ahead log's file, which every commit writes (watch.go)
}

var (
	_ store.Store      = (*Store)(nil)
	_ store.Notifier   = (*Store)(nil)
	_ store.ChangeFeed = (*Store)(nil)
)

// Open opens (creating if needed) the database file at path and migrates its
// schema to the newest version.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("sqlite: empty database path")
	}
	if strings.Contains(path, ":memory:") || strings.Contains(path, "mode=memory") {
		// The writer and the readers are separate connections: they would
		// each see their own empty in-memory database.
		return nil, errors.New("sqlite: in-memory databases are not supported; use a file (in a temporary directory for tests)")
	}
	write, err := sql.Open(driverName, dsn(path, false))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	write.SetMaxOpenConns(1)
	write.SetMaxIdleConns(1)
	write.SetConnMaxLifetime(0)
	write.SetConnMaxIdleTime(0)
	s := &Store{write: write, changed: make(chan struct{})}
	if err := migrateUp(ctx, write); err != nil {
		write.Close()
		return nil, err
	}
	read, err := sql.Open(driverName, dsn(path, true))
	if err != nil {
		write.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	read.SetMaxOpenConns(8)
	read.SetMaxIdleConns(8)
	s.read = read
	s.startWriter()
	if err := s.Ping(ctx); err != nil {
		s.Close()
		return nil, err
	}
	s.wal = path + "-wal"
	if err := s.startWatch(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func dsn(path string, readOnly bool) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "foreign_keys(ON)")
	if readOnly {
		q.Add("_pragma", "query_only(ON)")
	} else {
		q.Set("_txlock", "immediate")
	}
	return "file:" + path + "?" + q.Encode()
}

// Ping checks that both connection pools answer.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.write.PingContext(ctx); err != nil {
		return fmt.Errorf("sqlite: ping: %w", err)
	}
	if err := s.read.PingContext(ctx); err != nil {
		return fmt.Errorf("sqlite: ping: %w", err)
	}
	return nil
}

// Close stops the writer after the steps already handed to it and closes
// the database. Operations after Close fail.
func (s *Store) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.stopPoll()
		if s.read != nil {
			s.steps.Close()
			err = s.read.Close()
		}
		err = errors.Join(err, s.write.Close())
	})
	return err
}

// errClosed is returned by operations on a closed Store.
var errClosed = errors.New("sqlite: store is closed")

// now returns the operation's time: store.Now.
func now(t time.Time) time.Time { return store.Now(t) }

func ns(t time.Time) int64 { return t.UnixNano() }

func fromNS(v int64) time.Time { return time.Unix(0, v).UTC() }

func nullTime(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromNS(v.Int64)
	return &t
}

// nullNS is t in unix nanoseconds, NULL for a nil t.
func nullNS(t *time.Time) sql.NullInt64 {
	if t == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: ns(*t), Valid: true}
}

func nullString(s string) sql.NullString {
	return sql.NullString{String: s, Valid: s != ""}
}

func durationNS(v int64) time.Duration { return time.Duration(v) }
