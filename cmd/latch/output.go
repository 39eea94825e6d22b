package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"
)

// outputFormats are the values of -o (--output) of the read commands.
var outputFormats = []string{"json", "table"}

// formatValue is the -o flag: "" until set, then one of outputFormats.
type formatValue struct{ format string }

func (f *formatValue) String() string {
	if f == nil {
		return ""
	}
	return f.format
}

func (f *formatValue) Set(v string) error {
	if !slices.Contains(outputFormats, v) {
		return fmt.Errorf("want %s", strings.Join(outputFormats, " or "))
	}
	f.format = v
	return nil
}

// outputFlag registers -o (--output) and, with jsonAlias, --json: the
// same as -o json, as the command had it before. Without them a read
// command prints a table on a terminal, JSON otherwise (choose).
func outputFlag(fs *pflag.FlagSet, jsonAlias bool) *formatValue {
	f := &formatValue{}
	fs.VarP(f, "output", "o", "output format: "+strings.Join(outputFormats, " or ")+" (default: table on a terminal, else json)")
	offer(fs, "output", outputFormats...)
	if jsonAlias {
		fs.BoolFunc("json", "the same as -o json", func(v string) error {
			b, err := strconv.ParseBool(v)
			if err != nil || !b {
				return err
			}
			return f.Set("json")
		})
	}
	return f
}

func (f *formatValue) Type() string { return "format" }

// choose is the format asked for, else a table when out is a terminal and
// JSON when it is not (a pipe, a file: a script reads it).
func (f *formatValue) choose(out io.Writer) string {
	if f != nil && f.format != "" {
		return f.format
	}
	if isTerminal(out) {
		return "table"
	}
	return "json"
}

// column is one column of a table: its header and the JSON field it shows.
type column struct{ header, field string }

// maxCellShown cuts a cell of a table; -o json shows it whole.
const maxCellShown = 60

// newTable is the tabwriter of every table the CLI prints: columns two
// spaces apart.
func newTable(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 2, 4, 2, ' ', 0) }

// printTable writes objects (JSON objects) as a table: a header, then one
// line an object.
func printTable(w io.Writer, cols []column, objects []json.RawMessage) error {
	tw := newTable(w)
	if err := writeRows(tw, cols, objects); err != nil {
		return err
	}
	return tw.Flush()
}

func writeRows(tw io.Writer, cols []column, objects []json.RawMessage) error {
	head := make([]string, len(cols))
	for i, c := range cols {
		head[i] = c.header
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, raw := range objects {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			return fmt.Errorf("decode answer: %w", err)
		}
		cells := make([]string, len(cols))
		for i, c := range cols {
			cells[i] = cell(obj[c.field])
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return nil
}

// cell is a JSON value as a table shows it: a string as is (a time to the
// second), null or missing as "-", anything else as compact JSON; on one
// line and at most maxCellShown runes.
func cell(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "-"
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			s = t.Format(time.RFC3339)
		}
	} else {
		var b bytes.Buffer
		if json.Compact(&b, raw) != nil {
			b.Reset()
			b.Write(raw)
		}
		s = b.String()
	}
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return "-"
	}
	return shorten(s, maxCellShown)
}

// printItems writes a list answer ({"items": [...], "next_cursor": ...})
// as a table, and the cursor of the next page when there is one.
func printItems(w io.Writer, cols []column, raw json.RawMessage) error {
	var page struct {
		Items      []json.RawMessage `json:"items"`
		NextCursor *string           `json:"next_cursor"`
	}
	if err := json.Unmarshal(raw, &page); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	tw := newTable(w)
	if err := writeRows(tw, cols, page.Items); err != nil {
		return err
	}
	if page.NextCursor != nil {
		fmt.Fprintf(tw, "(more: --cursor %s)\n", *page.NextCursor)
	}
	return tw.Flush()
}

// The columns of the tables of -o table.
var (
	// get's table is what a terminal shows by default: the outcome too.
	executionColumns = []column{{"EXECUTION_ID", "execution_id"}, {"TENANT", "tenant"}, {"KIND", "kind"},
		{"QUEUE", "queue"}, {"STATUS", "status"}, {"ATTEMPT", "attempt"}, {"CREATED", "created_at"},
		{"ERROR", "error"}, {"RESULT", "result"}}
	tenantColumns = []column{{"NAME", "name"}, {"DISABLED", "disabled"}, {"MAX_INFLIGHT", "max_inflight"},
		{"INFLIGHT", "inflight"}, {"DEDUP_TTL_SECONDS", "dedup_ttl_seconds"}, {"RETENTION_SECONDS", "retention_seconds"},
		{"MAX_STORED_BYTES", "max_stored_bytes"}, {"STORED_BYTES", "stored_bytes"}, {"EVENT_RETENTION_SECONDS", "event_retention_seconds"}}
	keyColumns      = []column{{"KEY_ID", "key_id"}, {"CREATED", "created_at"}, {"LAST_USED", "last_used_at"}}
	scheduleColumns = []column{{"NAME", "name"}, {"CRON", "cron"}, {"EVERY", "every"}, {"KIND", "kind"},
		{"QUEUE", "queue"}, {"ENABLED", "enabled"}, {"NEXT_RUN", "next_run_at"}, {"LAST_RUN", "last_run_at"}}
)

// printJSON writes v indented.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
