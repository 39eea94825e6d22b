package remote

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Step is one recorded step of an execution's journal.
type Step struct {
	Name       string          `json:"name"`
	Result     json.RawMessage `json:"result"`
	StartedAt  *time.Time      `json:"started_at"`
	RecordedAt time.Time       `json:"recorded_at"`
	Attempt    int             `json:"attempt"`
}

// StepPage is one page of a journal, in record order.
type StepPage struct {
	rawJSON
	Items      []Step  `json:"items"`
	NextCursor *string `json:"next_cursor"`
}

// PageOptions pages a list. Zero values are left out.
type PageOptions struct {
	Limit  int
	Cursor string
}

func (o PageOptions) query() url.Values {
	q := url.Values{}
	if o.Limit != 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.Cursor != "" {
		q.Set("cursor", o.Cursor)
	}
	return q
}

// StepsPage reads one page of an execution's journal (by default every
// step, up to 8 MiB of names and results).
func (c *Client) StepsPage(ctx context.Context, id string, opts PageOptions) (*StepPage, error) {
	var p StepPage
	if _, err := c.Call(ctx, Request{Method: http.MethodGet, Path: "/api/executions/" + seg(id) + "/steps", Query: opts.query(), Idempotent: true}, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// Steps yields an execution's whole journal, in record order, page after
// page; an error ends it.
func (c *Client) Steps(ctx context.Context, id string, opts PageOptions) iter.Seq2[*Step, error] {
	return pages(func(cursor string) ([]Step, *string, error) {
		opts.Cursor = cursor
		p, err := c.StepsPage(ctx, id, opts)
		if err != nil {
			return nil, nil, err
		}
		return p.Items, p.NextCursor, nil
	}, opts.Cursor)
}

type signalRequest struct {
	Data any `json:"data,omitempty"`
}

// SignalResult answers a signal: Delivered when it ended a waiting flow's
// wait, false when it is kept for a later wait.
type SignalResult struct {
	rawJSON
	Delivered bool `json:"delivered"`
}

// SignalOptions changes a signal.
type SignalOptions struct {
	// IdempotencyKey (scoped to the execution) makes a repeat answer the
	// first answer and change nothing; with it the client retries the
	// signal, without it a signal is sent once.
	IdempotencyKey string
}

// Signal sends the signal name with data (any JSON value; nil sends null)
// to an execution. A new signal to an ended execution is ErrNotActive.
func (c *Client) Signal(ctx context.Context, id, name string, data any, opts SignalOptions) (*SignalResult, error) {
	var hdr http.Header
	if opts.IdempotencyKey != "" {
		hdr = http.Header{"Idempotency-Key": {opts.IdempotencyKey}}
	}
	var r SignalResult
	_, err := c.Call(ctx, Request{Method: http.MethodPost, Path: "/api/executions/" + seg(id) + "/signals/" + seg(name),
		Header: hdr, Body: signalRequest{Data: data}, Idempotent: opts.IdempotencyKey != ""}, &r)
	if err != nil {
		return nil, err
	}
	return &r, nil
}
