package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/latch-run/latch/remote"
)

// The flow commands: a signal to a waiting flow, a retry of a failed one
// (its journal kept), and its journal.

func runSignal(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("signal")
	c := clientFlags(fs)
	idemKey := fs.String("idempotency-key", "",
		"sent as Idempotency-Key: a repeat with the same key answers the first signal's answer and sends nothing")
	if err := parse(ctx, fs, args, 2, 3); err != nil {
		return err
	}
	var data any // none: the body is {}
	if fs.NArg() == 3 {
		if !json.Valid([]byte(fs.Arg(2))) {
			return fmt.Errorf("%w: data is not valid JSON", errUsage)
		}
		data = json.RawMessage(fs.Arg(2))
	}
	res, err := c.client().Signal(ctx, fs.Arg(0), fs.Arg(1), data, remote.SignalOptions{IdempotencyKey: *idemKey})
	if err != nil {
		return err
	}
	return printJSON(out, res.JSON())
}

func runRetry(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("retry")
	c := clientFlags(fs)
	if err := parse(ctx, fs, args, 1, 1); err != nil {
		return err
	}
	e, err := c.client().Retry(ctx, fs.Arg(0))
	if err != nil {
		return err
	}
	return printJSON(out, e.JSON())
}

// maxResultShown cuts a step's result in the table; --json shows it whole.
const maxResultShown = 60

func runSteps(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("steps")
	c := clientFlags(fs)
	var opts remote.PageOptions
	fs.Func("cursor", "the page after this one: the cursor a previous page printed", func(v string) error { opts.Cursor = v; return nil })
	format := outputFlag(fs, true)
	if err := parse(ctx, fs, args, 1, 1); err != nil {
		return err
	}
	page, err := c.client().StepsPage(ctx, fs.Arg(0), opts)
	if err != nil {
		return err
	}
	if format.choose(out) == "json" { // the raw page of the journal
		return printJSON(out, page.JSON())
	}
	tw := newTable(out)
	fmt.Fprintln(tw, "STEP\tATTEMPT\tRECORDED\tRESULT")
	for _, st := range page.Items {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", st.Name, st.Attempt, st.RecordedAt.Format(time.RFC3339),
			shorten(string(st.Result), maxResultShown))
	}
	if page.NextCursor != nil {
		fmt.Fprintf(tw, "(more: --cursor %s)\n", *page.NextCursor)
	}
	return tw.Flush()
}

// runChildren lists the children of an execution in spawn order, every
// page of GET /api/executions?parent_id= (an execution has at most 10,000).
func runChildren(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("children")
	c := clientFlags(fs)
	opts := remote.ListOptions{Limit: 500}
	fs.Func("status", "only the children of this status", func(v string) error { opts.Status = remote.Status(v); return nil })
	offer(fs, "status", executionStatuses...)
	format := outputFlag(fs, true)
	if err := parse(ctx, fs, args, 1, 1); err != nil {
		return err
	}
	opts.ParentID = fs.Arg(0)
	var items []*remote.Execution
	for e, err := range c.client().List(ctx, opts) {
		if err != nil {
			return err
		}
		items = append(items, e)
	}
	if format.choose(out) == "json" {
		raws := make([]json.RawMessage, len(items))
		for i, e := range items {
			raws[i] = e.JSON()
		}
		return printJSON(out, map[string]any{"items": raws})
	}
	tw := newTable(out)
	fmt.Fprintln(tw, "EXECUTION_ID\tSTEP\tKIND\tSTATUS\tATTEMPT\tERROR")
	for _, e := range items {
		step, msg := "-", ""
		if e.ParentStep != nil {
			step = *e.ParentStep
		}
		if e.Error != nil {
			msg = shorten(*e.Error, maxResultShown)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", e.ExecutionID, step, e.Kind, e.Status, e.Attempt, msg)
	}
	return tw.Flush()
}
