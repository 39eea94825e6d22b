// Command latch is the latch job-execution service and its command-line
// client: `latch serve` runs the server; the other commands talk to a running
// server over its HTTP API, except migrate, bench and prove, which open the
// store.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
)

// command is one subcommand.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, out io.Writer) error
}

var commands = map[string]command{
	"serve":    {"run the API, console, scheduler and workers", runServe},
	"submit":   {"submit an execution", runSubmit},
	"get":      {"show one execution", runGet},
	"ls":       {"list executions", runList},
	"wait":     {"wait until an execution is terminal", runWait},
	"cancel":   {"cancel an execution", runCancel},
	"rm":       {"delete an execution (--force for one in flight)", runDelete},
	"signal":   {"send a signal to a flow: EXECUTION_ID NAME [DATA_JSON]", runSignal},
	"retry":    {"queue a failed execution again, keeping its recorded steps", runRetry},
	"steps":    {"show the steps a flow recorded", runSteps},
	"attempts": {"show an execution's runs: worker, times, outcome, error", runAttempts},
	"tenant":   {"manage tenants: create, get, update, disable, enable, rm; keys: key, keys, key rm", runTenant},
	"schedule": {"manage schedules and rate limits: ls, get, apply -f FILE, trigger, rm", runSchedule},
	"bench":    {"measure submit and drain throughput against a store", runBench},
	"prove":    {"soak a store with steady mixed load, then check the invariants and for leaks", runProve},

	"migrate": {"apply, revert or show a store's schema migrations: up, down, status", runMigrate},
}

// errUsage marks an error in the command line; main exits 2 for it
// (exitUsage).
var errUsage = errors.New("usage")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The first SIGINT or SIGTERM cancels ctx: commands wind down (serve
	// within its grace period). Then the signals are no longer caught, so a
	// second one has its default effect and ends the process at once.
	context.AfterFunc(ctx, stop)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, out, errOut io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(errOut)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(errOut, "latch: unknown command %q\n\n", args[0])
		usage(errOut)
		return 2
	}
	if err := cmd.run(ctx, args[1:], out); err != nil {
		// The library's errors start with "latch: "; the line already says
		// "latch <command>: ", once is enough.
		fmt.Fprintf(errOut, "latch %s: %s\n", args[0], strings.TrimPrefix(err.Error(), "latch: "))
		return exitCode(err)
	}
	return exitOK
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: latch <command> [flags]")
	fmt.Fprintln(w)
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Client commands read LATCH_URL (default http://127.0.0.1:8080) and LATCH_KEY.")
	fmt.Fprintln(w, "Run 'latch <command> -h' for its flags.")
}
