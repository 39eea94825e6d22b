package storetest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// The env's calls of Publish, waits for an event and subscriptions, and
// the checks the Events family shares.

func (e *env) publishWith(p store.PublishParams) (*store.PublishResult, error) {
	if p.Tenant == "" {
		p.Tenant = acme
	}
	return e.s.Publish(e.ctx, &p)
}

// publish publishes an event that must be accepted and checks the
// answer's shape: a new event (not Replayed) with a UUIDv7 id.
func (e *env) publish(tenant, name, key, data string, now time.Time) *store.PublishResult {
	e.t.Helper()
	res, err := e.publishWith(store.PublishParams{Tenant: tenant, Name: name, Key: key, Data: rawOrNil(data), Now: now})
	e.must(err, "Publish "+name)
	checkPublish(e.t, "Publish "+name, res)
	if res.Replayed {
		e.t.Errorf("Publish %s without an idempotency key: Replayed true", name)
	}
	return res
}

// checkPublish checks the shape of a publish's answer.
func checkPublish(t testing.TB, what string, res *store.PublishResult) {
	t.Helper()
	if res == nil {
		t.Fatalf("%s: nil result and no error", what)
	}
	if !uuidV7.MatchString(res.EventID) {
		t.Errorf("%s: EventID %q is not a UUIDv7", what, res.EventID)
	}
	if res.Resumed < 0 {
		t.Errorf("%s: Resumed %d", what, res.Resumed)
	}
	for i, s := range res.Started {
		if (s.ExecutionID == "") == (s.Err == nil) {
			t.Errorf("%s: start %d (%s) has execution %q and error %v: want exactly one", what, i, s.Subscription, s.ExecutionID, s.Err)
		}
	}
}

// wantPublished asserts what a publish did: how many waits it resumed
// and which subscriptions it started, in order.
func wantPublished(t testing.TB, what string, res *store.PublishResult, resumed int, subs ...string) {
	t.Helper()
	if res.Resumed != resumed {
		t.Errorf("%s: Resumed %d, want %d", what, res.Resumed, resumed)
	}
	got := make([]string, len(res.Started))
	for i, s := range res.Started {
		got[i] = s.Subscription
	}
	if fmt.Sprint(got) != fmt.Sprint(subs) {
		t.Errorf("%s: started for subscriptions %q, want %q (name order)", what, got, subs)
	}
}

func rawOrNil(data string) json.RawMessage {
	if data == "" {
		return nil
	}
	return mustJSON(data)
}

// eventOf is the event a publish's answer names, as the publish described it.
func eventOf(res *store.PublishResult, name, key, data string, now time.Time) *store.Event {
	return &store.Event{ID: res.EventID, Name: name, Key: key, Data: rawOrNil(data), PublishedAt: now}
}

// eventSize is what the event counts in its tenant's storage budget.
func eventSize(name, key, data string) int64 {
	return store.EventSize(name, key, rawOrNil(data))
}

// waitEvent suspends a running execution to wait for an event.
func (e *env) waitEvent(l store.Lease, now time.Time, step, event, key string, since time.Time, timeout time.Duration) (*store.Execution, error) {
	return e.s.Suspend(e.ctx, &store.SuspendParams{
		ExecutionID: l.ExecutionID, Tenant: l.Tenant, Token: l.Token, Step: step,
		Event: event, EventKey: key, Since: since, Timeout: timeout, Now: now,
	})
}

// wantWaitEvent waits for an event and asserts the answer's status:
// suspended (no match yet) or queued (a match consumed at once).
func (e *env) wantWaitEvent(l store.Lease, now time.Time, step, event, key string, since time.Time, want store.Status) *store.Execution {
	e.t.Helper()
	x, err := e.waitEvent(l, now, step, event, key, since, 0)
	e.must(err, "Suspend for event "+event)
	if x == nil {
		e.t.Fatal("Suspend returned a nil execution and no error")
	}
	if x.Status != want {
		e.t.Errorf("Suspend of %s waiting for event %q: %s, want %s", l.ExecutionID, event, x.Status, want)
	}
	return x
}

// runKind admits a job of kind in tenant at now and claims it by kind.
func (e *env) runKind(tenant, kind string, now time.Time) store.Lease {
	e.t.Helper()
	x := e.submit(tenant, now, job(kind))
	return e.reclaim(tenant, kind, x.ID, now)
}

