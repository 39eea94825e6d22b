package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// testGet covers Store.Get and its tenant rule.
func testGet(t *testing.T, ns NewStore) {
	t.Run("ByTenantAndAnyTenant", func(t *testing.T) {
		e := start(t, ns)
		x := e.submit(acme, base, job("echo"))
		got, err := e.s.Get(e.ctx, &store.GetParams{Tenant: acme, ID: x.ID})
		e.must(err, "Get with the owner tenant")
		sameExecution(t, "Get", got, x)
		sameExecution(t, `Get with Tenant ""`, e.get(x.ID), x)
	})

	t.Run("OtherTenantIsNotFound", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		x := e.submit(acme, base, job("echo"))
		_, err := e.s.Get(e.ctx, &store.GetParams{Tenant: globex, ID: x.ID})
		wantErr(t, "Get of another tenant's execution", err, store.ErrNotFound)
		_, err = e.s.Get(e.ctx, &store.GetParams{Tenant: "nobody", ID: x.ID})
		wantErr(t, "Get as an unknown tenant", err, store.ErrNotFound)
	})

	t.Run("UnknownIsNotFound", func(t *testing.T) {
		e := start(t, ns)
		_, err := e.s.Get(e.ctx, &store.GetParams{ID: "01890a5d-ac96-774b-bcce-b302099a8057"})
		wantErr(t, "Get of an unknown execution", err, store.ErrNotFound)
	})
}

