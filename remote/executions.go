package remote

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Get reads an execution.
func (c *Client) Get(ctx context.Context, id string) (*Execution, error) {
	return c.GetWait(ctx, id, 0)
}

// MaxWait is the longest a single read may hold its answer (wait_seconds).
const MaxWait = 60 * time.Second

// GetWait reads an execution, the server holding the answer until it is
// terminal or wait passes (in whole seconds, MaxWait at most; a longer wait
// is MaxWait): one long poll. The answer may be an execution that has not
// ended.
func (c *Client) GetWait(ctx context.Context, id string, wait time.Duration) (*Execution, error) {
	var q url.Values
	if secs := min(wait, MaxWait) / time.Second; secs > 0 {
		q = url.Values{"wait_seconds": {strconv.Itoa(int(secs))}}
	}
	var e Execution
	if _, err := c.Call(ctx, Request{Method: http.MethodGet, Path: "/api/executions/" + seg(id), Query: q, Idempotent: true}, &e); err != nil {
		return nil, err
	}
	return &e, nil
}

// Wait long-polls an execution until it is terminal and answers it. When
// ctx ends first it answers no execution and an *UnfinishedError, which
// errors.Is matches with ErrUnfinished and with ctx's error, holding the
// execution as last read: it never answers one that has not ended as if it
// had. A poll refused because the tenant holds as many long polls as it
// may (ErrTooManyRequests) is repeated.
func (c *Client) Wait(ctx context.Context, id string) (*Execution, error) {
	var last *Execution
	for {
		hold := MaxWait
		if dl, ok := ctx.Deadline(); ok {
			// At least a second: a hold of 0 would poll without pause.
			hold = max(min(hold, time.Until(dl).Truncate(time.Second)), time.Second)
		}
		e, err := c.GetWait(ctx, id, hold)
		switch {
		case err == nil && e.Status.Terminal():
			return e, nil
		case err == nil:
			last = e
		case ctx.Err() != nil:
		case !isCode(err, ErrTooManyRequests):
			return nil, err
		default:
			_ = sleep(ctx, time.Second)
		}
		if ctx.Err() != nil {
			return nil, &UnfinishedError{ID: id, Execution: last, Err: ctx.Err()}
		}
	}
}

// ErrUnfinished is matched by the error of a Wait whose context ended
// before the execution did.
var ErrUnfinished = errors.New("latch: the execution has not ended")

// UnfinishedError is Wait's answer when its context ends before the
// execution does.
type UnfinishedError struct {
	ID        string
	Execution *Execution // as last read, not terminal; nil when none was read
	Err       error      // the context's
}

func (e *UnfinishedError) Error() string {
	if e.Execution != nil {
		return fmt.Sprintf("execution %s is still %s: %v", e.ID, e.Execution.Status, e.Err)
	}
	return fmt.Sprintf("execution %s: no answer: %v", e.ID, e.Err)
}

// Unwrap gives ErrUnfinished and the context's error.
func (e *UnfinishedError) Unwrap() []error { return []error{ErrUnfinished, e.Err} }

// ListOptions filters and pages GET /api/executions. Zero values are left
// out.
type ListOptions struct {
	Status   Status
	Kind     string
	Queue    string
	DedupKey string
	Schedule string
	// ParentID lists the children of one execution, in spawn order.
	ParentID string
	// IDPrefix lists the executions whose id starts with it: the first
	// 8 to 36 characters of an id (not with ParentID).
	IDPrefix string
	Limit    int    // page size, 1-500 (server default 50)
	Cursor   string // the NextCursor of the previous page
}

func (o ListOptions) query() url.Values {
	q := url.Values{}
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("status", string(o.Status))
	set("kind", o.Kind)
	set("queue", o.Queue)
	set("dedup_key", o.DedupKey)
	set("schedule", o.Schedule)
	set("parent_id", o.ParentID)
	set("id_prefix", o.IDPrefix)
	set("cursor", o.Cursor)
	if o.Limit != 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	return q
}

// ExecutionPage is one page of executions, newest first. A page may hold
// fewer than the limit, even none, while NextCursor is set: page on until
// it is nil.
type ExecutionPage struct {
	rawJSON
	Items      []Execution `json:"items"`
	NextCursor *string     `json:"next_cursor"`
}