// runCreated admits a job of kind in tenant at created and claims it by
// kind at now.
func (e *env) runCreated(tenant, kind string, created, now time.Time) store.Lease {
	e.t.Helper()
	x := e.submit(tenant, created, job(kind))
	return e.reclaim(tenant, kind, x.ID, now)
}

// reclaim claims execution id (of a kind nothing else ready has) again.
func (e *env) reclaim(tenant, kind, id string, now time.Time) store.Lease {
	e.t.Helper()
	for _, l := range e.claim(store.ClaimParams{Tenant: tenant, Kinds: []string{kind}, Max: 10, Now: now}) {
		if l.ExecutionID == id {
			return l
		}
		e.t.Fatalf("claim of kind %s handed out %s, want only %s", kind, l.ExecutionID, id)
	}
	e.t.Fatalf("execution %s (kind %s) was not claimable at %s", id, kind, now.Sub(base))
	return store.Lease{}
}

// wantEventState asserts a tenant's Inflight (as CheckInflight) and that
// its StoredBytes is its executions' plus the bytes of its retained
// events (CheckStorage counts executions only).
func (e *env) wantEventState(tenant string, inflight int, eventBytes int64) {
	e.t.Helper()
	tn := e.tenant(tenant)
	if tn.Inflight != inflight {
		e.t.Errorf("tenant %s: Inflight = %d, want %d", tenant, tn.Inflight, inflight)
	}
	n := 0
	var sum int64
	for _, x := range listAll(e.t, e.s, store.ListParams{Tenant: tenant, Limit: 500}) {
		sum += x.StoredBytes
		switch x.Status {
		case store.StatusScheduled, store.StatusQueued, store.StatusRunning, store.StatusSuspended:
			n++
		}
	}
	if tn.Inflight != n {
		e.t.Errorf("I3: tenant %s has Inflight = %d but %d executions in flight", tenant, tn.Inflight, n)
	}
	if tn.StoredBytes != sum+eventBytes {
		e.t.Errorf("I14: tenant %s has StoredBytes = %d, want its executions' %d plus its events' %d = %d",
			tenant, tn.StoredBytes, sum, eventBytes, sum+eventBytes)
	}
}

// wantEventStep asserts that the execution's journal holds step as the
// given event (EventStep).
func (e *env) wantEventStep(id, step string, ev *store.Event) {
	e.t.Helper()
	for _, s := range e.steps(id) {
		if s.Name == step {
			wantJSON(e.t, "step "+step+" of "+id, s.Result, store.EventStep(ev))
			return
		}
	}
	e.t.Errorf("execution %s: no step %q (want the event %s)", id, step, ev.ID)
}

func (e *env) putSub(sub store.Subscription, now time.Time) *store.PutSubscriptionResult {
	e.t.Helper()
	if sub.Tenant == "" {
		sub.Tenant = acme
	}
	res, err := e.s.PutSubscription(e.ctx, &store.PutSubscriptionParams{Subscription: sub, Now: now})
	e.must(err, "PutSubscription "+sub.Name)
	if res == nil || res.Subscription == nil {
		e.t.Fatal("PutSubscription returned no subscription and no error")
	}
	return res
}

// sub is an enabled subscription of acme starting kind on event.
func sub(name, event, kind string) store.Subscription {
	return store.Subscription{Tenant: acme, Name: name, Event: event, Kind: kind, Enabled: true}
}

func wantSub(t testing.TB, what string, got *store.Subscription, want store.Subscription) {
	t.Helper()
	if got == nil {
		t.Errorf("%s: nil subscription", what)
		return
	}
	g, w := *got, want
	if !g.CreatedAt.Equal(w.CreatedAt) || !g.UpdatedAt.Equal(w.UpdatedAt) {
		t.Errorf("%s: created %s updated %s, want %s and %s", what, fmtTime(g.CreatedAt), fmtTime(g.UpdatedAt), fmtTime(w.CreatedAt), fmtTime(w.UpdatedAt))
	}
	g.CreatedAt, g.UpdatedAt, w.CreatedAt, w.UpdatedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if g != w {
		t.Errorf("%s: got %+v, want %+v", what, g, w)
	}
}

// byDedupKey reads the executions of tenant under a dedup key.
func (e *env) byDedupKey(tenant, key string) []*store.Execution {
	e.t.Helper()
	return listAll(e.t, e.s, store.ListParams{Tenant: tenant, DedupKey: key, Limit: 100})
}
