package postgres

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/store"
)

// closedPort is an address nothing listens on: connections are refused.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

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

// TestInterpretErrorUnavailable: the driver's errors of a server that is
// not there, or going away, map to store.ErrUnavailable (the API's 503);
// errors of a server that answered do not.
func TestInterpretErrorUnavailable(t *testing.T) {
	ctx := context.Background()
	url := "postgres://postgres@" + closedPort(t) + "/latch?sslmode=disable&connect_timeout=5"

	_, err := pgx.Connect(ctx, url)
	wantUnavailable(t, "connect to a closed port", err)

	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	_, err = pool.Exec(ctx, "SELECT 1")
	wantUnavailable(t, "pool query to a closed port", err)
	pool.Close()
	_, err = pool.Exec(ctx, "SELECT 1")
	wantUnavailable(t, "query on a closed pool", err)

	// Answers one cannot provoke on a shared test server: a server
	// starting up or in recovery, a connection failure, a full server.
	for _, code := range []string{"57P02", "57P03", "08006", "08001", "53300"} {
		wantUnavailable(t, "SQLSTATE "+code, &pgconn.PgError{Severity: "FATAL", Code: code})
	}

	for what, err := range map[string]error{
		"unique violation":  &pgconn.PgError{Code: codeUniqueViolation},
		"syntax error":      &pgconn.PgError{Code: "42601"},
		"context cancelled": context.Canceled,
		"deadline passed":   context.DeadlineExceeded,
	} {
		if errors.Is(interpretError(err), store.ErrUnavailable) {
			t.Errorf("%s is mapped to ErrUnavailable", what)
		}
	}
}

// TestInterpretErrorExists: a unique violation is store.ErrExists, not
// ErrInvalid, with the driver's error kept in the chain.
func TestInterpretErrorExists(t *testing.T) {
	pe := &pgconn.PgError{Code: codeUniqueViolation}
	got := interpretError(pe)
	if !errors.Is(got, store.ErrExists) || errors.Is(got, store.ErrInvalid) || !errors.Is(got, pe) {
		t.Errorf("unique violation: %v, want ErrExists wrapping the driver's error", got)
	}
}

// TestInterpretErrorAdminShutdown: a backend terminated by the server (as a
// restart or a failover terminates every backend: 57P01) is unavailable,
// and so is the connection it leaves behind.
func TestInterpretErrorAdminShutdown(t *testing.T) {
	url := testdb.URL(t, testdb.PostgresEnv, "the driver errors of a terminated backend")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	victim, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer victim.Close(context.Background())
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	var done bool
	if err := admin.QueryRow(ctx, "SELECT pg_terminate_backend($1)", victim.PgConn().PID()).Scan(&done); err != nil || !done {
		t.Fatalf("pg_terminate_backend: %v %v", done, err)
	}
	_, err = victim.Exec(ctx, "SELECT 1")
	wantUnavailable(t, "query on a terminated backend", err)
	if code := pgCode(err); code != codeAdminShutdown {
		t.Logf("the terminated backend answered %v (SQLSTATE %q)", err, code)
	}
	_, err = victim.Exec(ctx, "SELECT 1")
	wantUnavailable(t, "query on the connection after", err)
}
