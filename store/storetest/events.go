package storetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// testEvents covers I14 (store/events.go): Publish, waits for an event,
// event retention and the storage budget. events_subs.go holds the
// subscriptions, events_storage.go what an event's copies cost, events_race.go the same rules under real concurrency.
func testEvents(t *testing.T, ns NewStore) {
	testEventsPublish(t, ns)
	testEventsWait(t, ns)
	testEventsRetention(t, ns)
	testEventsSubs(t, ns)
	testEventsStorage(t, ns)
	testEventsStorageRace(t, ns)
	testEventsRace(t, ns)
}

func testEventsPublish(t *testing.T, ns NewStore) {
	t.Run("PublishWithNothingWaiting", func(t *testing.T) {
		e := start(t, ns)
		res := e.publish(acme, "payment", "order-1", `{"amount":5}`, at(time.Second))
		wantPublished(t, "Publish", res, 0)
		if len(res.Started) != 0 {
			t.Errorf("Publish with no subscription: Started %v, want empty", res.Started)
		}
		e.wantEventState(acme, 0, eventSize("payment", "order-1", `{"amount":5}`))
		other := e.publish(acme, "payment", "", "", at(time.Second))
		if other.EventID == res.EventID {
			t.Errorf("two publishes answered one event id %s", res.EventID)
		}
		e.wantEventState(acme, 0, eventSize("payment", "order-1", `{"amount":5}`)+eventSize("payment", "", ""))
	})

	t.Run("PublishRefusesBadInput", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		x := e.wantWaitEvent(l, at(time.Second), "paid", "payment", "", time.Time{}, store.StatusSuspended)
		now := at(2 * time.Second)
		for name, p := range map[string]store.PublishParams{
			"no name":         {Name: "", Now: now},
			"long key":        {Name: "payment", Key: strings.Repeat("k", store.MaxEventKeyLen+1), Now: now},
			"long idem key":   {Name: "payment", IdempotencyKey: strings.Repeat("k", store.MaxKeyLen+1), Now: now},
			"bad traceparent": {Name: "payment", TraceParent: "nope", Now: now},
		} {
			_, err := e.publishWith(p)
			wantErr(t, "Publish with "+name, err, store.ErrInvalid)
		}
		_, err := e.publishWith(store.PublishParams{Tenant: "nobody", Name: "payment", Now: now})
		wantErr(t, "Publish for an unknown tenant", err, store.ErrNotFound)
		e.wantSuspended(x.ID, "paid", store.EventWaitFor("payment"), time.Time{})
		e.wantEventState(acme, 1, 0)
	})

	t.Run("IdempotencyKeyRepeatAnswersTheFirst", func(t *testing.T) {
		e := start(t, ns)
		e.putSub(sub("audit", "payment", "audit"), base)
		l := e.run(acme, base, job("flow"))
		e.wantWaitEvent(l, at(time.Second), "paid", "payment", "", time.Time{}, store.StatusSuspended)
		p := store.PublishParams{Name: "payment", Data: mustJSON(`{"n":1}`), IdempotencyKey: "pay-1", Now: at(2 * time.Second)}
		first, err := e.publishWith(p)
		e.must(err, "first Publish")
		checkPublish(t, "first Publish", first)
		wantPublished(t, "first Publish", first, 1, "audit")
		if first.Replayed {
			t.Error("first Publish: Replayed true")
		}
		// A second waiter whose Since passes the first event: only a new
		// publish would resume it.
		l2 := e.runKind(acme, "flow2", at(3*time.Second))
		e.wantWaitEvent(l2, at(3*time.Second), "paid", "payment", "", at(3*time.Second), store.StatusSuspended)
		stored := e.tenant(acme).StoredBytes
		// Other data, later: the first answer, nothing done.
		p.Data, p.Now = mustJSON(`{"n":2}`), at(4*time.Second)
		again, err := e.publishWith(p)
		e.must(err, "repeat of the Publish")
		if again == nil || !again.Replayed {
			t.Fatalf("repeat of the Publish: %+v, want Replayed", again)
		}
		if again.EventID != first.EventID || again.Resumed != first.Resumed || len(again.Started) != 1 ||
			again.Started[0] != first.Started[0] {
			t.Errorf("repeat answered %+v, want the first answer %+v", again, first)
		}
		e.wantSuspended(l2.ExecutionID, "paid", store.EventWaitFor("payment"), time.Time{})
		if n := len(e.byDedupKey(acme, store.EventDedupKey(first.EventID, "audit"))); n != 1 {
			t.Errorf("executions started for the subscription: %d, want 1", n)
		}
		if n := len(listAll(t, e.s, store.ListParams{Tenant: acme, Kind: "audit", Limit: 100})); n != 1 {
			t.Errorf("executions of the subscription's kind: %d, want 1 (no second start)", n)
		}
		if got := e.tenant(acme).StoredBytes; got != stored {
			t.Errorf("repeat of the Publish changed StoredBytes %d -> %d", stored, got)
		}
		e.wantEventStep(l.ExecutionID, "paid", eventOf(first, "payment", "", `{"n":1}`, at(2*time.Second)))
		e.wantEventState(acme, 3, eventSize("payment", "", `{"n":1}`))

		// The key is the tenant's: globex's publish with it is a new event.
		e.createTenant(store.CreateTenantParams{Name: globex})
		p.Tenant = globex
		theirs, err := e.publishWith(p)
		e.must(err, "globex Publish with acme's key")
		if theirs.Replayed || theirs.EventID == first.EventID {
			t.Errorf("globex Publish with acme's idempotency key: Replayed %v event %s, want a new event", theirs.Replayed, theirs.EventID)
		}
		wantPublished(t, "globex Publish", theirs, 0)
		e.wantSuspended(l2.ExecutionID, "paid", store.EventWaitFor("payment"), time.Time{})
	})

	t.Run("WaitThenPublishResumes", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		x := e.wantWaitEvent(l, at(time.Second), "paid", "payment", "", time.Time{}, store.StatusSuspended)
		e.wantSuspended(x.ID, "paid", "event:payment", time.Time{})
		e.claimNone(acme, at(2*time.Second))
		now := at(3 * time.Second)
		res := e.publish(acme, "payment", "order-1", `{"amount":5}`, now)
		wantPublished(t, "Publish", res, 1)
		e.wantResumed(x.ID)
		ev := eventOf(res, "payment", "order-1", `{"amount":5}`, now)
		e.wantEventStep(x.ID, "paid", ev)
		again := e.claimOne(acme, at(4*time.Second))
		if again.ExecutionID != x.ID || again.Attempt != l.Attempt {
			t.Errorf("claim after the event: %s attempt %d, want %s attempt %d (a resume)", again.ExecutionID, again.Attempt, x.ID, l.Attempt)
		}
		wantLeaseJournal(e, again, map[string]string{"paid": string(store.EventStep(ev))})
		e.wantEventState(acme, 1, eventSize("payment", "order-1", `{"amount":5}`))
	})

	t.Run("PublishThenWaitConsumesAtOnce", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		now := at(time.Second)
		res := e.publish(acme, "payment", "", `{"amount":7}`, now)
		wantPublished(t, "Publish", res, 0)
		x := e.wantWaitEvent(l, at(2*time.Second), "paid", "payment", "", time.Time{}, store.StatusQueued)
		e.wantResumed(x.ID)
		e.wantEventStep(x.ID, "paid", eventOf(res, "payment", "", `{"amount":7}`, now))
		again := e.claimOne(acme, at(3*time.Second))
		if again.Attempt != l.Attempt {
			t.Errorf("claim after the event: attempt %d, want %d (a resume)", again.Attempt, l.Attempt)
		}
		e.wantEventState(acme, 1, eventSize("payment", "", `{"amount":7}`))
	})

	t.Run("CrossTenantIsolation", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		e.putSub(store.Subscription{Tenant: globex, Name: "audit", Event: "payment", Kind: "audit", Enabled: true}, base)
		mine := e.run(acme, base, job("flow"))
		theirs := e.run(globex, base, job("flow"))
		late := e.runKind(globex, "late", base)
		e.wantWaitEvent(mine, at(time.Second), "paid", "payment", "", time.Time{}, store.StatusSuspended)
		e.wantWaitEvent(theirs, at(time.Second), "paid", "payment", "", time.Time{}, store.StatusSuspended)
		res := e.publish(acme, "payment", "", `1`, at(2*time.Second))
		wantPublished(t, "acme Publish", res, 1)
		e.wantResumed(mine.ExecutionID)
		e.wantSuspended(theirs.ExecutionID, "paid", "event:payment", time.Time{})
		// A wait of globex begun after acme's publish does not see it.
		e.wantWaitEvent(late, at(3*time.Second), "paid", "payment", "", time.Time{}, store.StatusSuspended)
		if n := len(listAll(t, e.s, store.ListParams{Kind: "audit", Limit: 100})); n != 0 {
			t.Errorf("acme's publish started %d executions of globex's subscription", n)
		}
		g := e.publish(globex, "payment", "", `2`, at(4*time.Second))
		wantPublished(t, "globex Publish", g, 2, "audit")
		e.wantResumed(theirs.ExecutionID)
		e.wantResumed(late.ExecutionID)
		e.wantEventStep(theirs.ExecutionID, "paid", eventOf(g, "payment", "", `2`, at(4*time.Second)))
		e.wantEventState(acme, 1, eventSize("payment", "", `1`))
		e.wantEventState(globex, 3, eventSize("payment", "", `2`))
	})
}

