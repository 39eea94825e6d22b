package remote_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/latch-run/latch/api"
	"github.com/latch-run/latch/auth"
	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/remote"
	"github.com/latch-run/latch/store/sqlite"
)

// adminKey is the admin key of the tests' servers.
const adminKey = "admin-key-of-the-remote-tests-0123456789"

// server is a real API server on its own SQLite file, reached over HTTP.
type server struct {
	url   string
	store *sqlite.Store
	admin *remote.Client
}

// newServer starts a server; opts change its configuration.
func newServer(t *testing.T, opts ...func(*api.Config)) *server {
	t.Helper()
	st, err := sqlite.Open(context.Background(), testdb.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg := api.Config{
		Store:        st,
		AdminKeyHash: auth.HashKey(adminKey),
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		PollInterval: 20 * time.Millisecond,
	}
	for _, o := range opts {
		o(&cfg)
	}
	srv := httptest.NewServer(api.New(cfg).Handler())
	t.Cleanup(srv.Close)
	return &server{url: srv.URL, store: st, admin: remote.New(srv.URL, adminKey)}
}

// tenant creates a tenant and answers a client with its key.
func (s *server) tenant(t *testing.T, spec remote.TenantSpec) *remote.Client {
	t.Helper()
	created, err := s.admin.CreateTenant(context.Background(), spec)
	if err != nil {
		t.Fatalf("create tenant %s: %v", spec.Name, err)
	}
	return remote.New(s.url, created.APIKey)
}

// must answers v, failing the test given to what it returns on err:
// must(c.Get(ctx, id))(t).
func must[T any](v T, err error) func(*testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// wantCode fails unless err is an *Error that errors.Is matches with
// sentinel, and with no other sentinel's code.
func wantCode(t *testing.T, err error, sentinel error, status int) *remote.Error {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("error %v (%T), want %v", err, err, sentinel)
	}
	var e *remote.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is no *remote.Error", err)
	}
	if e.Status != status {
		t.Fatalf("error %v: status %d, want %d", err, e.Status, status)
	}
	return e
}
