package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/latch-run/latch/api"
	"github.com/latch-run/latch/auth"
	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/store/sqlite"
)

func TestTenantCommands(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, testdb.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv := httptest.NewServer(api.New(api.Config{Store: st, AdminKeyHash: auth.HashKey(testAdminKey)}).Handler())
	defer srv.Close()
	t.Setenv("LATCH_URL", srv.URL)
	t.Setenv("LATCH_KEY", testAdminKey)
	t.Setenv("LATCH_TENANT", "")

	run := func(wantCode int, args ...string) string {
		t.Helper()
		code, out, errOut := cli(t, args...)
		if code != wantCode {
			t.Fatalf("latch %s: exit %d (%s%s), want %d", strings.Join(args, " "), code, out, errOut, wantCode)
		}
		return out + errOut
	}
	var first, second struct {
		KeyID  string `json:"key_id"`
		APIKey string `json:"api_key"`
	}
	if err := json.Unmarshal([]byte(run(0, "tenant", "create", "acme")), &first); err != nil || first.KeyID == "" {
		t.Fatalf("tenant create: %v %+v", err, first)
	}
	if err := json.Unmarshal([]byte(run(0, "tenant", "key", "acme")), &second); err != nil || second.KeyID == "" {
		t.Fatalf("tenant key: %v %+v", err, second)
	}
	out := run(0, "tenant", "keys", "acme")
	if !strings.Contains(out, first.KeyID) || !strings.Contains(out, second.KeyID) || strings.Contains(out, "lk_") {
		t.Fatalf("tenant keys: %s", out)
	}
	run(0, "tenant", "key", "rm", "acme", second.KeyID)
	if out := run(0, "tenant", "keys", "acme"); strings.Contains(out, second.KeyID) {
		t.Fatalf("tenant keys after key rm: %s", out)
	}
	if out := run(exitDenied, "ls", "--key", second.APIKey); !strings.Contains(out, "401 unauthorized") {
		t.Fatalf("ls with the removed key: %s", out)
	}
	if out := run(exitNotFound, "tenant", "key", "rm", "acme", second.KeyID); !strings.Contains(out, "404 not_found") {
		t.Fatalf("key rm again: %s", out)
	}
	run(2, "tenant", "key", "rm", "acme")

	if out := run(0, "tenant", "disable", "acme"); !strings.Contains(out, `"disabled": true`) {
		t.Fatalf("tenant disable: %s", out)
	}
	if out := run(exitDenied, "submit", "--key", first.APIKey, "echo"); !strings.Contains(out, "403 tenant_disabled") {
		t.Fatalf("submit while disabled: %s", out)
	}
	if out := run(0, "tenant", "enable", "acme"); !strings.Contains(out, `"disabled": false`) {
		t.Fatalf("tenant enable: %s", out)
	}
	run(0, "submit", "--key", first.APIKey, "echo")

	if out := run(exitConflict, "tenant", "rm", "acme"); !strings.Contains(out, "409 not_terminal") {
		t.Fatalf("tenant rm with work in flight: %s", out)
	}
	if out := run(0, "tenant", "rm", "--force", "acme"); !strings.Contains(out, "deleted tenant acme") {
		t.Fatalf("tenant rm --force: %s", out)
	}
	if out := run(exitNotFound, "tenant", "get", "acme"); !strings.Contains(out, "404 not_found") {
		t.Fatalf("tenant get after rm: %s", out)
	}
}
