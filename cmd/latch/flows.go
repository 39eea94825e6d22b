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
