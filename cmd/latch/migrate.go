package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"strings"

	"github.com/latch-run/latch"
)

// runMigrate changes or reports a store's schema (latch.Migrate):
//
//	latch migrate up|down|status --store URL
//
// PostgreSQL: up applies every pending migration, down reverts the newest
// one, status reports the version; concurrent migrators of one schema wait
// for each other. `latch serve` refuses a PostgreSQL schema it does not
// know, and says to run `latch migrate up`. SQLite migrates itself when it
// is opened: up opens the file (creating it) and reports its version;
// status reads it, and for a file that does not exist says so and exits 3,
// creating nothing.
func runMigrate(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return fmt.Errorf("%w: latch migrate up|down|status --store URL", errUsage)
	}
	op, rest := args[0], args[1:]
	if op != "up" && op != "down" && op != "status" {
		return fmt.Errorf("%w: unknown migrate command %q (up, down, status)", errUsage, op)
	}
	fs := newFlags("migrate " + op)
	storeURL := fs.String("store", envOr("LATCH_STORE", "sqlite:latch.db"), "store URL (LATCH_STORE)")
	var format *formatValue
	if op == "status" {
		format = outputFlag(fs, false)
	}
	if err := parse(ctx, fs, rest, 0, 0); err != nil {
		return err
	}
	m, err := latch.Migrate(ctx, *storeURL, op)
	if errors.Is(err, iofs.ErrNotExist) {
		return notFoundError{err}
	}
	if errors.Is(err, errors.ErrUnsupported) {
		// An op the store's backend has no use for (down on SQLite).
		return fmt.Errorf("%w: %s", errUsage, strings.TrimPrefix(err.Error(), "latch: "))
	}
	if err != nil {
		return err
	}
	if format == nil { // up, down: what was done, a line each
		for _, line := range m.Report {
			fmt.Fprintln(out, line)
		}
		return nil
	}
	switch format.choose(out) {
	case "json":
		ran := m.Ran
		if ran == nil {
			ran = []int{}
		}
		return printJSON(out, map[string]any{"report": m.Report, "ran": ran})
	case "table":
		tw := newTable(out)
		fmt.Fprintln(tw, "REPORT")
		for _, line := range m.Report {
			fmt.Fprintln(tw, line)
		}
		return tw.Flush()
	}
	return nil
}
