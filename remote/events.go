package remote

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"net/http"
	"time"
)

// Events follows an execution as it changes: it yields the execution now,
// then after each change of status or attempt the server sees (changes
// between two reads coalesced), and ends after the terminal one. It reads
// GET /api/executions/{id}/events, a text/event-stream, and opens it again
// when the server ends a stream early (a stream's lifetime is bounded). An
// error ends it: an execution deleted while followed is ErrNotFound, a
// tenant's streams at their bound ErrTooManyRequests. The HTTP client must
// have no timeout shorter than the wait, as the client of New has none.
func (c *Client) Events(ctx context.Context, id string) iter.Seq2[*Execution, error] {
	return func(yield func(*Execution, error) bool) {
		req := Request{Method: http.MethodGet, Path: "/api/executions/" + seg(id) + "/events",
			Header: http.Header{"Accept": {"text/event-stream"}}, Idempotent: true}
		var last *Execution
		for {
			body, err := c.openStream(ctx, req)
			if err != nil {
				yield(nil, err)
				return
			}
			before := last
			got, ended, err := readEvents(body, &last, yield)
			body.Close()
			switch {
			case ended:
				return
			case ctx.Err() != nil:
				yield(nil, ctx.Err())
				return
			case got == 0 && err != nil:
				yield(nil, err)
				return
			case got == 0:
				yield(nil, io.ErrUnexpectedEOF) // a stream with no event: do not spin
				return
			}
			// The stream ended early, or broke after its events: open it
			// again; its first event is the state now. A stream that told
			// nothing new is opened again after a pause, not at once.
			if last == before {
				if err := sleep(ctx, time.Second); err != nil {
					yield(nil, err)
					return
				}
			}
		}
	}
}

// openStream opens an event stream, retrying its opening as the client's
// policy says, and answers its body.
func (c *Client) openStream(ctx context.Context, req Request) (io.ReadCloser, error) {
	target := c.base + req.Path
	for attempt := 0; ; attempt++ {
		resp, err := c.open(ctx, req, target, nil)
		if err == nil && resp.StatusCode < 400 {
			return resp.Body, nil
		}
		if err == nil {
			data, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
			resp.Body.Close()
			err = answerError(resp.StatusCode, data, resp.Header)
		}
		wait, ok := c.retry.next(attempt, err, req.Idempotent)
		if !ok || ctx.Err() != nil {
			return nil, err
		}
		if serr := sleep(ctx, wait); serr != nil {
			return nil, err
		}
	}
}

// readEvents yields the "status" events of one stream but one that repeats
// *last (the same status and attempt: the first event of a stream opened
// again); ended is true once the stream is done with (a terminal
// execution, an "error" event, or yield said stop), got counts its
// "status" events.
func readEvents(r io.Reader, last **Execution, yield func(*Execution, error) bool) (got int, ended bool, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxAnswer)
	var event string
	var data bytes.Buffer
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0: // the end of an event
			name := event
			event = ""
			if data.Len() == 0 {
				continue
			}
			payload := bytes.Clone(data.Bytes())
			data.Reset()
			switch name {
			case "status":
				var e Execution
				if err := json.Unmarshal(payload, &e); err != nil {
					return got, true, yieldErr(yield, err)
				}
				got++
				if l := *last; l != nil && l.Status == e.Status && l.Attempt == e.Attempt && !e.Status.Terminal() {
					continue
				}
				*last = &e
				if !yield(&e, nil) || e.Status.Terminal() {
					return got, true, nil
				}
			case "error":
				var p Problem
				if err := json.Unmarshal(payload, &p); err != nil || p.Code == "" {
					return got, true, yieldErr(yield, errors.New("latch: an error event without a problem: "+string(payload)))
				}
				return got, true, yieldErr(yield, p.Err())
			}
		case line[0] == ':': // a comment: keep-alive
		default:
			field, value, _ := bytes.Cut(line, []byte(":"))
			value = bytes.TrimPrefix(value, []byte(" "))
			switch string(field) {
			case "event":
				event = string(value)
			case "data":
				if data.Len() > 0 {
					data.WriteByte('\n')
				}
				data.Write(value)
			}
		}
	}
	return got, false, sc.Err()
}

func yieldErr(yield func(*Execution, error) bool, err error) error {
	yield(nil, err)
	return nil
}
