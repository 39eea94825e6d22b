package lincheck

import (
	"testing"

	"github.com/latch-run/latch/store"
)

// TestClaimLeaseSteps: the model holds a lease to the journal of its
// execution at the claim: all of it, or, marked partial
// (store.Lease.StepsPartial), its first steps in record order, maybe none,
// as a lease whose execution was force deleted before its claim read the
// journal carries. Any other subset is refused, partial or not.
func TestClaimLeaseSteps(t *testing.T) {
	const id, now = "x1", int64(1_000)
	steps := []StepOut{{Name: "b", Result: "1"}, {Name: "a", Result: "2"}} // record order: b, then a
	for _, c := range []struct {
		name    string
		carried []StepOut
		partial bool
		ok      bool
	}{
		{"whole", steps, false, true},
		{"whole, partial", steps, true, true},
		{"none, partial", nil, true, true},
		{"the first, partial", steps[:1], true, true},
		{"not the first, partial", steps[1:], true, false},
		{"none, not partial", nil, false, false},
		{"the first, not partial", steps[:1], false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := NewState(store.CreateTenantParams{Name: "acme", MaxInflight: 5})
			s.Concurrent = true
			s.Execs[id] = Exec{View: View{ID: id, Tenant: "acme", Kind: "flow", Payload: "{}",
				Status: store.StatusQueued, Attempt: 1, MaxAttempts: 2, RunAt: now}, Resume: true}
			s.Flows[id] = Flow{Steps: steps}
			carried := (Flow{Steps: c.carried}).journal()
			out := Output{Leases: []LeaseOut{{ID: id, Tenant: "acme", Token: "t1", Kind: "flow", Payload: "{}",
				Attempt: 1, MaxAttempts: 2, Expires: now + defaultLease, Steps: carried, Partial: c.partial}}}
			err := s.Apply(Input{Op: OpClaim, Tenant: "acme", Now: now, Max: 1}, out)
			if (err == nil) != c.ok {
				t.Errorf("claim answering %q (partial %v): %v; want accepted %v", carried, c.partial, err, c.ok)
			}
		})
	}
}