// testList covers Store.List: order, filters, limits, paging and tenants.
func testList(t *testing.T, ns NewStore) {
	// submitN admits n executions one second apart, oldest first, and
	// returns them newest first, the order List must use.
	submitN := func(e *env, tenant string, n int, sub func(i int) store.Submission) []*store.Execution {
		e.t.Helper()
		out := make([]*store.Execution, n)
		for i := range n {
			out[n-1-i] = e.submit(tenant, at(time.Duration(i)*time.Second), sub(i))
		}
		return out
	}
	plain := func(int) store.Submission { return job("echo") }
	wantOrder := func(t *testing.T, what string, got, want []*store.Execution) {
		t.Helper()
		if len(got) != len(want) {
			t.Errorf("%s: %d items, want %d", what, len(got), len(want))
			return
		}
		for i := range want {
			if got[i].ID != want[i].ID {
				t.Errorf("%s: item %d is %s (created %s), want %s (created %s)", what, i,
					got[i].ID, fmtTime(got[i].CreatedAt), want[i].ID, fmtTime(want[i].CreatedAt))
				return
			}
		}
	}

	t.Run("NewestFirst", func(t *testing.T) {
		e := start(t, ns)
		want := submitN(e, acme, 5, plain)
		res, err := e.s.List(e.ctx, &store.ListParams{Tenant: acme})
		e.must(err, "List")
		wantOrder(t, "List", res.Items, want)
		if res.Next != "" {
			t.Errorf("Next = %q on the only page", res.Next)
		}
	})

	t.Run("ItemsAreWholeExecutions", func(t *testing.T) {
		e := start(t, ns)
		sub := keyed("http", "k", `{"u":1}`)
		sub.Queue, sub.Priority, sub.Schedule = "mail", 3, "nightly"
		l := e.run(acme, base, sub)
		_, err := e.cancel(acme, l.ExecutionID, at(time.Second))
		e.must(err, "Cancel")
		res, err := e.s.List(e.ctx, &store.ListParams{Tenant: acme})
		e.must(err, "List")
		if len(res.Items) != 1 {
			t.Fatalf("%d items, want 1", len(res.Items))
		}
		sameExecution(t, "List item", res.Items[0], e.get(l.ExecutionID))
	})

	t.Run("DefaultLimitIs50", func(t *testing.T) {
		e := start(t, ns)
		subs := make([]store.Submission, 55)
		for i := range subs {
			subs[i] = job("echo")
		}
		e.admit(acme, base, subs...)
		res, err := e.s.List(e.ctx, &store.ListParams{Tenant: acme})
		e.must(err, "List")
		if len(res.Items) != 50 || res.Next == "" {
			t.Errorf("List without a limit: %d items, Next %q; want 50 and a next page", len(res.Items), res.Next)
		}
		if all := e.list(store.ListParams{Tenant: acme}); len(all) != 55 {
			t.Errorf("paging found %d executions, want 55", len(all))
		}
	})

	t.Run("LimitAndPaging", func(t *testing.T) {
		e := start(t, ns)
		want := submitN(e, acme, 25, plain)
		var got []*store.Execution
		p := store.ListParams{Tenant: acme, Limit: 10}
		for _, size := range []int{10, 10, 5} {
			res, err := e.s.List(e.ctx, &p)
			e.must(err, "List")
			if len(res.Items) != size {
				t.Fatalf("page %d items, want %d", len(res.Items), size)
			}
			got = append(got, res.Items...)
			if size == 5 && res.Next != "" {
				t.Errorf("Next = %q on the last page", res.Next)
			}
			if size == 10 && res.Next == "" {
				t.Fatal("Next is empty although more items follow")
			}
			p.After = res.Next
		}
		wantOrder(t, "pages joined", got, want)
	})

	t.Run("MaxBytesCutsPages", func(t *testing.T) {
		// Pages are bounded by payload bytes: each 1 KiB payload fills the
		// 2.5 KiB budget at its third item, so pages hold 3 items however
		// high the limit, and paging still visits every item once.
		e := start(t, ns)
		big := mustJSON(`{"pad":"` + strings.Repeat("x", 1014) + `"}`)
		want := submitN(e, acme, 7, func(int) store.Submission {
			s := job("echo")
			s.Payload = big
			return s
		})
		var got []*store.Execution
		p := store.ListParams{Tenant: acme, Limit: 500, MaxBytes: 2560}
		for _, size := range []int{3, 3, 1} {
			res, err := e.s.List(e.ctx, &p)
			e.must(err, "List")
			if len(res.Items) != size {
				t.Fatalf("page of %d items, want %d", len(res.Items), size)
			}
			got = append(got, res.Items...)
			if size == 3 && res.Next == "" {
				t.Fatal("a page cut by MaxBytes has no Next")
			}
			p.After = res.Next
		}
		wantOrder(t, "pages joined", got, want)

		// A single item larger than the budget still makes a page.
		res, err := e.s.List(e.ctx, &store.ListParams{Tenant: acme, MaxBytes: 1})
		e.must(err, "List")
		if len(res.Items) != 1 || res.Next == "" {
			t.Fatalf("MaxBytes below one item: %d items, Next %q; want 1 item and a Next", len(res.Items), res.Next)
		}
	})

	t.Run("MaxBytesCutOnTheLastItemSetsNext", func(t *testing.T) {
		// "the page ends after the item that reaches it ... and Next is
		// set", also when that item is the list's last: the page after it
		// is empty, with no Next. Over every tenant, where no tenant's own
		// page is cut (the Redis router merges the tenants' pages).
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		big := mustJSON(`{"pad":"` + strings.Repeat("x", 1014) + `"}`)
		sub := func(int) store.Submission {
			s := job("echo")
			s.Payload = big
			return s
		}
		want := append(submitN(e, acme, 1, sub), submitN(e, globex, 2, sub)...)
		slices.SortFunc(want, func(a, b *store.Execution) int { return strings.Compare(b.ID, a.ID) })
		p := store.ListParams{Limit: 500, MaxBytes: 2560}
		res, err := e.s.List(e.ctx, &p)
		e.must(err, "List")
		if len(res.Items) != 3 || res.Next == "" {
			t.Fatalf("page of %d items, Next %q; want 3 items and a Next (cut by MaxBytes on the last)", len(res.Items), res.Next)
		}
		wantOrder(t, "the page", res.Items, want)
		p.After = res.Next
		res, err = e.s.List(e.ctx, &p)
		e.must(err, "List")
		if len(res.Items) != 0 || res.Next != "" {
			t.Errorf("the page after the last: %d items, Next %q; want none and no Next", len(res.Items), res.Next)
		}
	})

	t.Run("PagingEndsOnFullLastPage", func(t *testing.T) {
		// "Next is ... "" when this is the last": a full last page has no Next.
		e := start(t, ns)
		want := submitN(e, acme, 20, plain)
		p := store.ListParams{Tenant: acme, Limit: 10}
		res, err := e.s.List(e.ctx, &p)
		e.must(err, "List page 1")
		p.After = res.Next
		res2, err := e.s.List(e.ctx, &p)
		e.must(err, "List page 2")
		wantOrder(t, "pages joined", append(res.Items, res2.Items...), want)
		if res2.Next != "" {
			t.Errorf("Next = %q after the last item, want empty", res2.Next)
		}
	})

	t.Run("PagingWithFilters", func(t *testing.T) {
		e := start(t, ns)
		all := submitN(e, acme, 30, func(i int) store.Submission {
			return job([]string{"a", "b", "c"}[i%3])
		})
		var want []*store.Execution
		for _, x := range all {
			if x.Kind == "b" {
				want = append(want, x)
			}
		}
		wantOrder(t, "kind b in pages of 3", e.list(store.ListParams{Tenant: acme, Kind: "b", Limit: 3}), want)
	})

	t.Run("PagingIsStableUnderInserts", func(t *testing.T) {
		e := start(t, ns)
		want := submitN(e, acme, 12, plain)
		p := store.ListParams{Tenant: acme, Limit: 5}
		res, err := e.s.List(e.ctx, &p)
		e.must(err, "List page 1")
		got := res.Items
		// Newer executions arrive between pages; they belong before page 1.
		for i := range 3 {
			e.submit(acme, at(time.Minute+time.Duration(i)*time.Second), job("late"))
		}
		p.After = res.Next
		got = append(got, e.list(p)...)
		wantOrder(t, "pages with inserts in between", got, want)
	})

	t.Run("FiltersByStatus", func(t *testing.T) {
		e := start(t, ns)
		byStatus := map[store.Status]string{}
		l := e.run(acme, base, job("succeeded"))
		_, err := e.complete(l, at(time.Second), nil)
		e.must(err, "Complete")
		byStatus[store.StatusSucceeded] = l.ExecutionID
		l = e.run(acme, at(2*time.Second), job("failed"))
		_, err = e.fail(l, at(3*time.Second), "boom", false, 0)
		e.must(err, "Fail")
		byStatus[store.StatusFailed] = l.ExecutionID
		l = e.run(acme, at(4*time.Second), job("running"))
		byStatus[store.StatusRunning] = l.ExecutionID
		x := e.submit(acme, at(5*time.Second), job("cancelled"))
		_, err = e.cancel(acme, x.ID, at(5*time.Second))
		e.must(err, "Cancel")
		byStatus[store.StatusCancelled] = x.ID
		byStatus[store.StatusQueued] = e.submit(acme, at(6*time.Second), job("queued")).ID
		sub := job("scheduled")
		sub.RunAt = at(time.Hour)
		byStatus[store.StatusScheduled] = e.submit(acme, at(7*time.Second), sub).ID

		for st, id := range byStatus {
			xs := e.list(store.ListParams{Tenant: acme, Status: st})
			if len(xs) != 1 || xs[0].ID != id {
				t.Errorf("List status %s: %d items, want only %s", st, len(xs), id)
			}
		}
		if xs := e.list(store.ListParams{Tenant: acme, Status: store.StatusSkipped}); len(xs) != 0 {
			t.Errorf("List status skipped: %d items, want 0", len(xs))
		}
		if xs := e.list(store.ListParams{Tenant: acme}); len(xs) != len(byStatus) {
			t.Errorf("List without a status: %d items, want %d", len(xs), len(byStatus))
		}
		e.wantInflight(acme, 3)
	})

	t.Run("FiltersByKindQueueDedupKeyAndSchedule", func(t *testing.T) {
		e := start(t, ns)
		type shape struct{ kind, queue, key, schedule string }
		shapes := []shape{
			{"http", "default", "", ""},
			{"http", "mail", "k1", ""},
			{"echo", "mail", "k2", "nightly"},
			{"echo", "default", "", "nightly"},
			{"sleep", "batch", "k3", "hourly"},
		}
		ids := make([]string, len(shapes))
		for i, s := range shapes {
			sub := store.Submission{Kind: s.kind, Queue: s.queue, DedupKey: s.key, Schedule: s.schedule, Payload: mustJSON(`{}`)}
			ids[i] = e.submit(acme, at(time.Duration(i)*time.Second), sub).ID
		}
		cases := []struct {
			p    store.ListParams
			want []int // indexes into shapes, newest first
		}{
			{store.ListParams{Kind: "http"}, []int{1, 0}},
			{store.ListParams{Queue: "mail"}, []int{2, 1}},
			{store.ListParams{DedupKey: "k2"}, []int{2}},
			{store.ListParams{Schedule: "nightly"}, []int{3, 2}},
			{store.ListParams{Kind: "echo", Queue: "default"}, []int{3}},
			{store.ListParams{Kind: "http", Schedule: "nightly"}, nil},
			{store.ListParams{Kind: "nope"}, nil},
		}
		for _, c := range cases {
			c.p.Tenant = acme
			xs := e.list(c.p)
			var got, want []string
			for _, x := range xs {
				got = append(got, x.ID)
			}
			for _, i := range c.want {
				want = append(want, ids[i])
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("List %+v: got %v, want %v", c.p, got, want)
			}
		}
	})

	t.Run("TenantsSeeOnlyTheirOwn", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		for i := range 4 {
			key := fmt.Sprintf("k%d", i)
			e.submit(acme, at(time.Duration(i)*time.Second), keyed("echo", key, `{}`))
			if i < 3 {
				e.submit(globex, at(time.Duration(i)*time.Second), keyed("echo", key, `{}`))
			}
		}
		// listAll fails on any item of another tenant.
		if n := len(e.list(store.ListParams{Tenant: acme, Limit: 2})); n != 4 {
			t.Errorf("acme sees %d executions, want 4", n)
		}
		if n := len(e.list(store.ListParams{Tenant: globex, Limit: 2})); n != 3 {
			t.Errorf("globex sees %d executions, want 3", n)
		}
		if n := len(e.list(store.ListParams{Tenant: globex, DedupKey: "k1"})); n != 1 {
			t.Errorf("globex sees %d executions with key k1, want 1", n)
		}
		if n := len(e.list(store.ListParams{Limit: 2})); n != 7 {
			t.Errorf(`Tenant "" sees %d executions, want 7`, n)
		}
	})

	t.Run("FindsByIDPrefix", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		var acmeIDs, globexIDs []string
		for i := range 12 {
			acmeIDs = append(acmeIDs, e.submit(acme, at(time.Duration(i)*time.Second), job("echo")).ID)
			globexIDs = append(globexIDs, e.submit(globex, at(time.Duration(i)*time.Second), job("echo")).ID)
		}
		// want is every id of ids with the prefix, newest first.
		want := func(ids []string, prefix string) []string {
			var out []string
			for i := len(ids) - 1; i >= 0; i-- {
				if strings.HasPrefix(ids[i], prefix) {
					out = append(out, ids[i])
				}
			}
			slices.SortFunc(out, func(a, b string) int { return strings.Compare(b, a) })
			return out
		}
		idsOf := func(xs []*store.Execution) []string {
			var out []string
			for _, x := range xs {
				out = append(out, x.ID)
			}
			return out
		}
		for _, id := range []string{acmeIDs[0], acmeIDs[5], acmeIDs[11]} {
			for _, n := range []int{8, 9, 13, 20, 30, 36} {
				prefix := id[:n]
				got := idsOf(e.list(store.ListParams{Tenant: acme, IDPrefix: prefix, Limit: 2}))
				if w := want(acmeIDs, prefix); fmt.Sprint(got) != fmt.Sprint(w) || len(got) == 0 {
					t.Errorf("acme, prefix %s: got %v, want %v", prefix, got, w)
				}
				// Another tenant never finds acme's executions.
				got = idsOf(e.list(store.ListParams{Tenant: globex, IDPrefix: prefix}))
				if w := want(globexIDs, prefix); fmt.Sprint(got) != fmt.Sprint(w) {
					t.Errorf("globex, prefix %s: got %v, want %v", prefix, got, w)
				}
				got = idsOf(e.list(store.ListParams{IDPrefix: prefix}))
				all := want(append(slices.Clone(acmeIDs), globexIDs...), prefix)
				if fmt.Sprint(got) != fmt.Sprint(all) {
					t.Errorf("every tenant, prefix %s: got %v, want %v", prefix, got, all)
				}
			}
			// A whole id finds it in one call however small the Scan:
			// the range holds it alone (a Scan-bounded read may still
			// offer a next page; it is empty).
			res, err := e.s.List(e.ctx, &store.ListParams{Tenant: acme, IDPrefix: id, Scan: 1})
			if err != nil || len(res.Items) != 1 || res.Items[0].ID != id {
				t.Fatalf("List of whole id %s, Scan 1: %+v, %v; want it alone", id, res, err)
			}
			if res.Next != "" {
				more, err := e.s.List(e.ctx, &store.ListParams{Tenant: acme, IDPrefix: id, Scan: 1, After: res.Next})
				if err != nil || len(more.Items) != 0 || more.Next != "" {
					t.Errorf("List of whole id %s after it: %+v, %v; want empty, no next", id, more, err)
				}
			}
		}
		// With other filters, the prefix narrows them.
		if got := e.list(store.ListParams{Tenant: acme, IDPrefix: acmeIDs[3], Kind: "nope"}); len(got) != 0 {
			t.Errorf("prefix with kind nope: %d items", len(got))
		}
		if got := idsOf(e.list(store.ListParams{Tenant: acme, IDPrefix: acmeIDs[3], Status: store.StatusQueued})); fmt.Sprint(got) != fmt.Sprint([]string{acmeIDs[3]}) {
			t.Errorf("prefix with status queued: %v", got)
		}
		// A page after the prefix's range, or before it, is empty.
		res, err := e.s.List(e.ctx, &store.ListParams{Tenant: acme, IDPrefix: acmeIDs[11], After: acmeIDs[0]})
		if err != nil || len(res.Items) != 0 {
			t.Errorf("prefix of the newest, after the oldest: %+v, %v; want empty", res, err)
		}
		for _, bad := range []string{acmeIDs[0][:7], strings.ToUpper(acmeIDs[0][:8]), acmeIDs[0][:8] + "0",
			acmeIDs[0] + "0", "zzzzzzzz", "0190abcd%"} {
			_, err := e.s.List(e.ctx, &store.ListParams{Tenant: acme, IDPrefix: bad})
			wantErr(t, "List of id prefix "+bad, err, store.ErrInvalid)
		}
		_, err = e.s.List(e.ctx, &store.ListParams{Tenant: acme, IDPrefix: acmeIDs[0][:8], ParentID: acmeIDs[0]})
		wantErr(t, "List of id prefix with a parent", err, store.ErrInvalid)
	})

	t.Run("MalformedCursorIsInvalid", func(t *testing.T) {
		e := start(t, ns)
		first := e.submit(acme, base, job("echo"))
		for _, after := range []string{"not-an-id", strings.ToUpper(first.ID), first.ID + "0", "zz" + first.ID[2:]} {
			_, err := e.s.List(e.ctx, &store.ListParams{Tenant: acme, After: after})
			wantErr(t, "List after "+after, err, store.ErrInvalid)
		}
	})

	t.Run("ScanBudget", func(t *testing.T) { testListScan(t, ns) })

	t.Run("NegativeScanIsInvalid", func(t *testing.T) {
		e := start(t, ns)
		_, err := e.s.List(e.ctx, &store.ListParams{Tenant: acme, Kind: "echo", Scan: -1})
		wantErr(t, "List with Scan -1", err, store.ErrInvalid)
	})

	t.Run("NegativeLimitIsInvalid", func(t *testing.T) {
		e := start(t, ns)
		_, err := e.s.List(e.ctx, &store.ListParams{Tenant: acme, Limit: -1})
		wantErr(t, "List with Limit -1", err, store.ErrInvalid)
	})
}

