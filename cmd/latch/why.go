package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
)

// runWhy prints what holds an execution back (GET .../explain): one row
// per gate, its detail a sentence with its figures.
func runWhy(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("why")
	c := clientFlags(fs)
	format := outputFlag(fs, true)
	if err := parse(ctx, fs, args, 1, 1); err != nil {
		return err
	}
	var raw json.RawMessage
	if _, err := c.do(ctx, "GET", "/api/executions/"+url.PathEscape(fs.Arg(0))+"/explain", nil, nil, &raw); err != nil {
		return err
	}
	if format.choose(out) == "json" { // the raw answer
		return printJSON(out, raw)
	}
	var x struct {
		Status string `json:"status"`
		Gates  []struct {
			Gate   string `json:"gate"`
			Detail string `json:"detail"`
		} `json:"gates"`
	}
	if err := json.Unmarshal(raw, &x); err != nil {
		return err
	}
	tw := newTable(out)
	fmt.Fprintln(tw, "GATE\tDETAIL")
	if len(x.Gates) == 0 {
		fmt.Fprintf(tw, "-\tnothing holds it back (%s)\n", x.Status)
	}
	for _, g := range x.Gates {
		fmt.Fprintf(tw, "%s\t%s\n", g.Gate, g.Detail)
	}
	return tw.Flush()
}
