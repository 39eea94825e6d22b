package storetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// testEventsSubs covers subscriptions: their records, and the executions
// a publish starts for them.
func testEventsSubs(t *testing.T, ns NewStore) {
	t.Run("SubscriptionPutGetListDelete", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		s := store.Subscription{Tenant: acme, Name: "ship", Event: "payment", Kind: "ship", Queue: "orders",
			Priority: 3, MaxAttempts: 5, TimeoutSeconds: 60, ConcurrencyKey: "c", ConcurrencyLimit: 2, Enabled: true}
		res := e.putSub(s, at(time.Second))
		if !res.Created {
			t.Error("PutSubscription of a new name: Created false")
		}
		want := s
		want.CreatedAt, want.UpdatedAt = at(time.Second), at(time.Second)
		wantSub(t, "PutSubscription answer", res.Subscription, want)
		got, err := e.s.GetSubscription(e.ctx, &store.GetSubscriptionParams{Tenant: acme, Name: "ship"})
		e.must(err, "GetSubscription")
		wantSub(t, "GetSubscription", got, want)

		// A replace keeps CreatedAt.
		s.Event, s.Kind, s.Queue, s.Priority, s.Enabled = "refund", "refund", "", 0, false
		res = e.putSub(s, at(2*time.Second))
		if res.Created {
			t.Error("PutSubscription of an existing name: Created true")
		}
		want = s
		want.CreatedAt, want.UpdatedAt = at(time.Second), at(2*time.Second)
		wantSub(t, "replace answer", res.Subscription, want)
		got, err = e.s.GetSubscription(e.ctx, &store.GetSubscriptionParams{Tenant: acme, Name: "ship"})
		e.must(err, "GetSubscription after the replace")
		wantSub(t, "GetSubscription after the replace", got, want)

		for _, n := range []string{"b", "a"} {
			e.putSub(sub(n, "payment", "k"), at(3*time.Second))
			e.putSub(store.Subscription{Tenant: globex, Name: n, Event: "payment", Kind: "k", Enabled: true}, at(3*time.Second))
		}
		list := func(tenant string) string {
			subs, err := e.s.ListSubscriptions(e.ctx, &store.ListSubscriptionsParams{Tenant: tenant})
			e.must(err, "ListSubscriptions")
			var names []string
			for _, s := range subs {
				names = append(names, s.Tenant+"/"+s.Name)
			}
			return strings.Join(names, " ")
		}
		if got := list(acme); got != "acme/a acme/b acme/ship" {
			t.Errorf("ListSubscriptions acme: %s, want name order", got)
		}
		if got := list(""); got != "acme/a acme/b acme/ship globex/a globex/b" {
			t.Errorf("ListSubscriptions of every tenant: %s, want tenant then name order", got)
		}

		_, err = e.s.GetSubscription(e.ctx, &store.GetSubscriptionParams{Tenant: globex, Name: "ship"})
		wantErr(t, "GetSubscription of another tenant's name", err, store.ErrNotFound)
		e.must(e.s.DeleteSubscription(e.ctx, &store.DeleteSubscriptionParams{Tenant: acme, Name: "ship"}), "DeleteSubscription")
		err = e.s.DeleteSubscription(e.ctx, &store.DeleteSubscriptionParams{Tenant: acme, Name: "ship"})
		wantErr(t, "second DeleteSubscription", err, store.ErrNotFound)
		_, err = e.s.GetSubscription(e.ctx, &store.GetSubscriptionParams{Tenant: acme, Name: "ship"})
		wantErr(t, "GetSubscription after the delete", err, store.ErrNotFound)
		err = e.s.DeleteSubscription(e.ctx, &store.DeleteSubscriptionParams{Tenant: globex, Name: "nope"})
		wantErr(t, "DeleteSubscription of a missing name", err, store.ErrNotFound)
		if got := list(""); got != "acme/a acme/b globex/a globex/b" {
			t.Errorf("ListSubscriptions after the delete: %s", got)
		}
	})

	// Pages by After and Limit: each page starts after the last one's end,
	// across tenants (every tenant's, a tenant without any among them)
	// and within one, nothing repeated or skipped, even when the page's
	// last was deleted before the next page is read.
	t.Run("SubscriptionListPages", func(t *testing.T) {
		e := start(t, ns)
		for _, n := range []string{globex, "hooli", initech} {
			e.createTenant(store.CreateTenantParams{Name: n})
		}
		for tenant, names := range map[string][]string{acme: {"d", "b", "a", "c"}, globex: {"y", "x", "a"}, initech: {"m"}} {
			for _, n := range names {
				s := sub(n, "payment", "k")
				s.Tenant = tenant
				e.putSub(s, base)
			}
		}
		refs := func(subs []*store.Subscription) []string {
			var out []string
			for _, s := range subs {
				out = append(out, s.Tenant+"/"+s.Name)
			}
			return out
		}
		page := func(p store.ListSubscriptionsParams) []*store.Subscription {
			t.Helper()
			subs, err := e.s.ListSubscriptions(e.ctx, &p)
			e.must(err, fmt.Sprintf("ListSubscriptions %+v", p))
			if len(subs) > p.ListLimit() {
				t.Errorf("ListSubscriptions %+v: %d subscriptions, more than the limit", p, len(subs))
			}
			return subs
		}
		// walk reads tenant's subscriptions page after page.
		walk := func(tenant string, limit int) string {
			t.Helper()
			var got []string
			p := store.ListSubscriptionsParams{Tenant: tenant, Limit: limit}
			for pages := 0; ; pages++ {
				if pages > 10 {
					t.Fatalf("paging %s by %d did not end after %d pages: %v", tenant, limit, pages, got)
				}
				subs := page(p)
				got = append(got, refs(subs)...)
				if len(subs) < p.ListLimit() {
					return strings.Join(got, " ")
				}
				last := subs[len(subs)-1]
				p.After = store.SubscriptionRef{Tenant: last.Tenant, Name: last.Name}
			}
		}
		const every = "acme/a acme/b acme/c acme/d globex/a globex/x globex/y initech/m"
		for _, limit := range []int{1, 2, 3, 1000, 0} {
			if got := walk("", limit); got != every {
				t.Errorf("every tenant's subscriptions in pages of %d: %s, want %s", limit, got, every)
			}
			if got := walk(globex, limit); got != "globex/a globex/x globex/y" {
				t.Errorf("globex's subscriptions in pages of %d: %s", limit, got)
			}
			if got := walk("hooli", limit); got != "" {
				t.Errorf("hooli's subscriptions in pages of %d: %s, want none", limit, got)
			}
		}
		for _, c := range []struct {
			p    store.ListSubscriptionsParams
			want string
		}{
			{store.ListSubscriptionsParams{Limit: 3, After: store.SubscriptionRef{Tenant: acme, Name: "c"}}, "acme/d globex/a globex/x"},
			{store.ListSubscriptionsParams{Limit: 2, After: store.SubscriptionRef{Tenant: acme}}, "acme/a acme/b"},
			// A tenant without subscriptions, or none at all, between.
			{store.ListSubscriptionsParams{Limit: 2, After: store.SubscriptionRef{Tenant: globex, Name: "y"}}, "initech/m"},
			{store.ListSubscriptionsParams{After: store.SubscriptionRef{Tenant: "b", Name: "z"}}, "globex/a globex/x globex/y initech/m"},
			{store.ListSubscriptionsParams{After: store.SubscriptionRef{Tenant: initech, Name: "m"}}, ""},
			// With a tenant, an After of another tenant is before or
			// after all of its subscriptions.
			{store.ListSubscriptionsParams{Tenant: globex, Limit: 2, After: store.SubscriptionRef{Tenant: acme, Name: "z"}}, "globex/a globex/x"},
			{store.ListSubscriptionsParams{Tenant: acme, After: store.SubscriptionRef{Tenant: globex, Name: "a"}}, ""},
			{store.ListSubscriptionsParams{Tenant: acme, Limit: 2, After: store.SubscriptionRef{Tenant: acme, Name: "b"}}, "acme/c acme/d"},
		} {
			if got := strings.Join(refs(page(c.p)), " "); got != c.want {
				t.Errorf("ListSubscriptions %+v: %s, want %s", c.p, got, c.want)
			}
		}

		// The page's last deleted before the next page is read: the next
		// starts after it all the same, in its tenant and across tenants.
		first := page(store.ListSubscriptionsParams{Limit: 2})
		if got := strings.Join(refs(first), " "); got != "acme/a acme/b" {
			t.Fatalf("first page of 2: %s, want acme/a acme/b", got)
		}
		e.must(e.s.DeleteSubscription(e.ctx, &store.DeleteSubscriptionParams{Tenant: acme, Name: "b"}), "DeleteSubscription acme/b")
		next := page(store.ListSubscriptionsParams{Limit: 2, After: store.SubscriptionRef{Tenant: acme, Name: "b"}})
		if got := strings.Join(refs(next), " "); got != "acme/c acme/d" {
			t.Errorf("page after the deleted acme/b: %s, want acme/c acme/d", got)
		}
		next = page(store.ListSubscriptionsParams{Tenant: acme, Limit: 2, After: store.SubscriptionRef{Tenant: acme, Name: "b"}})
		if got := strings.Join(refs(next), " "); got != "acme/c acme/d" {
			t.Errorf("acme's page after the deleted acme/b: %s, want acme/c acme/d", got)
		}
		e.must(e.s.DeleteSubscription(e.ctx, &store.DeleteSubscriptionParams{Tenant: acme, Name: "d"}), "DeleteSubscription acme/d")
		next = page(store.ListSubscriptionsParams{Limit: 2, After: store.SubscriptionRef{Tenant: acme, Name: "d"}})
		if got := strings.Join(refs(next), " "); got != "globex/a globex/x" {
			t.Errorf("page after the deleted acme/d, its tenant's last: %s, want globex/a globex/x", got)
		}
		if got, want := walk("", 2), "acme/a acme/c globex/a globex/x globex/y initech/m"; got != want {
			t.Errorf("every tenant's subscriptions in pages of 2 after the deletes: %s, want %s", got, want)
		}
	})

	t.Run("SubscriptionRefusals", func(t *testing.T) {
		e := start(t, ns)
		for name, s := range map[string]store.Subscription{
			"no name":    {Tenant: acme, Event: "payment", Kind: "k"},
			"bad name":   {Tenant: acme, Name: "a/b", Event: "payment", Kind: "k"},
			"long name":  {Tenant: acme, Name: strings.Repeat("n", store.MaxSubscriptionNameLen+1), Event: "payment", Kind: "k"},
			"no event":   {Tenant: acme, Name: "s", Kind: "k"},
			"no kind":    {Tenant: acme, Name: "s", Event: "payment"},
			"long event": {Tenant: acme, Name: "s", Event: strings.Repeat("e", 129), Kind: "k"},
		} {
			_, err := e.s.PutSubscription(e.ctx, &store.PutSubscriptionParams{Subscription: s, Now: base})
			wantErr(t, "PutSubscription with "+name, err, store.ErrInvalid)
		}
		_, err := e.s.PutSubscription(e.ctx, &store.PutSubscriptionParams{Subscription: store.Subscription{
			Tenant: "nobody", Name: "s", Event: "payment", Kind: "k"}, Now: base})
		wantErr(t, "PutSubscription for an unknown tenant", err, store.ErrNotFound)

		put := func(name string) error {
			_, err := e.s.PutSubscription(e.ctx, &store.PutSubscriptionParams{Subscription: sub(name, "payment", "k"), MaxSubscriptions: 2, Now: base})
			return err
		}
		e.must(put("a"), "first subscription")
		e.must(put("b"), "second subscription")
		wantErr(t, "third subscription past the bound 2", put("c"), store.ErrTooManySubscriptions)
		e.must(put("a"), "replace at the bound")
		e.must(e.s.DeleteSubscription(e.ctx, &store.DeleteSubscriptionParams{Tenant: acme, Name: "b"}), "DeleteSubscription")
		e.must(put("c"), "subscription after a delete")
		subs, err := e.s.ListSubscriptions(e.ctx, &store.ListSubscriptionsParams{Tenant: acme})
		e.must(err, "ListSubscriptions")
		if len(subs) != 2 || subs[0].Name != "a" || subs[1].Name != "c" {
			t.Errorf("subscriptions after the refusals: %d, want a and c", len(subs))
		}
	})

	t.Run("PublishStartsSubscriptions", func(t *testing.T) {
		e := start(t, ns)
		const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
		for _, n := range []string{"b", "a", "c"} {
			s := sub(n, "payment", "kind-"+n)
			s.Queue, s.Priority, s.MaxAttempts, s.TimeoutSeconds = "orders", 2, 4, 30
			e.putSub(s, base)
		}
		off := sub("off", "payment", "off")
		off.Enabled = false
		e.putSub(off, base)
		e.putSub(sub("other", "refund", "other"), base)
		now := at(time.Second)
		res, err := e.publishWith(store.PublishParams{Name: "payment", Key: "o-1", Data: mustJSON(`{"n":1}`), TraceParent: tp, Now: now})
		e.must(err, "Publish")
		checkPublish(t, "Publish", res)
		wantPublished(t, "Publish", res, 0, "a", "b", "c")
		ev := eventOf(res, "payment", "o-1", `{"n":1}`, now)
		for _, st := range res.Started {
			x := e.get(st.ExecutionID)
			if x.Tenant != acme || x.Kind != "kind-"+st.Subscription || x.Queue != "orders" || x.Priority != 2 ||
				x.MaxAttempts != 4 || x.TimeoutSeconds != 30 || x.Status != store.StatusQueued || x.TraceParent != tp {
				t.Errorf("started for %s: %+v", st.Subscription, x)
			}
			if x.DedupKey != store.EventDedupKey(res.EventID, st.Subscription) {
				t.Errorf("started for %s: dedup key %q, want %q", st.Subscription, x.DedupKey, store.EventDedupKey(res.EventID, st.Subscription))
			}
			wantJSON(t, "payload started for "+st.Subscription, x.Payload, store.EventStep(ev))
			wantTime(t, "CreatedAt of the start", x.CreatedAt, now)
		}
		for _, kind := range []string{"off", "other"} {
			if n := len(listAll(t, e.s, store.ListParams{Tenant: acme, Kind: kind, Limit: 10})); n != 0 {
				t.Errorf("publish started %d executions for subscription %s", n, kind)
			}
		}
		// A deleted subscription starts nothing; the executions it
		// started stay.
		e.must(e.s.DeleteSubscription(e.ctx, &store.DeleteSubscriptionParams{Tenant: acme, Name: "b"}), "DeleteSubscription")
		res2 := e.publish(acme, "payment", "", "", at(2*time.Second))
		wantPublished(t, "Publish after the delete", res2, 0, "a", "c")
		e.wantStatus(res.Started[1].ExecutionID, store.StatusQueued)
		e.wantEventState(acme, 5, eventSize("payment", "o-1", `{"n":1}`)+eventSize("payment", "", ""))
	})

	t.Run("QuotaRefusalInTheStart", func(t *testing.T) {
		e := startEmpty(t, ns)
		e.createTenant(store.CreateTenantParams{Name: acme, MaxInflight: 2})
		l := e.run(acme, base, job("flow"))
		e.wantWaitEvent(l, at(time.Second), "paid", "payment", "", time.Time{}, store.StatusSuspended)
		for _, n := range []string{"a", "b"} {
			e.putSub(sub(n, "payment", "k"), base)
		}
		p := store.PublishParams{Name: "payment", IdempotencyKey: "p", Now: at(2 * time.Second)}
		res, err := e.publishWith(p)
		e.must(err, "Publish at the quota")
		checkPublish(t, "Publish", res)
		wantPublished(t, "Publish", res, 1, "a", "b")
		if res.Started[0].ExecutionID == "" || res.Started[0].Err != nil {
			t.Errorf("start a: %+v, want an execution", res.Started[0])
		}
		if !isAny(res.Started[1].Err, store.ErrQuotaExceeded) || res.Started[1].ExecutionID != "" {
			t.Errorf("start b: %+v, want ErrQuotaExceeded", res.Started[1])
		}
		e.wantResumed(l.ExecutionID)
		again, err := e.publishWith(p)
		e.must(err, "repeat of the Publish")
		if !again.Replayed || len(again.Started) != 2 || !isAny(again.Started[1].Err, store.ErrQuotaExceeded) ||
			again.Started[0].ExecutionID != res.Started[0].ExecutionID {
			t.Errorf("repeat answered %+v, want the first answer with its refusal", again)
		}
		if n := len(e.byDedupKey(acme, store.EventDedupKey(res.EventID, "b"))); n != 0 {
			t.Errorf("refused start left %d executions", n)
		}
		e.wantEventState(acme, 2, eventSize("payment", "", ""))
	})

	t.Run("StartOfAnotherTenantsEventNameIsNotShared", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		e.putSub(sub("audit", "payment", "audit"), base)
		res := e.publish(globex, "payment", "", "", at(time.Second))
		wantPublished(t, "globex Publish", res, 0)
		if n := len(listAll(t, e.s, store.ListParams{Limit: 10})); n != 0 {
			t.Errorf("globex's publish started %d executions", n)
		}
		mine := e.publish(acme, "payment", "", "", at(time.Second))
		wantPublished(t, "acme Publish", mine, 0, "audit")
		if got := fmt.Sprint(e.get(mine.Started[0].ExecutionID).Tenant); got != acme {
			t.Errorf("start of acme's subscription belongs to %s", got)
		}
	})
}