// testListScan covers ListParams.Scan: a List that examines executions one
// by one stops after Scan of them, with the matches found so far (maybe
// none) and a Next; paging on still visits every match once, newest
// first, within Limit and MaxBytes.
func testListScan(t *testing.T, ns NewStore) {
	const scan = 50
	// seed gives acme 400 executions: the oldest 200 of kind "common",
	// except every 20th of kind "rare" in queue "slow" with a 1 KiB
	// payload, the oldest of those with dedup key "needle"; then the newest
	// 200, all "common". globex gets 100 older ones, every 10th "rare"
	// (Tenant "" sees them among acme's). It returns every execution,
	// newest first.
	seed := func(e *env) []*store.Execution {
		e.t.Helper()
		e.createTenant(store.CreateTenantParams{Name: globex})
		big := mustJSON(`{"pad":"` + strings.Repeat("x", 1014) + `"}`)
		sub := func(i int, rare bool) store.Submission {
			if !rare {
				return job("common")
			}
			s := job("rare")
			s.Queue, s.Payload = "slow", big
			if i == 0 {
				s.DedupKey = "needle"
			}
			return s
		}
		for b := range 5 { // batches of 20 a tenant, one second apart
			var subs []store.Submission
			for i := b * 20; i < b*20+20; i++ {
				subs = append(subs, sub(i, i%10 == 0))
			}
			e.admit(globex, at(time.Duration(b)*time.Second), subs...)
		}
		for b := range 20 {
			var subs []store.Submission
			for i := b * 20; i < b*20+20; i++ {
				subs = append(subs, sub(i, i < 200 && i%20 == 0))
			}
			e.admit(acme, at(time.Minute+time.Duration(b)*time.Second), subs...)
		}
		all := e.list(store.ListParams{Limit: store.MaxListLimit})
		if len(all) != 500 {
			e.t.Fatalf("seeded %d executions, want 500", len(all))
		}
		return all
	}
	// want is all's executions that p's filters match, in order.
	want := func(all []*store.Execution, p store.ListParams) []string {
		var ids []string
		for _, x := range all {
			if mismatch(x, &p) == "" {
				ids = append(ids, x.ID)
			}
		}
		return ids
	}
	ids := func(xs []*store.Execution) []string {
		out := make([]string, len(xs))
		for i, x := range xs {
			out[i] = x.ID
		}
		return out
	}
	indexed := func(s store.Store, p store.ListParams) bool {
		li, ok := s.(store.ListIndexer)
		return ok && li.ListIndexed(&p)
	}

	t.Run("StopsAtScanAndPagesOn", func(t *testing.T) {
		e := start(t, ns)
		all := seed(e)
		for _, p := range []store.ListParams{
			{Tenant: acme, Kind: "rare", Limit: 5, Scan: scan},
			{Kind: "rare", Limit: 5, Scan: scan},
			{Tenant: acme, Kind: "rare", Queue: "slow", Scan: scan},
			{Kind: "rare", Status: store.StatusQueued, Limit: 3, Scan: scan},
			{Tenant: globex, Kind: "rare", Scan: scan},
			{Tenant: acme, Kind: "nope", Scan: scan},
			// A dedup key's index does not answer a kind: the window does.
			{Tenant: acme, DedupKey: "needle", Kind: "nope", Scan: scan},
		} {
			// Every backend examines executions one by one for a kind:
			// the newest 200 do not match, so the first page stops at
			// Scan with nothing found yet.
			res, err := e.s.List(e.ctx, &p)
			e.must(err, "List")
			if p.Tenant != globex && (len(res.Items) != 0 || res.Next == "") {
				t.Errorf("List %+v first page: %d items, Next %q; want none and a Next (the newest %d examined do not match)",
					p, len(res.Items), res.Next, scan)
			}
			var pages int
			got := listPages(t, e.s, p, func(*store.ListResult) { pages++ })
			if w := want(all, p); fmt.Sprint(ids(got)) != fmt.Sprint(w) {
				t.Errorf("List %+v paged to the end: %d items %v, want %d %v", p, len(got), ids(got), len(w), w)
			}
			// At most Scan examined a page: the pages cover what they
			// examined, about the whole history.
			if p.Kind == "nope" && pages < 400/scan {
				t.Errorf("List %+v: %d pages, want at least %d with Scan %d over 400 executions", p, pages, 400/scan, scan)
			}
		}
	})

	t.Run("LimitAndMaxBytesStillHold", func(t *testing.T) {
		e := start(t, ns)
		all := seed(e)
		// "common" matches most: pages fill to the limit within the scan.
		p := store.ListParams{Tenant: acme, Kind: "common", Limit: 7, Scan: scan}
		res, err := e.s.List(e.ctx, &p)
		e.must(err, "List")
		if len(res.Items) != 7 || res.Next != res.Items[6].ID {
			t.Errorf("List %+v: %d items, Next %q; want 7 and Next the last", p, len(res.Items), res.Next)
		}
		got := e.list(p)
		if w := want(all, p); fmt.Sprint(ids(got)) != fmt.Sprint(w) {
			t.Errorf("List %+v paged: %d items, want %d", p, len(got), len(w))
		}
		// Each 1 KiB payload of "rare" fills a 1 KiB budget alone.
		p = store.ListParams{Kind: "rare", Limit: 500, Scan: scan, MaxBytes: 1024}
		got = listPages(t, e.s, p, func(r *store.ListResult) {
			if len(r.Items) > 1 {
				t.Errorf("List %+v: a page of %d items, want at most 1", p, len(r.Items))
			}
		})
		if w := want(all, p); fmt.Sprint(ids(got)) != fmt.Sprint(w) {
			t.Errorf("List %+v paged: %d items, want %d", p, len(got), len(w))
		}
	})

	t.Run("DedupKeyLookup", func(t *testing.T) {
		e := start(t, ns)
		all := seed(e)
		for _, p := range []store.ListParams{
			{Tenant: acme, DedupKey: "needle", Scan: scan},
			{Tenant: globex, DedupKey: "needle", Scan: scan},
			{DedupKey: "needle", Scan: scan},
		} {
			w := want(all, p)
			if len(w) != 1 && p.Tenant != "" || len(w) != 2 && p.Tenant == "" {
				t.Fatalf("seed: %d executions with key needle for %q", len(w), p.Tenant)
			}
			if indexed(e.s, p) {
				// An index of the key's executions answers at once.
				res, err := e.s.List(e.ctx, &p)
				e.must(err, "List")
				if fmt.Sprint(ids(res.Items)) != fmt.Sprint(w) || res.Next != "" {
					t.Errorf("List %+v: %v, Next %q; want %v in one page", p, ids(res.Items), res.Next, w)
				}
			}
			if got := e.list(p); fmt.Sprint(ids(got)) != fmt.Sprint(w) {
				t.Errorf("List %+v paged: %v, want %v", p, ids(got), w)
			}
		}
	})
}
