package main

import (
	"context"
	"fmt"
	"io"
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
	x, err := c.client().Explain(ctx, fs.Arg(0))
	if err != nil {
		return err
	}
	if format.choose(out) == "json" { // the raw answer
		return printJSON(out, x.JSON())
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
