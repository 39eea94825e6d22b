package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// testClaimFilters covers Claim's order and reach under its filters: a
// claim for some queues, kinds or one tenant hands out the matching
// executions in the same order as an unfiltered claim would (highest
// priority, then oldest RunAt), however much non-matching work lies ahead
// of them.
func testClaimFilters(t *testing.T, ns NewStore) {
	shaped := func(kind, queue string, prio int) store.Submission {
		s := job(kind)
		s.Queue, s.Priority = queue, prio
		return s
	}
	// drain claims one at a time with p and returns what it got in order,
	// each as tenant/queue/kind, or as the kind alone when short is set.
	drain := func(e *env, p store.ClaimParams, short bool) []string {
		e.t.Helper()
		var got []string
		for range 100 {
			p.Max = 1
			ls := e.claim(p)
			if len(ls) == 0 {
				return got
			}
			l := ls[0]
			if short {
				got = append(got, l.Kind)
			} else {
				got = append(got, l.Tenant+"/"+l.Queue+"/"+l.Kind)
			}
		}
		e.t.Fatal("claims did not run dry")
		return nil
	}

	t.Run("OrderHoldsAcrossKinds", func(t *testing.T) {
		e := start(t, ns)
		e.submit(acme, at(0), shaped("a1", "default", 1))
		e.submit(acme, at(1*time.Second), shaped("b5", "default", 5))
		e.submit(acme, at(2*time.Second), shaped("c9", "default", 9))
		e.submit(acme, at(3*time.Second), shaped("a5", "default", 5))
		e.submit(acme, at(4*time.Second), shaped("b0", "default", 0))
		got := drain(e, store.ClaimParams{Tenant: acme, Kinds: []string{"a1", "a5", "b5", "b0"}, Now: at(time.Minute)}, true)
		if fmt.Sprint(got) != "[b5 a5 a1 b0]" {
			t.Errorf("claims by kind came in order %v, want [b5 a5 a1 b0]", got)
		}
	})

	t.Run("OrderHoldsAcrossQueues", func(t *testing.T) {
		e := start(t, ns)
		e.submit(acme, at(0), shaped("q1-low", "q1", 0))
		e.submit(acme, at(1*time.Second), shaped("q2-high", "q2", 3))
		e.submit(acme, at(2*time.Second), shaped("q3-top", "q3", 9))
		e.submit(acme, at(3*time.Second), shaped("q1-high", "q1", 3))
		got := drain(e, store.ClaimParams{Queues: []string{"q1", "q2"}, Now: at(time.Minute)}, true)
		if fmt.Sprint(got) != "[q2-high q1-high q1-low]" {
			t.Errorf("claims by queue came in order %v, want [q2-high q1-high q1-low]", got)
		}
		e.wantInflight(acme, 4)
	})

	t.Run("ReachesPastNonMatchingWork", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		var ahead []store.Submission
		for range 150 {
			ahead = append(ahead, shaped("other", "default", 9))
		}
		e.admit(acme, base, ahead...)
		var theirs []store.Submission
		for range 150 {
			theirs = append(theirs, shaped("mine", "default", 9))
		}
		e.admit(globex, base, theirs...)
		want := e.submit(acme, at(time.Second), shaped("mine", "default", 0))
		ls := e.claim(store.ClaimParams{Tenant: acme, Kinds: []string{"mine"}, Max: 5, Now: at(time.Minute)})
		if len(ls) != 1 || ls[0].ExecutionID != want.ID {
			t.Errorf("claim for acme's kind mine behind 300 others handed out %d leases, want only %s", len(ls), want.ID)
		}
		ls = e.claim(store.ClaimParams{Tenant: globex, Queues: []string{"default"}, Kinds: []string{"mine", "nope"}, Max: 200, Now: at(time.Minute)})
		if len(ls) != 150 {
			t.Errorf("claim for globex's 150 handed out %d", len(ls))
		}
		e.wantInflight(acme, 151)
	})

	t.Run("EveryFilterTogether", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		for i, tn := range []string{acme, globex} {
			for _, q := range []string{"q1", "q2"} {
				for _, k := range []string{"x", "y"} {
					e.submit(tn, at(time.Duration(i)*time.Second), shaped(k, q, 0))
				}
			}
		}
		got := drain(e, store.ClaimParams{Tenant: globex, Queues: []string{"q2"}, Kinds: []string{"y"}, Now: at(time.Minute)}, false)
		if fmt.Sprint(got) != "[globex/q2/y]" {
			t.Errorf("claimed %v, want [globex/q2/y]", got)
		}
		if n := len(drain(e, store.ClaimParams{Now: at(time.Minute)}, false)); n != 7 {
			t.Errorf("an unfiltered claim then found %d, want the other 7", n)
		}
	})
}
