package main

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/latch-run/latch/api"
	"github.com/latch-run/latch/auth"
	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/store/sqlite"
)

// tenantServer starts an API server on a SQLite store of the test's own,
// creates a tenant and points the CLI at both (LATCH_URL, LATCH_KEY). It
// returns the server and the tenant's key; both end with the test.
func tenantServer(t *testing.T) (*httptest.Server, string) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), testdb.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv := httptest.NewServer(api.New(api.Config{Store: st, AdminKeyHash: auth.HashKey(testAdminKey)}).Handler())
	t.Cleanup(srv.Close)
	key := newTenant(t, srv.URL, testAdminKey)
	t.Setenv("LATCH_URL", srv.URL)
	t.Setenv("LATCH_KEY", key)
	return srv, key
}
