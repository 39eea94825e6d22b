package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/latch-run/latch/remote"
	"github.com/latch-run/latch/store"
)

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
	req := remote.SubmitRequest{Kind: fs.Arg(0), DedupKey: *dedup, Queue: *queue, Priority: *priority,
		MaxAttempts: *maxAttempts, TimeoutSeconds: int(*timeout), ConcurrencyKey: *ckey, ConcurrencyLimit: *climit}
	if fs.NArg() > 1 {
		if !json.Valid([]byte(fs.Arg(1))) {
			return fmt.Errorf("%w: payload is not valid JSON", errUsage)
		}
		req.Payload = json.RawMessage(fs.Arg(1))
	}
	if *delay > 0 {
		if *delay%time.Second != 0 {
			// delay_seconds is whole seconds: the server refuses a fraction.
			return fmt.Errorf("%w: --delay: want whole seconds, not %s", errUsage, *delay)
		}
		req.DelaySeconds = int64(*delay / time.Second)
	}
	e, err := c.client().Submit(ctx, req)
	if err != nil {
		return err
	}
	return printJSON(out, e.JSON())
}

func runGet(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("get")
	c := clientFlags(fs)
	format := outputFlag(fs, false)
	if err := parse(ctx, fs, args, 1, 1); err != nil {
		return err
	}
	e, err := c.client().Get(ctx, fs.Arg(0))
	if err != nil {
		return err
	}
	if format.choose(out) == "table" {
		return printTable(out, executionColumns, []json.RawMessage{e.JSON()})
	}
	return printJSON(out, e.JSON())
}

func runList(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("ls")
	c := clientFlags(fs)
	var opts remote.ListOptions
	filters := map[string]*string{"status": (*string)(&opts.Status), "kind": &opts.Kind, "queue": &opts.Queue,
		"dedup_key": &opts.DedupKey, "schedule": &opts.Schedule, "parent_id": &opts.ParentID}
	for _, param := range []string{"status", "kind", "queue", "dedup_key", "schedule", "parent_id"} {
		name := strings.ReplaceAll(param, "_", "-")
		fs.Func(name, "filter by "+name, func(v string) error { *filters[param] = v; return nil })
	}
	offer(fs, "status", executionStatuses...)
	fs.Func("cursor", "the page after this one: the cursor a previous page printed", func(v string) error { opts.Cursor = v; return nil })
	limit := fs.Int("limit", 50, "page size, 1-500")
	format := outputFlag(fs, true)
	if err := parse(ctx, fs, args, 0, 0); err != nil {
		return err
	}
	opts.Limit = *limit
	page, err := c.client().ListPage(ctx, opts)
	if err != nil {
		return err
	}
	if format.choose(out) == "json" { // the raw page
		return printJSON(out, page.JSON())
	}
	tw := newTable(out)
	fmt.Fprintln(tw, "EXECUTION_ID\tTENANT\tKIND\tQUEUE\tSTATUS\tATTEMPT\tCREATED")
	for _, e := range page.Items {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", e.ExecutionID, e.Tenant, e.Kind, e.Queue, e.Status,
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
	e, err := c.client().Cancel(ctx, fs.Arg(0))
	if err != nil {
		return err
	}
	return printJSON(out, e.JSON())
}

func runDelete(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("rm")
	c := clientFlags(fs)
	force := fs.Bool("force", false, "delete even if not terminal: cancels it and frees its quota slot and dedup key")
	if err := parse(ctx, fs, args, 1, 1); err != nil {
		return err
	}
	if err := c.client().Delete(ctx, fs.Arg(0), remote.DeleteOptions{Force: *force}); err != nil {
		return err
	}
	fmt.Fprintln(out, "deleted", fs.Arg(0))
	return nil
}