// ListPage reads one page of executions.
func (c *Client) ListPage(ctx context.Context, opts ListOptions) (*ExecutionPage, error) {
	var p ExecutionPage
	if _, err := c.Call(ctx, Request{Method: http.MethodGet, Path: "/api/executions", Query: opts.query(), Idempotent: true}, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// List yields every execution that matches opts, newest first, reading
// page after page from opts.Cursor until the last; an error ends it.
func (c *Client) List(ctx context.Context, opts ListOptions) iter.Seq2[*Execution, error] {
	return pages(func(cursor string) ([]Execution, *string, error) {
		opts.Cursor = cursor
		p, err := c.ListPage(ctx, opts)
		if err != nil {
			return nil, nil, err
		}
		return p.Items, p.NextCursor, nil
	}, opts.Cursor)
}

// pages yields the items of the pages read by page, from cursor on.
func pages[T any](page func(cursor string) ([]T, *string, error), cursor string) iter.Seq2[*T, error] {
	return func(yield func(*T, error) bool) {
		for {
			items, next, err := page(cursor)
			if err != nil {
				yield(nil, err)
				return
			}
			for i := range items {
				if !yield(&items[i], nil) {
					return
				}
			}
			if next == nil {
				return
			}
			cursor = *next
		}
	}
}

// Cancel cancels an execution: at once unless it is running, when
// CancelRequested is set and it ends cancelled when its worker stops.
// Cancelling a terminal execution changes nothing.
func (c *Client) Cancel(ctx context.Context, id string) (*Execution, error) {
	return c.executionCall(ctx, http.MethodPost, "/api/executions/"+seg(id)+"/cancel", nil, true)
}

// DeleteOptions changes a delete.
type DeleteOptions struct {
	// Force deletes what still has work in flight (for an execution: its
	// quota slot, dedup key and journal go at once, its worker's lease is
	// lost); without it that is ErrNotTerminal.
	Force bool
}

func (o DeleteOptions) query() url.Values {
	if o.Force {
		return url.Values{"force": {"true"}}
	}
	return nil
}

// Delete deletes a terminal execution, or any with Force.
func (c *Client) Delete(ctx context.Context, id string, opts DeleteOptions) error {
	_, err := c.Call(ctx, Request{Method: http.MethodDelete, Path: "/api/executions/" + seg(id), Query: opts.query()}, nil)
	return err
}

// Retry queues a failed execution again with its journal (ErrNotFailed
// otherwise). It is not retried by the client: a repeat of one that was done
// would run the execution again once it failed again.
func (c *Client) Retry(ctx context.Context, id string) (*Execution, error) {
	return c.executionCall(ctx, http.MethodPost, "/api/executions/"+seg(id)+"/retry", nil, false)
}

// executionCall is a call answered with an execution.
func (c *Client) executionCall(ctx context.Context, method, path string, body any, idempotent bool) (*Execution, error) {
	var e Execution
	if _, err := c.Call(ctx, Request{Method: method, Path: path, Body: body, Idempotent: idempotent}, &e); err != nil {
		return nil, err
	}
	return &e, nil
}

// RunOutcome is how a run ended.
type RunOutcome string

// The outcomes of a run.
const (
	OutcomeSucceeded RunOutcome = "succeeded"
	OutcomeFailed    RunOutcome = "failed"
	OutcomeCancelled RunOutcome = "cancelled"
	OutcomeReleased  RunOutcome = "released"
	OutcomeSuspended RunOutcome = "suspended"
	OutcomeExpired   RunOutcome = "expired"
)

// Attempt is one run of an execution: a lease a claim gave. EndedAt,
// Outcome and Error are nil while it runs.
type Attempt struct {
	Attempt   int         `json:"attempt"`
	WorkerID  string      `json:"worker_id"`
	ClaimedAt time.Time   `json:"claimed_at"`
	StartedAt time.Time   `json:"started_at"`
	EndedAt   *time.Time  `json:"ended_at"`
	Outcome   *RunOutcome `json:"outcome"`
	Error     *string     `json:"error"`
}

// AttemptList is an execution's runs, oldest first (the latest 100).
type AttemptList struct {
	rawJSON
	Items []Attempt `json:"items"`
}

// Attempts reads an execution's run history.
func (c *Client) Attempts(ctx context.Context, id string) (*AttemptList, error) {
	var l AttemptList
	if _, err := c.Call(ctx, Request{Method: http.MethodGet, Path: "/api/executions/" + seg(id) + "/attempts", Idempotent: true}, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// StreamTicket lets a browser's EventSource, which cannot send a key, open
// GET /api/executions/{id}/events?ticket=... once, within ExpiresIn
// seconds.
type StreamTicket struct {
	Ticket    string `json:"ticket"`
	ExpiresIn int    `json:"expires_in"`
}

// StreamTicket asks for a ticket to the event stream of an execution.
func (c *Client) StreamTicket(ctx context.Context, id string) (*StreamTicket, error) {
	var t StreamTicket
	if _, err := c.Call(ctx, Request{Method: http.MethodPost, Path: "/api/executions/" + seg(id) + "/stream-ticket"}, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// isCode reports whether err is an answer with the sentinel's code.
func isCode(err, sentinel error) bool {
	e, ok := asError(err)
	return ok && e.Is(sentinel)
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
