package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"
)

// maxErrorShown cuts a run's error in the table; --json shows it whole.
const maxErrorShown = 80

// runAttempts prints an execution's attempt history, oldest run first.
func runAttempts(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("attempts")
	c := clientFlags(fs)
	format := outputFlag(fs, true)
	if err := parse(ctx, fs, args, 1, 1); err != nil {
		return err
	}
	runs, err := c.client().Attempts(ctx, fs.Arg(0))
	if err != nil {
		return err
	}
	if format.choose(out) == "json" { // the raw history
		return printJSON(out, runs.JSON())
	}
	tw := newTable(out)
	fmt.Fprintln(tw, "ATTEMPT\tWORKER\tCLAIMED\tENDED\tOUTCOME\tERROR")
	for _, r := range runs.Items {
		// A run still going has no end and no outcome yet.
		ended, outcome, msg := "-", "running", ""
		if r.EndedAt != nil {
			ended = r.EndedAt.Format(time.RFC3339)
		}
		if r.Outcome != nil {
			outcome = string(*r.Outcome)
		}
		if r.Error != nil {
			// One line per run: the table's columns would break on a newline.
			msg = shorten(strings.Join(strings.Fields(*r.Error), " "), maxErrorShown)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", r.Attempt, r.WorkerID, r.ClaimedAt.Format(time.RFC3339), ended, outcome, msg)
	}
	return tw.Flush()
}

// shorten cuts s to at most max runes, marking the cut with "...".
func shorten(s string, max int) string {
	r := []rune(s)
	if len(r) <= max {
		return s
	}
	return string(r[:max-3]) + "..."
}
