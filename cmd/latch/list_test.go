package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/latch-run/latch/api"
	"github.com/latch-run/latch/auth"
	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/store/sqlite"
)

// TestListSaysWhereTheSearchStopped: a page the server cut at its scan
// bound, with fewer items than asked for and a cursor, says that older
// executions may still match rather than looking like the end.
func TestListSaysWhereTheSearchStopped(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, testdb.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv := httptest.NewServer(api.New(api.Config{Store: st, AdminKeyHash: auth.HashKey(testAdminKey), ListScan: 3}).Handler())
	defer srv.Close()
	t.Setenv("LATCH_URL", srv.URL)
	t.Setenv("LATCH_KEY", testAdminKey)
	if code, _, errOut := cli(t, "tenant", "create", "acme"); code != 0 {
		t.Fatalf("tenant create: %d %s", code, errOut)
	}
	t.Setenv("LATCH_TENANT", "acme")
	for _, kind := range []string{"rare", "echo", "echo", "echo", "echo"} {
		if code, _, errOut := cli(t, "submit", kind, "{}"); code != 0 {
			t.Fatalf("submit: %d %s", code, errOut)
		}
	}
	code, out, errOut := cli(t, "ls", "--kind", "rare", "-o", "table")
	if code != 0 || !strings.Contains(out, "no match among the newest executions searched") || !strings.Contains(out, "--cursor ") {
		t.Fatalf("ls --kind rare, first page: %d %q %q; want a note that the search stopped, with its cursor", code, out, errOut)
	}
	cursor := out[strings.LastIndex(out, "--cursor ")+len("--cursor "):]
	cursor = strings.TrimRight(cursor, ")\n")
	code, out, _ = cli(t, "ls", "-o", "table", "--kind", "rare", "--cursor", cursor)
	if code != 0 || !strings.Contains(out, "rare") {
		t.Fatalf("ls --kind rare --cursor %s: %d %q; want the rare execution", cursor, code, out)
	}
}
