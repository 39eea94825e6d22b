package remote_test

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latch-run/latch/remote"
)

// TestEvents follows an execution from queued to succeeded through the
// raw worker calls, and one deleted while followed.
func TestEvents(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := newServer(t)
	c := s.tenant(t, remote.TenantSpec{Name: "acme"})
	e := must(c.Submit(ctx, remote.SubmitRequest{Kind: "job"}))(t)

	seen := make(chan *remote.Execution, 10)
	errs := make(chan error, 1)
	go func() {
		defer close(seen)
		for ex, err := range c.Events(ctx, e.ExecutionID) {
			if err != nil {
				errs <- err
				return
			}
			seen <- ex
		}
	}()
	if first := <-seen; first.Status != remote.StatusQueued || first.ExecutionID != e.ExecutionID {
		t.Fatalf("first event %+v", first)
	}
	l := must(c.Claim(ctx, remote.ClaimRequest{WorkerID: "w", WaitSeconds: 2}))(t)[0]
	if ev := <-seen; ev.Status != remote.StatusRunning || ev.Attempt != 1 {
		t.Fatalf("after the claim: %+v", ev)
	}
	must(c.Complete(ctx, l.ExecutionID, remote.CompleteRequest{LeaseToken: l.LeaseToken, Result: 7}))(t)
	if ev := <-seen; ev.Status != remote.StatusSucceeded || string(ev.Result) != "7" {
		t.Fatalf("after the complete: %+v", ev)
	}
	if ev, more := <-seen; more {
		t.Fatalf("an event after the terminal one: %+v", ev)
	}
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}

	gone := must(c.Submit(ctx, remote.SubmitRequest{Kind: "job"}))(t)
	next, stop := iter.Pull2(c.Events(ctx, gone.ExecutionID))
	defer stop()
	if ev, err, _ := next(); err != nil || ev.Status != remote.StatusQueued {
		t.Fatalf("first event %v %v", ev, err)
	}
	if err := c.Delete(ctx, gone.ExecutionID, remote.DeleteOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	_, err, _ := next()
	wantCode(t, err, remote.ErrNotFound, http.StatusNotFound)

	for _, err := range c.Events(ctx, "no-such-execution") {
		wantCode(t, err, remote.ErrNotFound, http.StatusNotFound)
	}
}

// TestEventsReopensAnEndedStream: a stream the server ends before the
// terminal event is opened again, and its first event, the state already
// seen, is not yielded twice.
func TestEventsReopensAnEndedStream(t *testing.T) {
	var opens atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		ev := func(status string, attempt int) {
			fmt.Fprintf(w, "event: status\nid: 1\ndata: {\"execution_id\":\"e1\",\"status\":%q,\"attempt\":%d}\n\n", status, attempt)
		}
		switch opens.Add(1) {
		case 1:
			fmt.Fprint(w, ": keep-alive\n\n")
			ev("queued", 0)
		case 2:
			ev("queued", 0)
			ev("running", 1)
		default:
			ev("running", 1)
			ev("succeeded", 1)
		}
	}))
	defer srv.Close()
	var got []string
	for e, err := range remote.New(srv.URL, "k").Events(context.Background(), "e1") {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s/%d", e.Status, e.Attempt))
	}
	if fmt.Sprint(got) != "[queued/0 running/1 succeeded/1]" || opens.Load() != 3 {
		t.Fatalf("yielded %v over %d streams", got, opens.Load())
	}
}
