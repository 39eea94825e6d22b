package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// ClaimExaminer is implemented by a store that counts the ready-index
// entries its claims have examined (read and then taken or passed over):
// the work a claim does besides what it leases. A store with the count
// lets ClaimBacklog/KindBacklogCostsOtherKindsNothing check that a backlog
// no claim's filters take is never read; the SQL backends check the same
// in their own plan tests.
type ClaimExaminer interface {
	ClaimExamined() int64
}

// backlogKinds is the size of the backlog of a kind no claim takes.
const backlogKinds = 3000

// testClaimBacklog: a large backlog of a kind no worker handles, queued
// and scheduled (due), at the top priority, neither stops nor slows a
// claim filtered to other kinds — of that tenant or another — and fair
// claims and priority order hold across it.
func testClaimBacklog(t *testing.T, ns NewStore) {
	t.Run("KindBacklogCostsOtherKindsNothing", func(t *testing.T) {
		e := start(t, ns)
		e.createTenant(store.CreateTenantParams{Name: globex})
		var nobody []store.Submission
		for range backlogKinds {
			s := job("nobody")
			s.Priority = 9
			nobody = append(nobody, s)
		}
		for i := 0; i < len(nobody); i += 500 {
			e.admit(acme, base, nobody[i:i+500]...)
		}
		// Scheduled ones, due by the claims' Now.
		var later []store.Submission
		for range 500 {
			s := job("nobody")
			s.Priority, s.RunAt = 9, at(time.Second)
			later = append(later, s)
		}
		e.admit(acme, base, later...)
		prio := map[string]int{} // execution id -> priority
		for i, p := range []int{0, 5, 1} {
			s := job("echo")
			s.Priority = p
			prio[e.submit(acme, at(time.Duration(i)*time.Millisecond), s).ID] = p
			prio[e.submit(globex, at(time.Duration(i)*time.Millisecond), s).ID] = p
		}
		before, counts := int64(0), false
		if ex, ok := e.s.(ClaimExaminer); ok {
			before, counts = ex.ClaimExamined(), true
		}
		var got []string
		order := map[string][]int{} // per tenant, the priorities claimed, in order
		claims := 0
		for range 10 {
			ls := e.claim(store.ClaimParams{Kinds: []string{"echo", "sleep"}, Now: at(time.Minute)})
			claims++
			if len(ls) == 0 {
				break
			}
			got = append(got, fmt.Sprintf("%s:%s", ls[0].Tenant, ls[0].Kind))
			order[ls[0].Tenant] = append(order[ls[0].Tenant], prio[ls[0].ExecutionID])
		}
		// Each tenant's echo in priority order, the tenants taking turns.
		if len(got) != 6 {
			t.Fatalf("claims filtered to echo got %v, want the 6 echo executions", got)
		}
		for i, g := range got {
			if g != acme+":echo" && g != globex+":echo" {
				t.Errorf("claim %d got %s", i, g)
			}
			if i > 0 && g == got[i-1] {
				t.Errorf("claims got %v: a tenant served twice in a row while the other waited", got)
			}
		}
		for _, tn := range []string{acme, globex} {
			if fmt.Sprint(order[tn]) != "[5 1 0]" {
				t.Errorf("%s's echo executions came by priority %v, want [5 1 0]", tn, order[tn])
			}
		}
		if counts {
			// A claim examines what it leases and a few heads; never the
			// backlog (3,500 entries ahead of every echo).
			ex := e.s.(ClaimExaminer).ClaimExamined() - before
			t.Logf("%d claims filtered to echo examined %d ready entries", claims, ex)
			if limit := int64(8 * claims); ex > limit {
				t.Errorf("%d claims filtered to echo examined %d ready entries, want at most %d (the backlog of %d of another kind is not theirs to read)",
					claims, ex, limit, backlogKinds+500)
			}
		}
		// With a queue filter as well.
		e.submit(globex, at(2*time.Second), job("echo"))
		ls := e.claim(store.ClaimParams{Queues: []string{"default"}, Kinds: []string{"echo"}, Max: 5, Now: at(time.Minute)})
		if len(ls) != 1 || ls[0].Tenant != globex {
			t.Errorf("claim of queue default, kind echo got %d leases, want globex's one", len(ls))
		}
		// The backlog is intact, and an unfiltered claim takes it, highest
		// priority first.
		e.wantInflight(acme, backlogKinds+500+3)
		ls = e.claim(store.ClaimParams{Tenant: acme, Max: 3, Now: at(time.Minute)})
		if len(ls) != 3 || ls[0].Kind != "nobody" {
			t.Errorf("an unfiltered claim got %d leases (first %v), want 3 of the backlog", len(ls), ls)
		}
	})
}
