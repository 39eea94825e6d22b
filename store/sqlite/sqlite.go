package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/latch-run/latch/store"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Store is the SQLite implementation of store.Store.
type Store struct {
	write *sql.DB // one connection; every write transaction is IMMEDIATE
	read  *sql.DB // read-only pool

	mu      sync.Mutex
	changed chan struct{}
}

var (
	_ store.Store    = (*Store)(nil)
	_ store.Notifier = (*Store)(nil)
)

// Open opens (creating if needed) the database file at path and migrates its
// schema to the newest version.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("sqlite: empty database path")
	}
	write, err := sql.Open("sqlite", dsn(path, false))
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
	read, err := sql.Open("sqlite", dsn(path, true))
	if err != nil {
		write.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	read.SetMaxOpenConns(8)
	read.SetMaxIdleConns(8)
	s.read = read
	if err := s.Ping(ctx); err != nil {
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

// Close closes the database.
func (s *Store) Close() error {
	var err error
	if s.read != nil {
		err = s.read.Close()
	}
	return errors.Join(err, s.write.Close())
}

// Changed implements store.Notifier.
func (s *Store) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

func (s *Store) notify() {
	s.mu.Lock()
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

// inTx runs fn in one IMMEDIATE transaction and commits it. When fn reports
// that it changed executions, waiters are woken after the commit.
func (s *Store) inTx(ctx context.Context, fn func(tx *sql.Tx) (changed bool, err error)) error {
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: begin: %w", err)
	}
	changed, err := fn(tx)
	if err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: commit: %w", err)
	}
	if changed {
		s.notify()
	}
	return nil
}

func now(t time.Time) time.Time {
	if t.IsZero() {
		return time.Now()
	}
	return t
}

func ns(t time.Time) int64 { return t.UnixNano() }

func fromNS(v int64) time.Time { return time.Unix(0, v).UTC() }

func nullTime(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromNS(v.Int64)
	return &t
}

func nullString(s string) sql.NullString {
	return sql.NullString{String: s, Valid: s != ""}
}

func durationNS(v int64) time.Duration { return time.Duration(v) }