func testEventsWait(t *testing.T, ns NewStore) {
	t.Run("EventBeforeCreatedAtIsNotMatched", func(t *testing.T) {
		e := start(t, ns)
		res := e.publish(acme, "payment", "", `1`, base)
		l := e.runKind(acme, "a", at(time.Second))
		e.wantWaitEvent(l, at(2*time.Second), "paid", "payment", "", time.Time{}, store.StatusSuspended)
		// Since at the publish's moment matches it (at or after).
		l2 := e.runKind(acme, "b", at(time.Second))
		e.wantWaitEvent(l2, at(2*time.Second), "paid", "payment", "", base, store.StatusQueued)
		e.wantEventStep(l2.ExecutionID, "paid", eventOf(res, "payment", "", `1`, base))
		// Since after it: not matched, however old the execution.
		l3 := e.runCreated(acme, "c", at(-time.Hour), at(2*time.Second))
		e.wantWaitEvent(l3, at(2*time.Second), "paid", "payment", "", at(time.Millisecond), store.StatusSuspended)
		e.wantEventState(acme, 3, eventSize("payment", "", `1`))
	})

	t.Run("SinceLaterThanThePublish", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		e.wantWaitEvent(l, at(time.Second), "paid", "payment", "", at(time.Hour), store.StatusSuspended)
		early := e.publish(acme, "payment", "", `1`, at(2*time.Second))
		wantPublished(t, "Publish before the wait's since", early, 0)
		e.wantSuspended(l.ExecutionID, "paid", "event:payment", time.Time{})
		late := e.publish(acme, "payment", "", `2`, at(time.Hour))
		wantPublished(t, "Publish at the wait's since", late, 1)
		e.wantEventStep(l.ExecutionID, "paid", eventOf(late, "payment", "", `2`, at(time.Hour)))
		e.wantEventState(acme, 1, 2*eventSize("payment", "", `1`))
	})

	t.Run("KeyMatching", func(t *testing.T) {
		e := start(t, ns)
		keyedW := e.runKind(acme, "keyed", base)
		anyW := e.runKind(acme, "any", base)
		e.wantWaitEvent(keyedW, at(time.Second), "paid", "payment", "k1", time.Time{}, store.StatusSuspended)
		e.wantWaitEvent(anyW, at(time.Second), "paid", "payment", "", time.Time{}, store.StatusSuspended)
		other := e.publish(acme, "payment", "k2", `2`, at(2*time.Second))
		wantPublished(t, "Publish with key k2", other, 1)
		e.wantResumed(anyW.ExecutionID)
		e.wantEventStep(anyW.ExecutionID, "paid", eventOf(other, "payment", "k2", `2`, at(2*time.Second)))
		none := e.publish(acme, "payment", "", `0`, at(3*time.Second))
		wantPublished(t, "Publish without a key", none, 0)
		e.wantSuspended(keyedW.ExecutionID, "paid", "event:payment", time.Time{})
		e.publish(acme, "refund", "k1", `9`, at(3*time.Second))
		e.wantSuspended(keyedW.ExecutionID, "paid", "event:payment", time.Time{})
		mine := e.publish(acme, "payment", "k1", `1`, at(4*time.Second))
		wantPublished(t, "Publish with key k1", mine, 1)
		e.wantResumed(keyedW.ExecutionID)
		e.wantEventStep(keyedW.ExecutionID, "paid", eventOf(mine, "payment", "k1", `1`, at(4*time.Second)))

		// A keyed wait begun later finds the retained event of its key.
		late := e.runKind(acme, "late", base)
		e.wantWaitEvent(late, at(5*time.Second), "paid", "payment", "k2", time.Time{}, store.StatusQueued)
		e.wantEventStep(late.ExecutionID, "paid", eventOf(other, "payment", "k2", `2`, at(2*time.Second)))
		e.wantEventState(acme, 3, eventSize("payment", "k2", `2`)+eventSize("payment", "", `0`)+
			eventSize("refund", "k1", `9`)+eventSize("payment", "k1", `1`))
	})

	t.Run("EachEventConsumedOncePerExecution", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		e.wantWaitEvent(l, at(time.Second), "first", "payment", "", time.Time{}, store.StatusSuspended)
		p1 := e.publish(acme, "payment", "", `1`, at(2*time.Second))
		wantPublished(t, "Publish 1", p1, 1)
		l = e.reclaim(acme, "flow", l.ExecutionID, at(3*time.Second))
		// The retained event matches the second wait too, but this
		// execution consumed it.
		e.wantWaitEvent(l, at(4*time.Second), "second", "payment", "", time.Time{}, store.StatusSuspended)
		p2 := e.publish(acme, "payment", "", `2`, at(5*time.Second))
		wantPublished(t, "Publish 2", p2, 1)
		e.wantJournal(l.ExecutionID,
			[2]string{"first", string(store.EventStep(eventOf(p1, "payment", "", `1`, at(2*time.Second))))},
			[2]string{"second", string(store.EventStep(eventOf(p2, "payment", "", `2`, at(5*time.Second))))})
		// Another execution consumes both in its turn.
		o := e.runKind(acme, "other", at(time.Second))
		e.wantWaitEvent(o, at(6*time.Second), "a", "payment", "", time.Time{}, store.StatusQueued)
		e.wantEventStep(o.ExecutionID, "a", eventOf(p1, "payment", "", `1`, at(2*time.Second)))
		e.wantEventState(acme, 2, eventSize("payment", "", `1`)+eventSize("payment", "", `2`))
	})

	t.Run("OldestMatchFirst", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		var evs []*store.Event
		for i, d := range []time.Duration{time.Second, 2 * time.Second, 2 * time.Second} {
			data := fmt.Sprint(i)
			res := e.publish(acme, "tick", "", data, at(d))
			evs = append(evs, eventOf(res, "tick", "", data, at(d)))
		}
		for i, step := range []string{"a", "b", "c"} {
			now := at(time.Duration(10+i) * time.Second)
			e.wantWaitEvent(l, now, step, "tick", "", time.Time{}, store.StatusQueued)
			e.wantEventStep(l.ExecutionID, step, evs[i])
			l = e.reclaim(acme, "flow", l.ExecutionID, now)
		}
		e.wantWaitEvent(l, at(20*time.Second), "d", "tick", "", time.Time{}, store.StatusSuspended)
		e.wantEventState(acme, 1, 3*eventSize("tick", "", "0"))
	})

	t.Run("OnePublishResumesMany", func(t *testing.T) {
		e := start(t, ns)
		const n = 20
		ids := make([]string, n)
		for i := range n {
			l := e.runKind(acme, fmt.Sprint("w", i), base)
			ids[i] = l.ExecutionID
			e.wantWaitEvent(l, at(time.Second), "go", "start", "", time.Time{}, store.StatusSuspended)
		}
		res := e.publish(acme, "start", "", `{"go":true}`, at(2*time.Second))
		wantPublished(t, "Publish", res, n)
		for _, id := range ids {
			e.wantResumed(id)
			e.wantEventStep(id, "go", eventOf(res, "start", "", `{"go":true}`, at(2*time.Second)))
		}
		e.wantEventState(acme, n, eventSize("start", "", `{"go":true}`))
	})

	t.Run("TimeoutEndsTheWaitOnce", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		x, err := e.waitEvent(l, at(time.Second), "paid", "payment", "", time.Time{}, 10*time.Second)
		e.must(err, "Suspend with a timeout")
		e.wantSuspended(x.ID, "paid", "event:payment", at(11*time.Second))
		if n := e.wake(at(11*time.Second-time.Millisecond), 10); n != 0 {
			t.Errorf("Wake before the timeout woke %d", n)
		}
		if n := e.wake(at(11*time.Second), 10); n != 1 {
			t.Errorf("Wake at the timeout woke %d, want 1", n)
		}
		e.wantResumed(x.ID)
		e.wantJournal(x.ID, [2]string{"paid", string(store.TimedOut)})
		res := e.publish(acme, "payment", "", `1`, at(12*time.Second))
		wantPublished(t, "Publish after the timeout", res, 0)
		e.wantJournal(x.ID, [2]string{"paid", string(store.TimedOut)})
		// The event is retained: the next wait consumes it.
		l = e.reclaim(acme, "flow", x.ID, at(13*time.Second))
		e.wantWaitEvent(l, at(13*time.Second), "again", "payment", "", time.Time{}, store.StatusQueued)
		e.wantEventStep(x.ID, "again", eventOf(res, "payment", "", `1`, at(12*time.Second)))
		if n := e.wake(at(time.Hour), 10); n != 0 {
			t.Errorf("Wake after the wait ended woke %d", n)
		}
		e.wantEventState(acme, 1, eventSize("payment", "", `1`))
	})

	t.Run("PublishEndsTheWaitBeforeItsTimeout", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		_, err := e.waitEvent(l, at(time.Second), "paid", "payment", "", time.Time{}, 10*time.Second)
		e.must(err, "Suspend with a timeout")
		res := e.publish(acme, "payment", "", `1`, at(2*time.Second))
		wantPublished(t, "Publish", res, 1)
		if n := e.wake(at(time.Hour), 10); n != 0 {
			t.Errorf("Wake after the event ended the wait woke %d", n)
		}
		e.wantJournal(l.ExecutionID, [2]string{"paid", string(store.EventStep(eventOf(res, "payment", "", `1`, at(2*time.Second))))})
	})

	t.Run("SignalsAndEventsDoNotCross", func(t *testing.T) {
		e := start(t, ns)
		// A signal may be named like a wait for an event's WaitingFor; a
		// wait for an event ends by an event or its timeout only, and a
		// wait for a signal by a signal.
		ev := e.runKind(acme, "ev", base)
		sig := e.runKind(acme, "sig", base)
		e.wantWaitEvent(ev, at(time.Second), "paid", "payment", "", time.Time{}, store.StatusSuspended)
		_, err := e.wait(sig, at(time.Second), "paid", store.EventWaitFor("payment"), 0)
		e.must(err, "Suspend for a signal named event:payment")
		e.wantSignal(ev.ExecutionID, store.EventWaitFor("payment"), `"signal"`, at(2*time.Second), false)
		e.wantSuspended(ev.ExecutionID, "paid", "event:payment", time.Time{})
		res := e.publish(acme, "payment", "", `1`, at(3*time.Second))
		wantPublished(t, "Publish", res, 1)
		e.wantEventStep(ev.ExecutionID, "paid", eventOf(res, "payment", "", `1`, at(3*time.Second)))
		e.wantSuspended(sig.ExecutionID, "paid", "event:payment", time.Time{})
	})

	t.Run("CancelledWaiterIsNotResumed", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		e.wantWaitEvent(l, at(time.Second), "paid", "payment", "", time.Time{}, store.StatusSuspended)
		_, err := e.cancel(acme, l.ExecutionID, at(2*time.Second))
		e.must(err, "Cancel")
		e.wantCancelled(l.ExecutionID, at(2*time.Second))
		res := e.publish(acme, "payment", "", `1`, at(3*time.Second))
		wantPublished(t, "Publish", res, 0)
		e.wantCancelled(l.ExecutionID, at(2*time.Second))
		e.wantJournal(l.ExecutionID)
		e.wantEventState(acme, 0, eventSize("payment", "", `1`))
	})

	t.Run("DataOmittedWhenTheJournalIsFull", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		data := `"` + strings.Repeat("x", 500) + `"`
		res := e.publish(acme, "payment", "", data, at(time.Second))
		ev := eventOf(res, "payment", "", data, at(time.Second))
		room := store.StepSize("paid", store.EventStepWithin("paid", ev, 0)) + 10
		x, err := e.s.Suspend(e.ctx, &store.SuspendParams{ExecutionID: l.ExecutionID, Tenant: acme, Token: l.Token,
			Step: "paid", Event: "payment", MaxJournalBytes: room, Now: at(2 * time.Second)})
		e.must(err, "Suspend with a small journal")
		if x.Status != store.StatusQueued {
			t.Errorf("Suspend: %s, want queued", x.Status)
		}
		got := e.steps(l.ExecutionID)
		if len(got) != 1 {
			t.Fatalf("journal: %d steps, want 1", len(got))
		}
		wantJSON(t, "step without the data", got[0].Result, store.EventStepWithin("paid", ev, room))
		if !strings.Contains(string(got[0].Result), `"data_omitted":true`) || strings.Contains(string(got[0].Result), "xxx") {
			t.Errorf("step %s: want the event without its data", got[0].Result)
		}
	})

	t.Run("Fencing", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		res := e.publish(acme, "payment", "", `1`, at(time.Second))
		bad := l
		bad.Token = "not-the-token"
		_, err := e.waitEvent(bad, at(2*time.Second), "paid", "payment", "", time.Time{}, 0)
		wantErr(t, "Suspend with a wrong token", err, store.ErrLeaseLost)
		e.wantStatus(l.ExecutionID, store.StatusRunning)
		e.wantJournal(l.ExecutionID)
		// Nothing was consumed: the lease's own wait takes the event.
		e.wantWaitEvent(l, at(3*time.Second), "paid", "payment", "", time.Time{}, store.StatusQueued)
		e.wantEventStep(l.ExecutionID, "paid", eventOf(res, "payment", "", `1`, at(time.Second)))
		// The lease ended with the wait: its token no longer fences.
		_, err = e.waitEvent(l, at(4*time.Second), "other", "payment", "", time.Time{}, 0)
		wantErr(t, "Suspend after the lease ended", err, store.ErrLeaseLost)
	})

	t.Run("StepAlreadyRecordedConsumesNothing", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		_, err := e.recordStep(l, at(time.Second), "paid", `"before"`)
		e.must(err, "RecordStep")
		res := e.publish(acme, "payment", "", `1`, at(2*time.Second))
		e.wantWaitEvent(l, at(3*time.Second), "paid", "payment", "", time.Time{}, store.StatusQueued)
		e.wantJournal(l.ExecutionID, [2]string{"paid", `"before"`})
		l = e.reclaim(acme, "flow", l.ExecutionID, at(4*time.Second))
		e.wantWaitEvent(l, at(5*time.Second), "next", "payment", "", time.Time{}, store.StatusQueued)
		e.wantEventStep(l.ExecutionID, "next", eventOf(res, "payment", "", `1`, at(2*time.Second)))
	})

	t.Run("InvalidWaitChangesNothing", func(t *testing.T) {
		e := start(t, ns)
		l := e.run(acme, base, job("flow"))
		_, err := e.waitEvent(l, at(time.Second), "paid", "payment", strings.Repeat("k", store.MaxEventKeyLen+1), time.Time{}, 0)
		wantErr(t, "Suspend with a long key", err, store.ErrInvalid)
		_, err = e.s.Suspend(e.ctx, &store.SuspendParams{ExecutionID: l.ExecutionID, Tenant: acme, Token: l.Token,
			Step: "paid", Event: "payment", Signal: "payment", Now: at(time.Second)})
		wantErr(t, "Suspend for an event and a signal", err, store.ErrInvalid)
		e.wantStatus(l.ExecutionID, store.StatusRunning)
		e.wantJournal(l.ExecutionID)
	})
}

