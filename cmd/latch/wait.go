package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/latch-run/latch/remote"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"
)

// errNotSucceeded makes `latch wait` exit 7 (exitNotSucceeded) when an
// execution ended in another terminal status than succeeded.
type errNotSucceeded struct {
	status   string // of the one execution waited for
	ended, n int    // of several: how many ended otherwise, of how many
}

func (e errNotSucceeded) Error() string {
	if e.n > 1 {
		return fmt.Sprintf("%d of %d executions ended other than succeeded", e.ended, e.n)
	}
	return "execution ended " + e.status
}

// maxWaiters bounds the long polls `latch wait` holds at once: each counts
// against the tenant's --max-long-polls on the server.
const maxWaiters = 16

// statusPoll is the long poll of `latch wait` with a status line: short,
// so that the line follows the execution's status and attempt.
const statusPoll = 1

// runWait waits until each execution is terminal. One: it prints the
// execution, indented, and on a terminal keeps a status line on stderr.
// Several: one line of JSON each as it ends, and on a terminal a progress
// bar on stderr. Exit 7 when any ended other than succeeded.
func runWait(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("wait")
	c := clientFlags(fs)
	timeout := durationFlag(fs, "timeout", 0, "give up after this long, exit 6: a duration (10m) or seconds (0 = wait forever)")
	if err := parse(ctx, fs, args, 1, -1); err != nil {
		return err
	}
	// The status line and the bar only on a terminal: scripts and CI logs
	// get the JSON and nothing else.
	var tty io.Writer
	if w := stderrOf(ctx); isTerminal(w) {
		tty = w
	}
	seen := &lastSeen{status: map[string]string{}, firstHold: 60}
	waitCtx := ctx
	if *timeout > 0 {
		var cancel context.CancelFunc
		waitCtx, cancel = context.WithTimeout(ctx, *timeout)
		defer cancel()
		seen.firstHold = 0 // the status at once, for the message if time runs out
	}
	var err error
	if fs.NArg() == 1 {
		err = waitOne(waitCtx, c.client(), fs.Arg(0), out, tty, seen)
	} else {
		err = waitMany(waitCtx, c.client(), fs.Args(), out, tty, seen)
	}
	if err != nil && ctx.Err() == nil && errors.Is(waitCtx.Err(), context.DeadlineExceeded) {
		return seen.timedOut(fs.Args(), *timeout)
	}
	return err
}

// lastSeen is the status each execution last had, for the message of a
// wait whose --timeout ran out.
type lastSeen struct {
	mu        sync.Mutex
	status    map[string]string // by id; terminal ones too
	firstHold int               // the first poll's wait_seconds
}

func (l *lastSeen) set(id, status string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.status[id] = status
}

// errWaitTimeout: wait's --timeout ran out before every execution was
// terminal (exit 6, exitTryLater).
type errWaitTimeout struct{ msg string }

func (e errWaitTimeout) Error() string { return e.msg }

// timedOut says which of ids were not terminal when timeout ran out, with
// the status each had: "ID: still queued after 1m0s".
func (l *lastSeen) timedOut(ids []string, timeout time.Duration) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var pending []string
	for _, id := range ids {
		st := l.status[id]
		if remote.Status(st).Terminal() {
			continue
		}
		if st == "" {
			st = "no answer yet"
		}
		pending = append(pending, id+" "+st)
	}
	if len(ids) == 1 && len(pending) == 1 {
		if st := l.status[ids[0]]; st != "" {
			return errWaitTimeout{fmt.Sprintf("%s: still %s after %s", ids[0], st, timeout)}
		}
		return errWaitTimeout{fmt.Sprintf("%s: no answer after %s", ids[0], timeout)}
	}
	return errWaitTimeout{fmt.Sprintf("%d of %d executions not finished after %s: %s", len(pending), len(ids), timeout,
		strings.Join(pending, ", "))}
}

// stderrOf is the standard error of the command running in ctx.
func stderrOf(ctx context.Context) io.Writer {
	if cmd, ok := ctx.Value(cobraKey{}).(*cobra.Command); ok {
		return cmd.ErrOrStderr()
	}
	return io.Discard
}

