package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/latch-run/latch/store"
)

// execution is the part of the API's execution object the CLI shows.
type execution struct {
	ID           string          `json:"execution_id"`
	Tenant       string          `json:"tenant"`
	Kind         string          `json:"kind"`
	Queue        string          `json:"queue"`
	Status       string          `json:"status"`
	Attempt      int             `json:"attempt"`
	DedupKey     *string         `json:"dedup_key"`
	Error        *string         `json:"error"`
	Result       json.RawMessage `json:"result"`
	CreatedAt    time.Time       `json:"created_at"`
	Deduplicated *bool           `json:"deduplicated,omitempty"`
}

func (e *execution) terminal() bool {
	switch e.Status {
	case "succeeded", "failed", "cancelled", "skipped":
		return true
	}
	return false
}

// executionStatuses are the statuses an execution can have: the values of
// ls --status.
var executionStatuses = []string{string(store.StatusScheduled), string(store.StatusQueued), string(store.StatusRunning),
	string(store.StatusSuspended), string(store.StatusSucceeded), string(store.StatusFailed), string(store.StatusCancelled),
	string(store.StatusSkipped)}

func runSubmit(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("submit")
	c := clientFlags(fs)
	dedup := fs.String("dedup-key", "", "idempotency key: resubmits return the same execution")
	queue := fs.String("queue", "", "queue (default \"default\")")
	priority := fs.Int("priority", 0, "priority, higher first")
	delay := durationFlag(fs, "delay", 0, "start no earlier than this from now: a duration (90s) or seconds")
	maxAttempts := fs.Int("max-attempts", 0, "attempts before failing (default 3)")
	timeout := secondsFlag(fs, "timeout", 0, "how long an attempt may run: a duration (5m) or seconds (default 300)")
	ckey := fs.String("concurrency-key", "", "limit concurrent runs sharing this key")
	climit := fs.Int("concurrency-limit", 0, "runs allowed at once for --concurrency-key (default 1)")
	if err := parse(ctx, fs, args, 1, 2); err != nil {
		return err
	}
	body := map[string]any{"kind": fs.Arg(0)}
	if fs.NArg() > 1 {
		if !json.Valid([]byte(fs.Arg(1))) {
			return fmt.Errorf("%w: payload is not valid JSON", errUsage)
		}
		body["payload"] = json.RawMessage(fs.Arg(1))
	}
	setIf := func(k string, v any, ok bool) {
		if ok {
			body[k] = v
		}
	}
	setIf("dedup_key", *dedup, *dedup != "")
	setIf("queue", *queue, *queue != "")
	setIf("priority", *priority, *priority != 0)
	setIf("delay_seconds", delay.Seconds(), *delay > 0)
	setIf("max_attempts", *maxAttempts, *maxAttempts != 0)
	setIf("timeout_seconds", *timeout, *timeout != 0)
	setIf("concurrency_key", *ckey, *ckey != "")
	setIf("concurrency_limit", *climit, *climit != 0)
	var e json.RawMessage
	if _, err := c.do(ctx, "POST", "/api/executions", body, nil, &e); err != nil {
		return err
	}
	return printJSON(out, e)
}

func runGet(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("get")
	c := clientFlags(fs)
	format := outputFlag(fs, false)
	if err := parse(ctx, fs, args, 1, 1); err != nil {
		return err
	}
	var e json.RawMessage
	if _, err := c.do(ctx, "GET", "/api/executions/"+url.PathEscape(fs.Arg(0)), nil, nil, &e); err != nil {
		return err
	}
	if format.choose(out) == "table" {
		return printTable(out, executionColumns, []json.RawMessage{e})
	}
	return printJSON(out, e)
}

func runList(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("ls")
	c := clientFlags(fs)
	q := url.Values{}
	for _, param := range []string{"status", "kind", "queue", "dedup_key", "schedule", "parent_id"} {
		name := strings.ReplaceAll(param, "_", "-")
		fs.Func(name, "filter by "+name, func(v string) error { q.Set(param, v); return nil })
	}
	offer(fs, "status", executionStatuses...)
	fs.Func("cursor", "the page after this one: the cursor a previous page printed", func(v string) error { q.Set("cursor", v); return nil })
	limit := fs.Int("limit", 50, "page size, 1-500")
	format := outputFlag(fs, true)
	if err := parse(ctx, fs, args, 0, 0); err != nil {
		return err
	}
	q.Set("limit", strconv.Itoa(*limit))
	var page struct {
		Items      []json.RawMessage `json:"items"`
		NextCursor *string           `json:"next_cursor"`
	}
	if _, err := c.do(ctx, "GET", "/api/executions?"+q.Encode(), nil, nil, &page); err != nil {
		return err
	}
	if format.choose(out) == "json" { // the raw page
		return printJSON(out, page)
	}
	tw := newTable(out)
	fmt.Fprintln(tw, "EXECUTION_ID\tTENANT\tKIND\tQUEUE\tSTATUS\tATTEMPT\tCREATED")
	for _, raw := range page.Items {
		var e execution
		if err := json.Unmarshal(raw, &e); err != nil {
			return err
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", e.ID, e.Tenant, e.Kind, e.Queue, e.Status,
			e.Attempt, e.CreatedAt.Format(time.RFC3339))
	}
	switch {
	case page.NextCursor != nil && len(page.Items) < *limit:
		// The server stopped at its bound of executions examined for a
		// filter (docs/api.md): older ones may still match.
		fmt.Fprintf(tw, "(no match among the newest executions searched beyond these; older ones may match: --cursor %s)\n",
			*page.NextCursor)
	case page.NextCursor != nil:
		fmt.Fprintf(tw, "(more: --cursor %s)\n", *page.NextCursor)
	}
	return tw.Flush()
}

func runCancel(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("cancel")
	c := clientFlags(fs)
	if err := parse(ctx, fs, args, 1, 1); err != nil {
		return err
	}
	var e json.RawMessage
	if _, err := c.do(ctx, "POST", "/api/executions/"+url.PathEscape(fs.Arg(0))+"/cancel", nil, nil, &e); err != nil {
		return err
	}
	return printJSON(out, e)
}

func runDelete(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("rm")
	c := clientFlags(fs)
	force := fs.Bool("force", false, "delete even if not terminal: cancels it and frees its quota slot and dedup key")
	if err := parse(ctx, fs, args, 1, 1); err != nil {
		return err
	}
	path := "/api/executions/" + url.PathEscape(fs.Arg(0))
	if *force {
		path += "?force=true"
	}
	if _, err := c.do(ctx, "DELETE", path, nil, nil, nil); err != nil {
		return err
	}
	fmt.Fprintln(out, "deleted", fs.Arg(0))
	return nil
}