func testEventsRetention(t *testing.T, ns NewStore) {
	t.Run("AnExpiredEventsKeyIsFreeBeforePrune", func(t *testing.T) {
		e := start(t, ns)
		sec := time.Second
		_, err := e.s.UpdateTenant(e.ctx, &store.UpdateTenantParams{Name: acme, EventRetention: &sec})
		e.must(err, "UpdateTenant event_retention")
		p := store.PublishParams{Name: "payment", Data: mustJSON(`1`), IdempotencyKey: "pay-1", Now: at(time.Second)}
		first, err := e.publishWith(p)
		e.must(err, "first Publish")
		// Expired at 2 s, not pruned yet: the key is free, as after a prune.
		p.Now = at(3 * time.Second)
		second, err := e.publishWith(p)
		e.must(err, "Publish with an expired event's key")
		if second.Replayed || second.EventID == first.EventID {
			t.Errorf("Publish with an expired event's key: Replayed %v event %s, want a new event (the first was %s)",
				second.Replayed, second.EventID, first.EventID)
		}
		// And kept for the new event, also once the first is pruned.
		wantRepeat := func(what string, now time.Time) {
			t.Helper()
			p.Now = now
			again, err := e.publishWith(p)
			e.must(err, what)
			if !again.Replayed || again.EventID != second.EventID {
				t.Errorf("%s: Replayed %v event %s, want the second's answer %s", what, again.Replayed, again.EventID, second.EventID)
			}
		}
		wantRepeat("repeat within the new event's retention", at(3*time.Second+500*time.Millisecond))
		e.prune(at(2*time.Second+500*time.Millisecond), 100)
		wantRepeat("repeat after the first event's prune", at(3*time.Second+600*time.Millisecond))
		// Pruning both frees their bytes.
		e.prune(at(10*time.Second), 100)
		e.wantEventState(acme, 0, 0)
	})

	t.Run("TenantEventRetention", func(t *testing.T) {
		e := startEmpty(t, ns)
		if got := e.createTenant(store.CreateTenantParams{Name: acme}).EventRetention; got != store.DefaultEventRetention {
			t.Errorf("CreateTenant: EventRetention %v, want the default %v", got, store.DefaultEventRetention)
		}
		if got := e.tenant(acme).EventRetention; got != store.DefaultEventRetention {
			t.Errorf("GetTenant: EventRetention %v, want %v", got, store.DefaultEventRetention)
		}
		if got := e.createTenant(store.CreateTenantParams{Name: globex, EventRetention: time.Hour}).EventRetention; got != time.Hour {
			t.Errorf("CreateTenant with 1h: EventRetention %v", got)
		}
		two := 2 * time.Hour
		tn, err := e.s.UpdateTenant(e.ctx, &store.UpdateTenantParams{Name: acme, EventRetention: &two})
		e.must(err, "UpdateTenant")
		if tn.EventRetention != two || e.tenant(acme).EventRetention != two {
			t.Errorf("UpdateTenant: EventRetention %v (read back %v), want 2h", tn.EventRetention, e.tenant(acme).EventRetention)
		}
		for _, bad := range []time.Duration{-time.Second, 0, time.Second - 1} {
			_, err = e.s.UpdateTenant(e.ctx, &store.UpdateTenantParams{Name: acme, EventRetention: &bad})
			wantErr(t, fmt.Sprintf("UpdateTenant with a retention of %v", bad), err, store.ErrInvalid)
		}
		_, err = e.s.CreateTenant(e.ctx, &store.CreateTenantParams{Name: "initech", EventRetention: store.MaxTenantDuration + time.Second, Now: base})
		wantErr(t, "CreateTenant past MaxTenantDuration", err, store.ErrInvalid)
		if got := e.tenant(acme).EventRetention; got != two {
			t.Errorf("refused update changed EventRetention to %v", got)
		}
	})

	t.Run("PruneDeletesExpiredEvents", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.createTenant(store.CreateTenantParams{Name: acme, EventRetention: time.Hour})
		size := eventSize("payment", "", `1`)
		p := store.PublishParams{Name: "payment", Data: mustJSON(`1`), IdempotencyKey: "pay-1", Now: base}
		first, err := e.publishWith(p)
		e.must(err, "Publish")
		e.wantEventState(acme, 0, size)
		e.prune(at(time.Hour-time.Millisecond), 100)
		e.wantEventState(acme, 0, size)
		p.Now = at(time.Hour - time.Millisecond)
		if again, err := e.publishWith(p); err != nil || !again.Replayed || again.EventID != first.EventID {
			t.Errorf("repeat before the event expires: %+v %v, want the first answer", again, err)
		}
		e.prune(at(time.Hour), 100)
		e.wantEventState(acme, 0, 0)
		// A wait after the prune does not see it.
		l := e.runCreated(acme, "flow", at(-time.Hour), at(time.Hour+time.Second))
		e.wantWaitEvent(l, at(time.Hour+time.Second), "paid", "payment", "", time.Time{}, store.StatusSuspended)
		// Its idempotency key went with it.
		p.Now = at(2 * time.Hour)
		fresh, err := e.publishWith(p)
		e.must(err, "Publish with the pruned event's key")
		if fresh.Replayed || fresh.EventID == first.EventID {
			t.Errorf("Publish with the pruned event's key: Replayed %v event %s, want a new event", fresh.Replayed, fresh.EventID)
		}
		wantPublished(t, "Publish with the pruned event's key", fresh, 1)
		e.wantEventState(acme, 1, size)

		// A retention changed later applies to later events only.
		two := 3 * time.Hour
		_, err = e.s.UpdateTenant(e.ctx, &store.UpdateTenantParams{Name: acme, EventRetention: &two})
		e.must(err, "UpdateTenant")
		e.publish(acme, "refund", "", "", at(2*time.Hour))
		e.prune(at(3*time.Hour), 100) // the first expires, not the second
		e.wantEventState(acme, 1, eventSize("refund", "", ""))
		e.prune(at(5*time.Hour), 100)
		e.wantEventState(acme, 1, 0)
	})

	t.Run("StorageBudgetRefusesAPublish", func(t *testing.T) {
		e := startEmpty(t, ns)
		size := eventSize("payment", "", `"0123456789"`)
		// Room for one event and the copy the wait records of it
		// (events_storage.go), not for two events.
		copySize := store.StoredSize(store.EventStep(&store.Event{ID: "01900000-0000-7000-8000-000000000000",
			Name: "payment", Data: mustJSON(`"0123456789"`), PublishedAt: at(store.DefaultEventRetention + 3*time.Second)}))
		budget := size + copySize + size/2
		e.createTenant(store.CreateTenantParams{Name: acme, MaxStoredBytes: budget})
		l := e.run(acme, base, job("flow"))
		e.wantWaitEvent(l, at(time.Second), "paid", "payment", "", time.Time{}, store.StatusSuspended)
		// The execution counts nothing (an empty payload), the first event fits.
		stored := e.tenant(acme).StoredBytes
		if stored+size+copySize > budget {
			t.Fatalf("the execution counts %d bytes: the test's budget is too small", stored)
		}
		first := e.publish(acme, "refund", "", `"0123456789"`, at(2*time.Second))
		wantPublished(t, "Publish within the budget", first, 0)
		_, err := e.publishWith(store.PublishParams{Name: "payment", Data: mustJSON(`"0123456789"`), IdempotencyKey: "p", Now: at(3 * time.Second)})
		wantErr(t, "Publish past the budget", err, store.ErrStorageExceeded)
		e.wantSuspended(l.ExecutionID, "paid", "event:payment", time.Time{})
		e.wantEventState(acme, 1, eventSize("refund", "", `"0123456789"`))
		// Nothing written: the key is free, and the event released by a
		// prune makes room.
		e.prune(at(store.DefaultEventRetention+2*time.Second), 100)
		res, err := e.publishWith(store.PublishParams{Name: "payment", Data: mustJSON(`"0123456789"`), IdempotencyKey: "p", Now: at(store.DefaultEventRetention + 3*time.Second)})
		e.must(err, "Publish after the prune")
		if res.Replayed {
			t.Error("Publish after a refused one with the same key: Replayed")
		}
		wantPublished(t, "Publish after the prune", res, 1)
	})

	t.Run("DeleteTenantRemovesEventsAndSubscriptions", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		e.putSub(sub("audit", "payment", "audit"), base)
		e.putSub(store.Subscription{Tenant: globex, Name: "audit", Event: "payment", Kind: "audit", Enabled: true}, base)
		p := store.PublishParams{Name: "payment", Data: mustJSON(`1`), IdempotencyKey: "pay-1", Now: at(time.Second)}
		first, err := e.publishWith(p)
		e.must(err, "Publish")
		e.publish(globex, "payment", "", `1`, at(time.Second))
		e.must(e.s.DeleteTenant(e.ctx, &store.DeleteTenantParams{Name: acme, Force: true, Now: at(2 * time.Second)}), "DeleteTenant")
		e.createTenant(store.CreateTenantParams{Name: acme, Now: at(3 * time.Second)})
		subs, err := e.s.ListSubscriptions(e.ctx, &store.ListSubscriptionsParams{Tenant: acme})
		e.must(err, "ListSubscriptions")
		if len(subs) != 0 {
			t.Errorf("re-created tenant has %d subscriptions, want none", len(subs))
		}
		_, err = e.s.GetSubscription(e.ctx, &store.GetSubscriptionParams{Tenant: acme, Name: "audit"})
		wantErr(t, "GetSubscription of the deleted tenant's", err, store.ErrNotFound)
		l := e.runCreated(acme, "flow", at(-time.Hour), at(4*time.Second))
		e.wantWaitEvent(l, at(4*time.Second), "paid", "payment", "", time.Time{}, store.StatusSuspended)
		p.Now = at(5 * time.Second)
		again, err := e.publishWith(p)
		e.must(err, "Publish with the deleted tenant's key")
		if again.Replayed || again.EventID == first.EventID {
			t.Errorf("Publish with the deleted tenant's key: Replayed %v, want a new event", again.Replayed)
		}
		wantPublished(t, "Publish in the re-created tenant", again, 1)
		e.wantEventState(acme, 1, eventSize("payment", "", `1`))
		// globex kept its own.
		if _, err := e.s.GetSubscription(e.ctx, &store.GetSubscriptionParams{Tenant: globex, Name: "audit"}); err != nil {
			t.Errorf("globex's subscription after acme's delete: %v", err)
		}
		e.wantEventState(globex, 1, eventSize("payment", "", `1`))
	})
}
