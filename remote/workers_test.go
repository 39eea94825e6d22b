package remote_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/latch-run/latch/remote"
)

// TestWorkerCalls runs a two-step flow with a signal through the raw worker
// calls: claim, heartbeat, steps, suspend, signal, claim again with the
// journal, complete; then a failure, a retry and the fencing of an old
// token.
func TestWorkerCalls(t *testing.T) {
	ctx := context.Background()
	s := newServer(t)
	c := s.tenant(t, remote.TenantSpec{Name: "acme"})
	e := must(c.Submit(ctx, remote.SubmitRequest{Kind: "flow", Payload: map[string]int{"n": 2}, MaxAttempts: 1}))(t)

	claim := func() remote.Lease {
		t.Helper()
		leases := must(c.Claim(ctx, remote.ClaimRequest{WorkerID: "w1", Kinds: []string{"flow"}, Max: 1, LeaseSeconds: 30, WaitSeconds: 2}))(t)
		if len(leases) != 1 {
			t.Fatalf("claimed %d leases", len(leases))
		}
		return leases[0]
	}
	l := claim()
	if l.ExecutionID != e.ExecutionID || l.Attempt != 1 || l.Tenant != "acme" || string(l.Payload) != `{"n":2}` ||
		len(l.Steps) != 0 || !l.StepsComplete {
		t.Fatalf("lease %+v", l)
	}
	hb := must(c.Heartbeat(ctx, l.ExecutionID, remote.HeartbeatRequest{LeaseToken: l.LeaseToken, LeaseSeconds: 60}))(t)
	if hb.CancelRequested || time.Until(hb.LeaseExpiresAt) < 50*time.Second {
		t.Fatalf("heartbeat %+v", hb)
	}
	started := time.Now().Add(-time.Second).UTC().Truncate(time.Second)
	rec := must(c.RecordStep(ctx, l.ExecutionID, remote.StepRequest{LeaseToken: l.LeaseToken, Name: "double", Result: 4, StartedAt: &started}))(t)
	if !rec.Recorded || string(rec.Result) != "4" {
		t.Fatalf("step %+v", rec)
	}
	if rec := must(c.RecordStep(ctx, l.ExecutionID, remote.StepRequest{LeaseToken: l.LeaseToken, Name: "double", Result: 5}))(t); rec.Recorded || string(rec.Result) != "4" {
		t.Fatalf("a second record of a step: %+v", rec)
	}
	sus := must(c.Suspend(ctx, l.ExecutionID, remote.SuspendRequest{LeaseToken: l.LeaseToken, Step: "approval", Signal: "approve", TimeoutSeconds: 3600}))(t)
	if sus.Status != remote.StatusSuspended || sus.WaitingFor == nil || *sus.WaitingFor != "approve" {
		t.Fatalf("suspend: %+v", sus)
	}
	_, err := c.Heartbeat(ctx, l.ExecutionID, remote.HeartbeatRequest{LeaseToken: l.LeaseToken})
	wantCode(t, err, remote.ErrLeaseLost, http.StatusConflict)

	sig := must(c.Signal(ctx, e.ExecutionID, "approve", map[string]bool{"ok": true}, remote.SignalOptions{IdempotencyKey: "s1"}))(t)
	if !sig.Delivered {
		t.Fatal("the signal did not end the wait")
	}
	if again := must(c.Signal(ctx, e.ExecutionID, "approve", map[string]bool{"ok": true}, remote.SignalOptions{IdempotencyKey: "s1"}))(t); !again.Delivered {
		t.Fatal("a repeat of an idempotency key answered another answer")
	}
	if kept := must(c.Signal(ctx, e.ExecutionID, "later", nil, remote.SignalOptions{}))(t); kept.Delivered {
		t.Fatal("a signal no wait waits for was delivered")
	}

	l2 := claim()
	if l2.Attempt != 1 || string(l2.Steps["double"]) != "4" || string(l2.Steps["approval"]) != `{"ok":true}` {
		t.Fatalf("resumed lease: attempt %d, steps %v", l2.Attempt, l2.Steps)
	}
	var names []string
	for st, err := range c.Steps(ctx, e.ExecutionID, remote.PageOptions{Limit: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, st.Name)
	}
	if len(names) != 2 || names[0] != "double" || names[1] != "approval" {
		t.Fatalf("journal %v", names)
	}
	page := must(c.StepsPage(ctx, e.ExecutionID, remote.PageOptions{}))(t)
	if len(page.Items) != 2 || page.NextCursor != nil || page.Items[0].StartedAt == nil || !page.Items[0].StartedAt.Equal(started) {
		t.Fatalf("steps page %+v", page)
	}
	done := must(c.Complete(ctx, l2.ExecutionID, remote.CompleteRequest{LeaseToken: l2.LeaseToken, Result: json.RawMessage(`{"total":4}`)}))(t)
	if done.Status != remote.StatusSucceeded || string(done.Result) != `{"total":4}` {
		t.Fatalf("complete: %+v", done)
	}
	_, err = c.Complete(ctx, l2.ExecutionID, remote.CompleteRequest{LeaseToken: l2.LeaseToken})
	wantCode(t, err, remote.ErrLeaseLost, http.StatusConflict)
	_, err = c.Signal(ctx, e.ExecutionID, "approve", nil, remote.SignalOptions{})
	wantCode(t, err, remote.ErrNotActive, http.StatusConflict)
	runs := must(c.Attempts(ctx, e.ExecutionID))(t)
	if len(runs.Items) != 2 || *runs.Items[0].Outcome != remote.OutcomeSuspended || *runs.Items[1].Outcome != remote.OutcomeSucceeded ||
		runs.Items[0].WorkerID != "w1" {
		t.Fatalf("attempts %+v", runs.Items)
	}

	// A failure without retry ends it failed; Retry queues it again.
	f := must(c.Submit(ctx, remote.SubmitRequest{Kind: "flow"}))(t)
	l3 := claim()
	if l3.ExecutionID != f.ExecutionID {
		t.Fatalf("claimed %s, want %s", l3.ExecutionID, f.ExecutionID)
	}
	failed := must(c.Fail(ctx, l3.ExecutionID, remote.FailRequest{LeaseToken: l3.LeaseToken, Error: "boom", Retry: ptr(false)}))(t)
	if failed.Status != remote.StatusFailed || failed.Error == nil || *failed.Error != "boom" {
		t.Fatalf("fail: %+v", failed)
	}
	_, err = c.Fail(ctx, l3.ExecutionID, remote.FailRequest{LeaseToken: l3.LeaseToken, Error: "again"})
	wantCode(t, err, remote.ErrLeaseLost, http.StatusConflict)
	if r := must(c.Retry(ctx, f.ExecutionID))(t); r.Status != remote.StatusQueued || r.Attempt != 0 {
		t.Fatalf("retry: %+v", r)
	}
	// A sleep that is due queues it again at once.
	l4 := claim()
	slept := must(c.Suspend(ctx, l4.ExecutionID, remote.SuspendRequest{LeaseToken: l4.LeaseToken, Step: "nap", Until: ptr(time.Now().Add(-time.Second))}))(t)
	if slept.Status != remote.StatusQueued {
		t.Fatalf("a due sleep: %s", slept.Status)
	}

	// Release hands a lease back: queued again, the start given back when
	// unstarted; the token is spent.
	r := must(c.Submit(ctx, remote.SubmitRequest{Kind: "hand-back", MaxAttempts: 1}))(t)
	claimBack := func() remote.Lease {
		t.Helper()
		leases := must(c.Claim(ctx, remote.ClaimRequest{WorkerID: "w1", Kinds: []string{"hand-back"}, WaitSeconds: 2}))(t)
		if len(leases) != 1 {
			t.Fatalf("claimed %d leases", len(leases))
		}
		return leases[0]
	}
	l5 := claimBack()
	if l5.ExecutionID != r.ExecutionID || l5.Attempt != 1 {
		t.Fatalf("claimed %s attempt %d, want %s attempt 1", l5.ExecutionID, l5.Attempt, r.ExecutionID)
	}
	if back := must(c.Release(ctx, l5.ExecutionID, remote.ReleaseRequest{LeaseToken: l5.LeaseToken}))(t); back.Status != remote.StatusQueued || back.Attempt != 1 {
		t.Fatalf("release: %s attempt %d, want queued attempt 1", back.Status, back.Attempt)
	}
	_, err = c.Release(ctx, l5.ExecutionID, remote.ReleaseRequest{LeaseToken: l5.LeaseToken})
	wantCode(t, err, remote.ErrLeaseLost, http.StatusConflict)
	l6 := claimBack() // its attempts are spent, yet a released execution runs again
	if l6.ExecutionID != r.ExecutionID || l6.Attempt != 2 {
		t.Fatalf("claimed %s attempt %d after the release, want %s attempt 2", l6.ExecutionID, l6.Attempt, r.ExecutionID)
	}
	if back := must(c.Release(ctx, l6.ExecutionID, remote.ReleaseRequest{LeaseToken: l6.LeaseToken, Unstarted: true}))(t); back.Status != remote.StatusQueued || back.Attempt != 1 {
		t.Fatalf("unstarted release: %s attempt %d, want queued attempt 1", back.Status, back.Attempt)
	}
	l7 := claimBack()
	must(c.Complete(ctx, l7.ExecutionID, remote.CompleteRequest{LeaseToken: l7.LeaseToken}))(t)

	// A claim that finds nothing within its wait answers none.
	if leases := must(c.Claim(ctx, remote.ClaimRequest{WorkerID: "w1", Kinds: []string{"none"}, WaitSeconds: 1}))(t); len(leases) != 0 {
		t.Fatalf("claimed %d of a kind never submitted", len(leases))
	}
	_, err = c.Claim(ctx, remote.ClaimRequest{})
	if e := wantCode(t, err, remote.ErrInvalidRequest, http.StatusBadRequest); e.Detail == "" {
		t.Fatal("a problem without its detail")
	}
	if !errors.Is(err, remote.ErrInvalidRequest) || errors.Is(err, remote.ErrNotFound) {
		t.Fatal("errors.Is matched the wrong sentinel")
	}
}
