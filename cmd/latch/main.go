// Command latch is the latch job-execution service and its command-line
// client: `latch serve` runs the server; the other commands talk to a running
// server over its HTTP API, except migrate, bench and prove, which open the
// store.
package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"
)

// errUsage marks an error in the command line; main exits 2 for it
// (exitUsage).
var errUsage = errors.New("usage")

// errHelp ends a command whose flags asked for its help (-h, --help): the
// help is printed and latch exits 0.
var errHelp = errors.New("help requested")

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
