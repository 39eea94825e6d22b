package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"time"

	"github.com/spf13/cobra"
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

func newFlags(name, args string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: latch %s [flags] %s\n", name, args)
		if ex, ok := examples[name]; ok {
			fmt.Fprintf(fs.Output(), "example:\n  %s\n", ex)
		}
		fmt.Fprintln(fs.Output(), "flags:")
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args with fs and wants at least nargs arguments after the
// flags. Run by the command tree (cli.go), -h shows the command's help; in
// describe mode, parse hands fs over and stops the command.
func parse(ctx context.Context, fs *flag.FlagSet, args []string, nargs int) error {
	if d, ok := ctx.Value(describeKey{}).(**flag.FlagSet); ok {
		*d = fs
		return errDescribed
	}
	cmd, _ := ctx.Value(cobraKey{}).(*cobra.Command)
	if cmd != nil {
		fs.SetOutput(cmd.ErrOrStderr())
		fs.Usage = func() {
			cmd.SetOut(cmd.ErrOrStderr())
			cmd.Help() //nolint:errcheck // on stderr, with the usage error
		}
	}
	help := fs.Usage
	fs.Usage = func() {} // Parse's error says which: help asked for, or a mistake
	err := fs.Parse(args)
	fs.Usage = help
	switch {
	case errors.Is(err, flag.ErrHelp):
		// -h or --help: the help is the answer, on standard output.
		if cmd != nil {
			cmd.SetOut(cmd.OutOrStdout())
			cmd.Help() //nolint:errcheck // written to standard output
		} else {
			fs.PrintDefaults()
		}
		return errHelp
	case err != nil:
		fs.Usage()
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() < nargs {
		fs.Usage()
		return fmt.Errorf("%w: want %d argument(s)", errUsage, nargs)
	}
	return nil
}

func runSubmit(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("submit", "KIND [PAYLOAD_JSON]")
	c := clientFlags(fs)
	dedup := fs.String("dedup-key", "", "idempotency key: resubmits return the same execution")
	queue := fs.String("queue", "", "queue (default \"default\")")
	priority := fs.Int("priority", 0, "priority, higher first")
	delay := fs.Duration("delay", 0, "start no earlier than this from now")
	maxAttempts := fs.Int("max-attempts", 0, "attempts before failing (default 3)")
	timeout := fs.Int("timeout", 0, "seconds an attempt may run (default 300)")
	ckey := fs.String("concurrency-key", "", "limit concurrent runs sharing this key")
	climit := fs.Int("concurrency-limit", 0, "runs allowed at once for --concurrency-key (default 1)")
	if err := parse(ctx, fs, args, 1); err != nil {
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
	fs := newFlags("get", "EXECUTION_ID")
	c := clientFlags(fs)
	format := outputFlag(fs, "json", false)
	if err := parse(ctx, fs, args, 1); err != nil {
		return err
	}
	var e json.RawMessage
	if _, err := c.do(ctx, "GET", "/api/executions/"+url.PathEscape(fs.Arg(0)), nil, nil, &e); err != nil {
		return err
	}
	if format.or("json") == "table" {
		return printTable(out, executionColumns, []json.RawMessage{e})
	}
	return printJSON(out, e)
}

func runList(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("ls", "")
	c := clientFlags(fs)
	q := url.Values{}
	for _, name := range []string{"status", "kind", "queue", "dedup_key", "schedule"} {
		fs.Func(name, "filter by "+name, func(v string) error { q.Set(name, v); return nil })
	}
	fs.Func("cursor", "the page after this one: the cursor a previous page printed", func(v string) error { q.Set("cursor", v); return nil })
	limit := fs.Int("limit", 50, "page size, 1-500")
	format := outputFlag(fs, "table", true)
	if err := parse(ctx, fs, args, 0); err != nil {
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
	if format.or("table") == "json" { // the raw page
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
	fs := newFlags("cancel", "EXECUTION_ID")
	c := clientFlags(fs)
	if err := parse(ctx, fs, args, 1); err != nil {
		return err
	}
	var e json.RawMessage
	if _, err := c.do(ctx, "POST", "/api/executions/"+url.PathEscape(fs.Arg(0))+"/cancel", nil, nil, &e); err != nil {
		return err
	}
	return printJSON(out, e)
}

func runDelete(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("rm", "EXECUTION_ID")
	c := clientFlags(fs)
	force := fs.Bool("force", false, "delete even if not terminal: cancels it and frees its quota slot and dedup key")
	if err := parse(ctx, fs, args, 1); err != nil {
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
