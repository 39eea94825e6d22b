package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
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
	body := map[string]any{}
	if fs.NArg() == 3 {
		if !json.Valid([]byte(fs.Arg(2))) {
			return fmt.Errorf("%w: data is not valid JSON", errUsage)
		}
		body["data"] = json.RawMessage(fs.Arg(2))
	}
	var hdr http.Header
	if *idemKey != "" {
		hdr = http.Header{"Idempotency-Key": {*idemKey}}
	}
	path := "/api/executions/" + url.PathEscape(fs.Arg(0)) + "/signals/" + url.PathEscape(fs.Arg(1))
	var res json.RawMessage
	if _, err := c.do(ctx, "POST", path, body, hdr, &res); err != nil {
		return err
	}
	return printJSON(out, res)
}

func runRetry(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("retry")
	c := clientFlags(fs)
	if err := parse(ctx, fs, args, 1, 1); err != nil {
		return err
	}
	var e json.RawMessage
	if _, err := c.do(ctx, "POST", "/api/executions/"+url.PathEscape(fs.Arg(0))+"/retry", nil, nil, &e); err != nil {
		return err
	}
	return printJSON(out, e)
}

// maxResultShown cuts a step's result in the table; --json shows it whole.
const maxResultShown = 60

func runSteps(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("steps")
	c := clientFlags(fs)
	q := url.Values{}
	fs.Func("cursor", "the page after this one: the cursor a previous page printed", func(v string) error { q.Set("cursor", v); return nil })
	format := outputFlag(fs, true)
	if err := parse(ctx, fs, args, 1, 1); err != nil {
		return err
	}
	var page struct {
		Items []struct {
			Name       string          `json:"name"`
			Result     json.RawMessage `json:"result"`
			RecordedAt time.Time       `json:"recorded_at"`
			Attempt    int             `json:"attempt"`
		} `json:"items"`
		NextCursor *string `json:"next_cursor"`
	}
	var raw json.RawMessage
	path := "/api/executions/" + url.PathEscape(fs.Arg(0)) + "/steps"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	if _, err := c.do(ctx, "GET", path, nil, nil, &raw); err != nil {
		return err
	}
	if format.choose(out) == "json" { // the raw page of the journal
		return printJSON(out, raw)
	}
	if err := json.Unmarshal(raw, &page); err != nil {
		return err
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
	q := url.Values{}
	fs.Func("status", "only the children of this status", func(v string) error { q.Set("status", v); return nil })
	offer(fs, "status", executionStatuses...)
	format := outputFlag(fs, true)
	if err := parse(ctx, fs, args, 1, 1); err != nil {
		return err
	}
	q.Set("parent_id", fs.Arg(0))
	q.Set("limit", "500")
	var items []json.RawMessage
	for {
		var page struct {
			Items      []json.RawMessage `json:"items"`
			NextCursor *string           `json:"next_cursor"`
		}
		if _, err := c.do(ctx, "GET", "/api/executions?"+q.Encode(), nil, nil, &page); err != nil {
			return err
		}
		items = append(items, page.Items...)
		if page.NextCursor == nil {
			break
		}
		q.Set("cursor", *page.NextCursor)
	}
	if format.choose(out) == "json" {
		return printJSON(out, map[string]any{"items": items})
	}
	tw := newTable(out)
	fmt.Fprintln(tw, "EXECUTION_ID\tSTEP\tKIND\tSTATUS\tATTEMPT\tERROR")
	for _, raw := range items {
		var e struct {
			execution
			ParentStep *string `json:"parent_step"`
		}
		if err := json.Unmarshal(raw, &e); err != nil {
			return err
		}
		step, msg := "-", ""
		if e.ParentStep != nil {
			step = *e.ParentStep
		}
		if e.Error != nil {
			msg = shorten(*e.Error, maxResultShown)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", e.ID, step, e.Kind, e.Status, e.Attempt, msg)
	}
	return tw.Flush()
}