// poll asks for the execution id, held up to hold seconds until it is
// terminal.
func poll(ctx context.Context, c *remote.Client, id string, hold int) (*remote.Execution, error) {
	for {
		e, err := c.GetWait(ctx, id, time.Duration(hold)*time.Second)
		if errors.Is(err, remote.ErrTooManyRequests) {
			// The tenant holds as many long polls on this server as it may
			// (its workers' claims count too): one ends soon, poll again
			// then rather than give up on executions that are fine.
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(pollBusyWait):
			}
			continue
		}
		return e, err
	}
}

// pollBusyWait is how long a poll refused for the tenant's bound of long
// polls waits before it asks again.
var pollBusyWait = time.Second

// clearLine is the start of a line drawn over the one before.
const clearLine = "\r\x1b[2K"

func waitOne(ctx context.Context, c *remote.Client, id string, out, tty io.Writer, seen *lastSeen) error {
	start := time.Now()
	hold := seen.firstHold
	if tty != nil {
		hold = 0 // the first status at once
	}
	for {
		e, err := poll(ctx, c, id, hold)
		hold = 60
		if tty != nil {
			hold = statusPoll
		}
		if err == nil {
			seen.set(id, string(e.Status))
		}
		if err != nil {
			if tty != nil {
				fmt.Fprintln(tty) // the error on a line of its own
			}
			return err
		}
		if tty != nil {
			fmt.Fprintf(tty, "%s%s: %s, attempt %d, %s", clearLine, id, e.Status, e.Attempt,
				time.Since(start).Round(time.Second))
		}
		if !e.Status.Terminal() {
			continue
		}
		if tty != nil {
			fmt.Fprintln(tty)
		}
		if err := printJSON(out, e.JSON()); err != nil {
			return err
		}
		if e.Status != "succeeded" {
			return errNotSucceeded{status: string(e.Status)}
		}
		return nil
	}
}

func waitMany(ctx context.Context, c *remote.Client, ids []string, out, tty io.Writer, seen *lastSeen) error {
	var (
		mu    sync.Mutex // orders the lines on out and the bar's drawing
		ended int        // other than succeeded
		bar   *progressbar.ProgressBar
	)
	if tty != nil {
		bar = progressbar.NewOptions(len(ids),
			progressbar.OptionSetWriter(tty),
			progressbar.OptionSetDescription("ended"),
			progressbar.OptionShowCount(),
			progressbar.OptionSetWidth(30),
			progressbar.OptionSetPredictTime(false),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionSetRenderBlankState(true),
		)
	}
	stopTicks := func() {}
	if bar != nil {
		// Between ends, the bar's time waited goes on.
		stop, stopped := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(stopped)
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					mu.Lock()
					bar.RenderBlank() //nolint:errcheck // as Clear
					mu.Unlock()
				}
			}
		}()
		stopTicks = func() { close(stop); <-stopped }
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(maxWaiters)
	for _, id := range ids {
		g.Go(func() error {
			hold := seen.firstHold
			for {
				e, err := poll(gctx, c, id, hold)
				hold = 60
				if err != nil {
					return fmt.Errorf("%s: %w", id, err)
				}
				seen.set(id, string(e.Status))
				if !e.Status.Terminal() {
					continue
				}
				var line bytes.Buffer
				if err := json.Compact(&line, e.JSON()); err != nil {
					return fmt.Errorf("%s: decode answer: %w", id, err)
				}
				line.WriteByte('\n')
				mu.Lock()
				defer mu.Unlock()
				if bar != nil {
					bar.Clear() //nolint:errcheck // a failed redraw leaves the bar as it was
				}
				if _, err := out.Write(line.Bytes()); err != nil {
					return err
				}
				if e.Status != "succeeded" {
					ended++
					if bar != nil {
						bar.Describe(fmt.Sprintf("ended (%d not succeeded)", ended))
					}
				}
				if bar != nil {
					bar.Add(1) //nolint:errcheck // as Clear
				}
				return nil
			}
		})
	}
	err := g.Wait()
	stopTicks()
	if bar != nil {
		fmt.Fprintln(tty) // the bar stays, the error or prompt below it
	}
	if err != nil {
		return err
	}
	if ended > 0 {
		return errNotSucceeded{ended: ended, n: len(ids)}
	}
	return nil
}
