package main

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestOutputFormats: every read command takes -o json and -o table;
// without -o it prints the table on a terminal and JSON when piped; --json,
// where the command had it, is -o json; the table has a header and aligned
// columns; a bad -o is a usage error naming the formats.
func TestOutputFormats(t *testing.T) {
	srv, key := tenantServer(t)
	var x struct {
		ID string `json:"execution_id"`
	}
	call(t, srv.URL, "POST", "/api/executions", key, `{"kind":"echo","payload":{"order":7}}`, 201, &x)
	var claim struct {
		Leases []struct {
			Token string `json:"lease_token"`
		} `json:"leases"`
	}
	call(t, srv.URL, "POST", "/api/workers/claim", key, `{"worker_id":"worker-a"}`, 200, &claim)
	call(t, srv.URL, "POST", "/api/executions/"+x.ID+"/steps", key,
		`{"lease_token":"`+claim.Leases[0].Token+`","name":"reserve","result":{"ok":true}}`, 200, nil)
	call(t, srv.URL, "PUT", "/api/schedules/sweep-oslo", key, `{"every":"15m","kind":"echo","payload":{"city":"oslo"}}`, 201, nil)
	db := "sqlite:" + t.TempDir() + "/latch.db"
	if code, _, errOut := cli(t, "migrate", "up", "--store", db); code != 0 {
		t.Fatalf("migrate up: %d %s", code, errOut)
	}

	for _, c := range []struct {
		cmd, rest []string
		jsonAlias bool // the command had --json
		header    []string
	}{
		{[]string{"get"}, []string{x.ID}, false, []string{"EXECUTION_ID", "TENANT", "KIND", "QUEUE", "STATUS", "ATTEMPT", "CREATED", "ERROR", "RESULT"}},
		{[]string{"ls"}, nil, true, []string{"EXECUTION_ID", "TENANT", "KIND", "QUEUE", "STATUS", "ATTEMPT", "CREATED"}},
		{[]string{"attempts"}, []string{x.ID}, true, []string{"ATTEMPT", "WORKER", "CLAIMED", "ENDED", "OUTCOME", "ERROR"}},
		{[]string{"steps"}, []string{x.ID}, true, []string{"STEP", "ATTEMPT", "RECORDED", "RESULT"}},
		{[]string{"tenant", "get"}, []string{"--key", testAdminKey, "acme"}, false,
			[]string{"NAME", "DISABLED", "MAX_INFLIGHT", "INFLIGHT", "DEDUP_TTL_SECONDS", "RETENTION_SECONDS",
				"MAX_STORED_BYTES", "STORED_BYTES", "EVENT_RETENTION_SECONDS"}},
		{[]string{"tenant", "keys"}, []string{"--key", testAdminKey, "acme"}, false, []string{"KEY_ID", "CREATED", "LAST_USED"}},
		{[]string{"schedule", "ls"}, nil, false, []string{"NAME", "CRON", "EVERY", "KIND", "QUEUE", "ENABLED", "NEXT_RUN", "LAST_RUN"}},
		{[]string{"schedule", "get"}, []string{"sweep-oslo"}, false, []string{"NAME", "CRON", "EVERY", "KIND", "QUEUE", "ENABLED", "NEXT_RUN", "LAST_RUN"}},
		{[]string{"migrate", "status"}, []string{"--store", db}, false, []string{"REPORT"}},
	} {
		name := strings.Join(c.cmd, " ")
		t.Run(name, func(t *testing.T) {
			with := func(flags ...string) []string {
				return slices.Concat(c.cmd, flags, c.rest)
			}
			ok := func(args []string) string {
				t.Helper()
				code, out, errOut := cli(t, args...)
				if code != 0 {
					t.Fatalf("latch %s: exit %d %s", strings.Join(args, " "), code, errOut)
				}
				return out
			}
			def, asJSON, table := ok(with()), ok(with("-o", "json")), ok(with("-o", "table"))
			if !json.Valid([]byte(asJSON)) {
				t.Errorf("-o json printed no JSON:\n%s", asJSON)
			}
			if long := ok(with("--output", "table")); long != table {
				t.Errorf("--output table:\n%s\n-o table:\n%s", long, table)
			}
			if def != asJSON {
				t.Errorf("without -o, piped:\n%s\nwith -o json:\n%s", def, asJSON)
			}
			if code, onTTY, errOut := cliStdoutTerminal(t, with()...); code != 0 || onTTY != table {
				t.Errorf("without -o, on a terminal: exit %d %s\n%s\nwith -o table:\n%s", code, errOut, onTTY, table)
			}
			if code, onTTY, _ := cliStdoutTerminal(t, with("-o", "json")...); code != 0 || onTTY != asJSON {
				t.Errorf("-o json on a terminal:\n%s\npiped:\n%s", onTTY, asJSON)
			}
			if c.jsonAlias {
				if alias := ok(with("--json")); alias != asJSON {
					t.Errorf("--json:\n%s\n-o json:\n%s", alias, asJSON)
				}
			}
			checkTable(t, table, c.header)

			code, out, errOut := cli(t, with("-o", "yaml")...)
			if code != exitUsage || out != "" || !strings.Contains(errOut, "want json or table") {
				t.Errorf("-o yaml: exit %d, %q %q; want 2 and the formats named", code, out, errOut)
			}
		})
	}
}

// checkTable: table's first line is header, it has at least one row, and
// each row's cells start where their header does (an empty last cell
// aside).
func checkTable(t *testing.T, table string, header []string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(table, "\n"), "\n")
	if got := strings.Fields(lines[0]); !slices.Equal(got, header) {
		t.Fatalf("table header %q, want %q:\n%s", got, header, table)
	}
	if len(lines) < 2 {
		t.Fatalf("table without rows:\n%s", table)
	}
	var starts []int
	for i := range len(lines[0]) {
		if lines[0][i] != ' ' && (i == 0 || lines[0][i-1] == ' ') {
			starts = append(starts, i)
		}
	}
	for _, row := range lines[1:] {
		for _, s := range starts[1:] {
			if strings.TrimSpace(row[min(s, len(row)):]) == "" {
				break // the last cells are empty
			}
			if row[s-1] != ' ' || row[s] == ' ' {
				t.Errorf("row %q: no cell at column %d of the header:\n%s", row, s, table)
			}
		}
	}
}

// cliStdoutTerminal is cli with its standard output on a terminal.
func cliStdoutTerminal(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	out := newFakeTerminal()
	var errOut strings.Builder
	code := run(context.Background(), args, out, &errOut)
	return code, out.String(), errOut.String()
}
