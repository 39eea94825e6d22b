package redis_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/redis"
)

// The Redis backend's own tests of events (the shared Events family is
// storetest's): on one node, on a Redis Cluster, and through the tenant
// router, each store checked for consistency when its test ends.

func eachEventStore(t *testing.T, fn func(t *testing.T, s store.Store)) {
	for _, v := range []struct {
		name string
		open func(t *testing.T) store.Store
	}{{"redis", newStore}, {"redis-cluster", newClusterStore}, {"router", newRouterStore}} {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			fn(t, v.open(t))
		})
	}
}

var evT0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// evRunning admits n executions of tenant at now and claims them.
func evRunning(t *testing.T, s store.Store, tenant string, n int, now time.Time) []store.Lease {
	t.Helper()
	ctx := context.Background()
	items := make([]store.Submission, n)
	for i := range items {
		items[i] = store.Submission{Kind: "flow"}
	}
	res, err := s.Admit(ctx, &store.AdmitParams{Tenant: tenant, Items: items, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range res.Items {
		if it.Err != nil {
			t.Fatal(it.Err)
		}
	}
	var leases []store.Lease
	for len(leases) < n {
		c, err := s.Claim(ctx, &store.ClaimParams{WorkerID: "w", Tenant: tenant, Kinds: []string{"flow"}, Max: n - len(leases),
			LeaseDuration: time.Hour, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Leases) == 0 {
			t.Fatalf("claimed %d of %d", len(leases), n)
		}
		leases = append(leases, c.Leases...)
	}
	return leases
}

// evStep reads the step name of execution id.
func evStep(t *testing.T, s store.Store, id, name string) json.RawMessage {
	t.Helper()
	page, err := s.Steps(context.Background(), &store.StepsParams{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range page.Items {
		if st.Name == name {
			return st.Result
		}
	}
	return nil
}

func evTenant(t *testing.T, s store.Store, name string, maxInflight int) {
	t.Helper()
	if _, err := s.CreateTenant(context.Background(), &store.CreateTenantParams{Name: name, MaxInflight: maxInflight,
		EventRetention: time.Hour, Now: evT0}); err != nil {
		t.Fatal(err)
	}
}

// A wait consumes the oldest retained match, once: a second wait for the
// same event suspends; a publish resumes it (its key matched), not a wait
// for another key; the event is recorded as the step.
func TestEventsWaitAndPublish(t *testing.T) {
	eachEventStore(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		evTenant(t, s, "acme", 10)
		evTenant(t, s, "other", 10)
		l := evRunning(t, s, "acme", 3, evT0)
		first, err := s.Publish(ctx, &store.PublishParams{Tenant: "acme", Name: "paid", Key: "o1", Data: json.RawMessage(`{"n":1}`), Now: evT0.Add(time.Second)})
		if err != nil || first.EventID == "" || first.Resumed != 0 || len(first.Started) != 0 {
			t.Fatalf("publish: %+v %v", first, err)
		}
		second, err := s.Publish(ctx, &store.PublishParams{Tenant: "acme", Name: "paid", Key: "o2", Now: evT0.Add(2 * time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		// Another tenant's publish is never seen.
		if _, err := s.Publish(ctx, &store.PublishParams{Tenant: "other", Name: "paid", Now: evT0}); err != nil {
			t.Fatal(err)
		}
		now := evT0.Add(3 * time.Second)
		e, err := s.Suspend(ctx, &store.SuspendParams{ExecutionID: l[0].ExecutionID, Token: l[0].Token, Step: "w1", Event: "paid", Now: now})
		if err != nil || e.Status != store.StatusQueued {
			t.Fatalf("suspend with a retained match: %v %v", e, err)
		}
		want := store.EventStep(&store.Event{ID: first.EventID, Name: "paid", Key: "o1", Data: json.RawMessage(`{"n":1}`), PublishedAt: evT0.Add(time.Second)})
		if got := evStep(t, s, l[0].ExecutionID, "w1"); string(got) != string(want) {
			t.Errorf("step %s, want %s", got, want)
		}
		// Keyed wait: only o2 matches.
		e, err = s.Suspend(ctx, &store.SuspendParams{ExecutionID: l[1].ExecutionID, Token: l[1].Token, Step: "w", Event: "paid", EventKey: "o2", Now: now})
		if err != nil || e.Status != store.StatusQueued {
			t.Fatalf("keyed suspend: %v %v", e, err)
		}
		if got := evStep(t, s, l[1].ExecutionID, "w"); !json.Valid(got) || !containsID(got, second.EventID) {
			t.Errorf("keyed step %s, want event %s", got, second.EventID)
		}
		// A wait since after both: suspends; o3 does not match a wait for o4.
		e, err = s.Suspend(ctx, &store.SuspendParams{ExecutionID: l[2].ExecutionID, Token: l[2].Token, Step: "w", Event: "paid", EventKey: "o4",
			Since: now, Timeout: time.Minute, Now: now})
		if err != nil || e.Status != store.StatusSuspended || e.WaitingFor != store.EventWaitFor("paid") {
			t.Fatalf("suspend without a match: %v %v", e, err)
		}
		if r, err := s.Publish(ctx, &store.PublishParams{Tenant: "acme", Name: "paid", Key: "o3", Now: now.Add(time.Second)}); err != nil || r.Resumed != 0 {
			t.Fatalf("publish of another key: %+v %v", r, err)
		}
		r, err := s.Publish(ctx, &store.PublishParams{Tenant: "acme", Name: "paid", Key: "o4", Now: now.Add(2 * time.Second)})
		if err != nil || r.Resumed != 1 {
			t.Fatalf("publish of its key: %+v %v", r, err)
		}
		if got := evStep(t, s, l[2].ExecutionID, "w"); !containsID(got, r.EventID) {
			t.Errorf("step %s, want event %s", got, r.EventID)
		}
		// The first execution, claimed again, waits again: o1 is consumed,
		// o2, o3 and o4 are its matches, oldest first.
		c, err := s.Claim(ctx, &store.ClaimParams{WorkerID: "w", Tenant: "acme", Max: 10, LeaseDuration: time.Hour, Now: now.Add(3 * time.Second)})
		if err != nil || len(c.Leases) != 3 {
			t.Fatalf("claim again: %v %v", c, err)
		}
		for _, ls := range c.Leases {
			if ls.ExecutionID != l[0].ExecutionID {
				continue
			}
			e, err := s.Suspend(ctx, &store.SuspendParams{ExecutionID: ls.ExecutionID, Token: ls.Token, Step: "w2", Event: "paid", Now: now.Add(3 * time.Second)})
			if err != nil || e.Status != store.StatusQueued {
				t.Fatalf("second wait: %v %v", e, err)
			}
			if got := evStep(t, s, ls.ExecutionID, "w2"); !containsID(got, second.EventID) {
				t.Errorf("second wait's step %s, want the next oldest %s", got, second.EventID)
			}
		}
	})
}

func containsID(b json.RawMessage, id string) bool {
	var r struct {
		EventID string `json:"event_id"`
	}
	return json.Unmarshal(b, &r) == nil && r.EventID == id
}

// Subscriptions start one execution per publish, with the event as
// payload and its dedup key; a start the quota refuses is answered and
// the publish goes on; a repeat of the idempotency key answers the first
// answer and starts nothing.
func TestEventsSubscriptions(t *testing.T) {
	eachEventStore(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		evTenant(t, s, "acme", 1)
		for _, name := range []string{"b-sub", "a-sub", "off"} {
			res, err := s.PutSubscription(ctx, &store.PutSubscriptionParams{Subscription: store.Subscription{Tenant: "acme", Name: name,
				Event: "paid", Kind: "bill", Queue: "money", Enabled: name != "off"}, Now: evT0})
			if err != nil || !res.Created {
				t.Fatalf("put %s: %+v %v", name, res, err)
			}
		}
		if _, err := s.PutSubscription(ctx, &store.PutSubscriptionParams{Subscription: store.Subscription{Tenant: "acme", Name: "x",
			Event: "paid", Kind: "bill"}, MaxSubscriptions: 3, Now: evT0}); !errors.Is(err, store.ErrTooManySubscriptions) {
			t.Errorf("a fourth of three: %v", err)
		}
		if _, err := s.PutSubscription(ctx, &store.PutSubscriptionParams{Subscription: store.Subscription{Tenant: "nobody", Name: "x",
			Event: "paid", Kind: "bill"}, Now: evT0}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("unknown tenant: %v", err)
		}
		p := &store.PublishParams{Tenant: "acme", Name: "paid", Data: json.RawMessage(`[1]`), IdempotencyKey: "k1", Now: evT0.Add(time.Second)}
		res, err := s.Publish(ctx, p)
		if err != nil || len(res.Started) != 2 || res.Replayed {
			t.Fatalf("publish: %+v %v", res, err)
		}
		a, b := res.Started[0], res.Started[1]
		if a.Subscription != "a-sub" || a.Err != nil || a.ExecutionID == "" {
			t.Errorf("a-sub's start: %+v", a)
		}
		if b.Subscription != "b-sub" || !errors.Is(b.Err, store.ErrQuotaExceeded) || b.ExecutionID != "" {
			t.Errorf("b-sub's start (quota 1): %+v", b)
		}
		x, err := s.Get(ctx, &store.GetParams{ID: a.ExecutionID})
		if err != nil {
			t.Fatal(err)
		}
		want := store.EventStep(&store.Event{ID: res.EventID, Name: "paid", Data: json.RawMessage(`[1]`), PublishedAt: evT0.Add(time.Second)})
		if string(x.Payload) != string(want) || x.DedupKey != store.EventDedupKey(res.EventID, "a-sub") || x.Queue != "money" || x.Kind != "bill" {
			t.Errorf("started %+v, want payload %s", x, want)
		}
		again, err := s.Publish(ctx, p)
		if err != nil || !again.Replayed || again.EventID != res.EventID || len(again.Started) != 2 ||
			again.Started[0].ExecutionID != a.ExecutionID || !errors.Is(again.Started[1].Err, store.ErrQuotaExceeded) {
			t.Fatalf("replay: %+v %v", again, err)
		}
		ten, _ := s.GetTenant(ctx, &store.GetTenantParams{Name: "acme"})
		if ten.Inflight != 1 {
			t.Errorf("inflight %d after a replay, want 1", ten.Inflight)
		}
		list, err := s.ListSubscriptions(ctx, &store.ListSubscriptionsParams{})
		if err != nil || len(list) != 3 || list[0].Name != "a-sub" || list[2].Name != "off" || list[2].Enabled {
			t.Errorf("list: %v %v", list, err)
		}
		if err := s.DeleteSubscription(ctx, &store.DeleteSubscriptionParams{Tenant: "acme", Name: "a-sub"}); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteSubscription(ctx, &store.DeleteSubscriptionParams{Tenant: "acme", Name: "a-sub"}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("second delete: %v", err)
		}
		// Moved to another event: a publish of the old name starts nothing.
		if _, err := s.PutSubscription(ctx, &store.PutSubscriptionParams{Subscription: store.Subscription{Tenant: "acme", Name: "b-sub",
			Event: "shipped", Kind: "bill", Enabled: true}, Now: evT0}); err != nil {
			t.Fatal(err)
		}
		if r, err := s.Publish(ctx, &store.PublishParams{Tenant: "acme", Name: "paid", Now: evT0.Add(2 * time.Second)}); err != nil || len(r.Started) != 0 {
			t.Errorf("publish after the move: %+v %v", r, err)
		}
		if _, err := s.Publish(ctx, &store.PublishParams{Tenant: "nobody", Name: "paid", Now: evT0}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("publish to an unknown tenant: %v", err)
		}
	})
}

// An event counts in its tenant's storage budget until Prune deletes it
// at its expiry (its idempotency key with it); a wait's timeout ends it
// once; DeleteTenant leaves nothing of events or subscriptions behind
// (the consistency check at the end).
func TestEventsRetentionAndBudget(t *testing.T) {
	eachEventStore(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		if _, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme", MaxStoredBytes: 1000, EventRetention: time.Minute, Now: evT0}); err != nil {
			t.Fatal(err)
		}
		data := json.RawMessage(`"abc"`)
		p := &store.PublishParams{Tenant: "acme", Name: "tick", Data: data, IdempotencyKey: "k", Now: evT0}
		res, err := s.Publish(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		ten, _ := s.GetTenant(ctx, &store.GetTenantParams{Name: "acme"})
		if size := store.EventSize("tick", "", data); ten.StoredBytes != size {
			t.Errorf("stored %d, want the event's %d", ten.StoredBytes, size)
		}
		big := json.RawMessage(`"` + strings.Repeat("d", 900) + `"`)
		if _, err := s.Publish(ctx, &store.PublishParams{Tenant: "acme", Name: "tick", Data: big, Now: evT0}); !errors.Is(err, store.ErrStorageExceeded) {
			t.Errorf("publish past the budget: %v", err)
		}
		l := evRunning(t, s, "acme", 1, evT0)
		e, err := s.Suspend(ctx, &store.SuspendParams{ExecutionID: l[0].ExecutionID, Token: l[0].Token, Step: "w", Event: "tock", Timeout: time.Second, Now: evT0})
		if err != nil || e.Status != store.StatusSuspended {
			t.Fatalf("suspend: %v %v", e, err)
		}
		if w, err := s.Wake(ctx, &store.WakeParams{Now: evT0.Add(2 * time.Second)}); err != nil || w.Woken != 1 {
			t.Fatalf("wake: %+v %v", w, err)
		}
		if got := evStep(t, s, l[0].ExecutionID, "w"); string(got) != string(store.TimedOut) {
			t.Errorf("timed out step %s", got)
		}
		if r, err := s.Publish(ctx, &store.PublishParams{Tenant: "acme", Name: "tock", Now: evT0.Add(3 * time.Second)}); err != nil || r.Resumed != 0 {
			t.Errorf("a publish after the timeout: %+v %v", r, err)
		}
		ten, _ = s.GetTenant(ctx, &store.GetTenantParams{Name: "acme"})
		before := ten.StoredBytes
		// Not yet expired: kept.
		if _, err := s.Prune(ctx, &store.PruneParams{Now: evT0.Add(30 * time.Second)}); err != nil {
			t.Fatal(err)
		}
		if again, err := s.Publish(ctx, p); err != nil || !again.Replayed || again.EventID != res.EventID {
			t.Errorf("replay before expiry: %+v %v", again, err)
		}
		if _, err := s.Prune(ctx, &store.PruneParams{Now: evT0.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		ten, _ = s.GetTenant(ctx, &store.GetTenantParams{Name: "acme"})
		if want := before - store.EventSize("tick", "", data) - store.EventSize("tock", "", nil); ten.StoredBytes != want {
			t.Errorf("stored %d after prune, want %d (both events' bytes given back)", ten.StoredBytes, want)
		}
		fresh, err := s.Publish(ctx, &store.PublishParams{Tenant: "acme", Name: "tick", IdempotencyKey: "k", Now: evT0.Add(time.Hour)})
		if err != nil || fresh.Replayed || fresh.EventID == res.EventID {
			t.Errorf("the key after its event's expiry: %+v %v", fresh, err)
		}
		if _, err := s.PutSubscription(ctx, &store.PutSubscriptionParams{Subscription: store.Subscription{Tenant: "acme", Name: "s",
			Event: "tick", Kind: "k", Enabled: true}, Now: evT0}); err != nil {
			t.Fatal(err)
		}
		l2 := evRunning(t, s, "acme", 1, evT0.Add(time.Hour))
		if _, err := s.Suspend(ctx, &store.SuspendParams{ExecutionID: l2[0].ExecutionID, Token: l2[0].Token, Step: "w", Event: "never", Now: evT0.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteTenant(ctx, &store.DeleteTenantParams{Name: "acme", Force: true}); err != nil {
			t.Fatal(err)
		}
	})
}

// A publish racing the waits never loses a wake-up: every execution that
// waits for the event, concurrently with its publish, consumes it, either
// at its suspend or by the publish, exactly once.
func TestEventsPublishRacesSuspend(t *testing.T) {
	eachEventStore(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		evTenant(t, s, "acme", 100)
		const n = 12
		leases := evRunning(t, s, "acme", n, evT0)
		var wg sync.WaitGroup
		var res *store.PublishResult
		var perr error
		start := make(chan struct{})
		wg.Add(n + 1)
		go func() {
			defer wg.Done()
			<-start
			res, perr = s.Publish(ctx, &store.PublishParams{Tenant: "acme", Name: "go", Now: evT0.Add(time.Second)})
		}()
		queued := make([]bool, n)
		errs := make([]error, n)
		for i, l := range leases {
			go func() {
				defer wg.Done()
				<-start
				e, err := s.Suspend(ctx, &store.SuspendParams{ExecutionID: l.ExecutionID, Token: l.Token, Step: "w", Event: "go", Now: evT0.Add(time.Second)})
				errs[i] = err
				queued[i] = err == nil && e.Status == store.StatusQueued
			}()
		}
		close(start)
		wg.Wait()
		if perr != nil {
			t.Fatal(perr)
		}
		atSuspend := 0
		for i, l := range leases {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			if queued[i] {
				atSuspend++
			}
			e, err := s.Get(ctx, &store.GetParams{ID: l.ExecutionID})
			if err != nil || e.Status != store.StatusQueued {
				t.Errorf("execution %d: %v %v (a lost wake-up)", i, e, err)
			}
			if got := evStep(t, s, l.ExecutionID, "w"); !containsID(got, res.EventID) {
				t.Errorf("execution %d: step %s", i, got)
			}
		}
		if atSuspend+res.Resumed != n {
			t.Errorf("%d consumed at their suspend, %d resumed by the publish: want %d in all", atSuspend, res.Resumed, n)
		}
	})
}

// Through the tenant router, a publish that resumed a wait and started a
// subscription's execution lowers its tenant's claim hint, so that a claim
// over every tenant finds both after the hint was cleared for want of
// work; a signal of the wait's name ("event:<name>") does not end it.
func TestRouterPublishLowersClaimHint(t *testing.T) {
	url := clusterURL(t)
	r := openRouter(t, url, newClusterPrefix(t, url))
	t.Cleanup(func() { r.Close() })
	t.Cleanup(func() { redis.CheckRouterConsistency(t, r) })
	ctx := context.Background()
	evTenant(t, r, "acme", 10)
	if _, err := r.PutSubscription(ctx, &store.PutSubscriptionParams{Subscription: store.Subscription{Tenant: "acme", Name: "s",
		Event: "paid", Kind: "bill", Enabled: true}, Now: evT0}); err != nil {
		t.Fatal(err)
	}
	l := evRunning(t, r, "acme", 1, evT0)
	if e, err := r.Suspend(ctx, &store.SuspendParams{ExecutionID: l[0].ExecutionID, Token: l[0].Token, Step: "w", Event: "paid", Now: evT0}); err != nil || e.Status != store.StatusSuspended {
		t.Fatalf("suspend: %v %v", e, err)
	}
	if res, err := r.Signal(ctx, &store.SignalParams{ExecutionID: l[0].ExecutionID, Name: store.EventWaitFor("paid"), Now: evT0}); err != nil || res.Delivered {
		t.Fatalf("a signal named as the wait: %+v %v, want kept, not delivered", res, err)
	}
	c, err := r.Claim(ctx, &store.ClaimParams{WorkerID: "w", Max: 10, LeaseDuration: time.Hour, Now: evT0})
	if err != nil || len(c.Leases) != 0 {
		t.Fatalf("claim with nothing ready: %v %v", c, err)
	}
	if err := r.RawClient().ZScore(ctx, r.HintKey("claim"), "acme").Err(); !errors.Is(err, goredis.Nil) {
		t.Fatalf("claim hint after a claim that found nothing: %v, want none", err)
	}
	res, err := r.Publish(ctx, &store.PublishParams{Tenant: "acme", Name: "paid", Now: evT0.Add(time.Second)})
	if err != nil || res.Resumed != 1 || len(res.Started) != 1 || res.Started[0].Err != nil {
		t.Fatalf("publish: %+v %v", res, err)
	}
	c, err = r.Claim(ctx, &store.ClaimParams{WorkerID: "w", Max: 10, LeaseDuration: time.Hour, Now: evT0.Add(time.Second)})
	if err != nil || len(c.Leases) != 2 {
		t.Fatalf("claim after the publish: %v %v, want the resumed wait and the started execution", c, err)
	}
}
