package redis

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/store"
)

// checkEvents reports every way the records of events and subscriptions
// (lib.lua's events section) disagree with each other and with the
// execution hashes: each event's stored step is store.EventStep of it
// (and lean the same without its data), its bytes store.EventSize; an
// idempotency key's kept answer is store.MarshalPublishAnswer's bytes of
// an answer about its event; a wait for an event has its fields only
// while suspended; an execution's consumed set goes with it; a
// subscription is named by its tenant's index and its event's. It
// returns, for the caller's comparison of every sorted set, the members
// the indexes must hold (by key, with their scores), and the bytes each
// tenant's events count in its stored.
func (s *Store) checkEvents(ctx context.Context, all map[string]bool, execs map[string]map[string]string) (
	bad []string, want map[string]map[string]float64, bytes map[string]int64) {
	report := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	want, bytes = map[string]map[string]float64{}, map[string]int64{}
	expect := func(key, member string, score float64) {
		if want[key] == nil {
			want[key] = map[string]float64{}
		}
		want[key][member] = score
	}
	num := func(v string) float64 {
		f, _ := strconv.ParseFloat(v, 64)
		return f
	}
	hash := func(key string) map[string]string {
		m, err := s.rdb.HGetAll(ctx, key).Result()
		if err != nil {
			report("%s: %v", key, err)
		}
		return m
	}
	tenants, err := s.rdb.SMembers(ctx, s.k.tenants()).Result()
	if err != nil {
		return append(bad, err.Error()), want, bytes
	}
	isTenant := map[string]bool{}
	for _, t := range tenants {
		isTenant[t] = true
	}
	events := map[string]map[string]string{}
	for key := range all {
		if id, ok := strings.CutPrefix(key, s.k.event("")); ok {
			events[id] = hash(key)
		}
	}
	for id, m := range events {
		t, name, key := m["tenant"], m["name"], m["key"]
		if m["id"] != id || !isTenant[t] {
			report("event %s: id %q of tenant %q, which does not exist", id, m["id"], t)
		}
		if _, ok := m["key"]; ok && key == "" {
			report("event %s: an empty key field", id)
		}
		var rec struct {
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal([]byte(m["step"]), &rec); err != nil {
			report("event %s: step %q: %v", id, m["step"], err)
			continue
		}
		e := &store.Event{ID: id, Name: name, Key: key, Data: rec.Data, PublishedAt: fromUS(int64(num(m["pub"])))}
		if string(rec.Data) == "null" {
			e.Data = nil
		}
		if got := string(store.EventStep(e)); got != m["step"] {
			report("event %s: step %s, want store.EventStep %s", id, m["step"], got)
		}
		if got := string(store.EventStepWithin("", e, 0)); got != m["lean"] {
			report("event %s: lean %s, want %s", id, m["lean"], got)
		}
		// Data published as null or as nothing are the same step.
		size := store.EventSize(name, key, rec.Data)
		if string(rec.Data) == "null" && m["bytes"] == strconv.FormatInt(store.EventSize(name, key, nil), 10) {
			size = store.EventSize(name, key, nil)
		}
		if m["bytes"] != strconv.FormatInt(size, 10) {
			report("event %s: bytes %q, want store.EventSize %d", id, m["bytes"], size)
		}
		bytes[t] += size
		seq, _ := strconv.ParseInt(m["seq"], 10, 64)
		member := eventMember(seq, id)
		expect(s.k.eventsByName(scoped(t, name)), member, num(m["pub"]))
		if key != "" {
			expect(s.k.eventsByKey(eventKeyScope(t, name, key)), member, num(m["pub"]))
		}
		expect(s.k.eventExp(t), id, num(m["exp"]))
	}
	// An idempotency key answers for an event that kept it. (An event may
	// have lost its key's answer to a later publish of the key, made
	// after its expiry and before Prune.)
	for key := range all {
		t, ok := strings.CutPrefix(key, s.k.eventIdem(""))
		if !ok {
			continue
		}
		for idem, a := range hash(key) {
			r, err := store.UnmarshalPublishAnswer([]byte(a))
			if err != nil {
				report("%s: key %q: %v", key, idem, err)
				continue
			}
			if string(store.MarshalPublishAnswer(r)) != a {
				report("%s: key %q keeps %s, not store.MarshalPublishAnswer's bytes %s", key, idem, a, store.MarshalPublishAnswer(r))
			}
			if ev := events[r.EventID]; ev == nil || ev["tenant"] != t || ev["idem"] != idem {
				report("%s: key %q answers for event %s, which is not its event", key, idem, r.EventID)
			}
		}
	}
	// Waits for an event.
	for id, e := range execs {
		name, isEvent := store.EventWaitName(e["waiting"])
		_, hasSince := e["esince"]
		waits := e["status"] == "suspended" && isEvent && hasSince
		if !waits {
			if _, ok := e["ekey"]; ok || hasSince {
				report("exec %s: %s with a wait for an event's fields (waiting %q)", id, e["status"], e["waiting"])
			}
		} else {
			t := e["tenant"]
			if k, ok := e["ekey"]; ok {
				expect(s.k.eventWaitsKey(eventKeyScope(t, name, k)), id, num(e["esince"]))
			} else {
				expect(s.k.eventWaits(scoped(t, name)), id, num(e["esince"]))
			}
			if e["fbytes"] == "" {
				report("exec %s: a wait for an event without its bound of bytes", id)
			}
		}
	}
	for key := range all {
		id, ok := strings.CutPrefix(key, s.k.consumed(""))
		if !ok {
			continue
		}
		if execs[id] == nil {
			report("%s left behind by execution %s", key, id)
			continue
		}
		n, _ := s.rdb.SCard(ctx, key).Result()
		steps, _ := s.rdb.HLen(ctx, s.k.steps(id)).Result()
		if n > steps {
			report("exec %s: consumed %d events, with %d steps", id, n, steps)
		}
	}
	// Subscriptions.
	for key := range all {
		sc, ok := strings.CutPrefix(key, s.k.subscription(""))
		if !ok {
			continue
		}
		m := hash(key)
		t := m["tenant"]
		if scoped(t, m["name"]) != sc || !isTenant[t] || m["event"] == "" || m["kind"] == "" || m["qp"] == "" {
			report("subscription %s: tenant %q name %q event %q kind %q template %q", sc, t, m["name"], m["event"], m["kind"], m["qp"])
		}
		expect(s.k.subscriptions(t), m["name"], 0)
		expect(s.k.subsByEvent(scoped(t, m["event"])), m["name"], 0)
	}
	return bad, want, bytes
}

// eventPrefixes are the sorted sets checkEvents says the contents of.
func (s *Store) eventPrefixes() []string {
	return []string{s.k.eventsByName(""), s.k.eventsByKey(""), s.k.eventExp(""), s.k.eventWaits(""),
		s.k.eventWaitsKey(""), s.k.subscriptions(""), s.k.subsByEvent("")}
}

// TestCheckEventsFindsCorruption shows the check can fail: each way of
// breaking the events' records it is meant to see is reported.
func TestCheckEventsFindsCorruption(t *testing.T) {
	ns := testdb.Redis(t, "latchtest-", "the consistency check of events")
	ctx := context.Background()
	s, err := Open(ctx, ns.URL, WithPrefix(ns.Prefix))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme", Now: now}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Publish(ctx, &store.PublishParams{Tenant: "acme", Name: "paid", Key: "k", Data: json.RawMessage(`1`),
		IdempotencyKey: "i", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Admit(ctx, &store.AdmitParams{Tenant: "acme", Items: []store.Submission{{Kind: "flow"}}, Now: now}); err != nil {
		t.Fatal(err)
	}
	c, err := s.Claim(ctx, &store.ClaimParams{WorkerID: "w", Max: 1, LeaseDuration: time.Hour, Now: now})
	if err != nil || len(c.Leases) != 1 {
		t.Fatalf("claim: %v %v", c, err)
	}
	id := c.Leases[0].ExecutionID
	if _, err := s.Suspend(ctx, &store.SuspendParams{ExecutionID: id, Token: c.Leases[0].Token, Step: "w", Event: "paid",
		EventKey: "other", Now: now}); err != nil {
		t.Fatal(err)
	}
	if bad, err := s.checkConsistency(ctx); err != nil || len(bad) != 0 {
		t.Fatalf("a consistent namespace: %q %v", bad, err)
	}
	waits := s.k.eventWaitsKey(eventKeyScope("acme", "paid", "other"))
	member := eventMember(1, res.EventID)
	for _, tc := range []struct {
		name          string
		break_, mend_ func() error
	}{
		{"stored", func() error { return s.rdb.HIncrBy(ctx, s.k.tenant("acme"), "stored", 1).Err() },
			func() error { return s.rdb.HIncrBy(ctx, s.k.tenant("acme"), "stored", -1).Err() }},
		{"index", func() error { return s.rdb.ZRem(ctx, s.k.eventsByName(scoped("acme", "paid")), member).Err() },
			func() error {
				return s.rdb.ZAdd(ctx, s.k.eventsByName(scoped("acme", "paid")), goredis.Z{Score: float64(us(now)), Member: member}).Err()
			}},
		{"waiter", func() error { return s.rdb.ZRem(ctx, waits, id).Err() },
			func() error {
				return s.rdb.ZAdd(ctx, waits, goredis.Z{Score: float64(us(now)), Member: id}).Err()
			}},
		{"answer", func() error {
			return s.rdb.HSet(ctx, s.k.eventIdem("acme"), "j", `{"event_id":"x","resumed":0,"started":[]}`).Err()
		},
			func() error { return s.rdb.HDel(ctx, s.k.eventIdem("acme"), "j").Err() }},
		{"bytes", func() error { return s.rdb.HSet(ctx, s.k.event(res.EventID), "bytes", 1).Err() },
			func() error {
				return s.rdb.HSet(ctx, s.k.event(res.EventID), "bytes", store.EventSize("paid", "k", json.RawMessage(`1`))).Err()
			}},
	} {
		if err := tc.break_(); err != nil {
			t.Fatal(err)
		}
		if bad, err := s.checkConsistency(ctx); err != nil || len(bad) == 0 {
			t.Errorf("%s broken: the check reports nothing (%v)", tc.name, err)
		}
		if err := tc.mend_(); err != nil {
			t.Fatal(err)
		}
		if bad, err := s.checkConsistency(ctx); err != nil || len(bad) != 0 {
			t.Fatalf("%s mended: %q %v", tc.name, bad, err)
		}
	}
}
