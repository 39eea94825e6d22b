package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/latch-run/latch"
	"github.com/latch-run/latch/store/postgres"
	"github.com/latch-run/latch/store/sqlite"
)

// runMigrate changes or reports a store's schema:
//
//	latch migrate up|down|status --store URL
//
// PostgreSQL: up applies every pending migration, down reverts the newest
// one, status reports the version; concurrent migrators of one schema wait
// for each other. `latch serve` refuses a PostgreSQL schema it does not
// know, and says to run `latch migrate up`. SQLite migrates itself when it
// is opened: up and status open the file and report its version.
func runMigrate(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return fmt.Errorf("%w: latch migrate up|down|status --store URL", errUsage)
	}
	op, rest := args[0], args[1:]
	if op != "up" && op != "down" && op != "status" {
		return fmt.Errorf("%w: unknown migrate command %q (up, down, status)", errUsage, op)
	}
	fs := newFlags("migrate "+op, "")
	storeURL := fs.String("store", envOr("LATCH_STORE", "sqlite:latch.db"), "store URL (LATCH_STORE)")
	if err := parse(fs, rest, 0); err != nil {
		return err
	}
	lower := strings.ToLower(strings.TrimSpace(*storeURL))
	if strings.HasPrefix(lower, "postgres://") || strings.HasPrefix(lower, "postgresql://") {
		st, err := postgres.Migrate(ctx, strings.TrimSpace(*storeURL), op)
		if err != nil {
			return err
		}
		switch {
		case op == "up" && len(st.Ran) == 0:
			fmt.Fprintln(out, "nothing to migrate")
		case op == "up":
			fmt.Fprintf(out, "applied migrations %v\n", st.Ran)
		case op == "down" && len(st.Ran) == 0:
			fmt.Fprintln(out, "nothing to revert")
		case op == "down":
			fmt.Fprintf(out, "reverted migration %v\n", st.Ran)
		}
		fmt.Fprintln(out, st)
		return nil
	}
	if strings.HasPrefix(lower, "redis://") || strings.HasPrefix(lower, "rediss://") {
		fmt.Fprintln(out, "a Redis store has no schema: nothing to migrate")
		return nil
	}
	if op == "down" {
		return fmt.Errorf("%w: migrate down is for PostgreSQL stores; a SQLite store migrates itself when opened", errUsage)
	}
	// SQLite (and anything else latch.Open knows) migrates when opened.
	c, err := latch.Open(ctx, *storeURL)
	if err != nil {
		return err
	}
	defer c.Close()
	fmt.Fprintf(out, "schema version %d (up to date: SQLite migrates itself when opened)\n", sqlite.SchemaVersion())
	return nil
}
