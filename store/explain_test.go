package store

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestDecide: the rules of ExplainFacts.Decide on facts given directly,
// the cases the backends' tests reach only with much setting up.
func TestDecide(t *testing.T) {
	now := time.Date(2031, 3, 14, 9, 0, 0, 0, time.UTC)
	live := []*WorkerSeen{{ID: "w", Kinds: []string{"echo"}}}
	wake := now.Add(time.Hour)
	for _, c := range []struct {
		name string
		f    ExplainFacts
		want []GateKind
		has  string // in some detail
	}{
		{"running", ExplainFacts{Execution: &Execution{Status: StatusRunning, Kind: "x"}, TenantDisabled: true}, nil, ""},
		{"terminal", ExplainFacts{Execution: &Execution{Status: StatusFailed, Kind: "x"}}, nil, ""},
		{"suspended: the wait and the tenant only",
			ExplainFacts{Execution: &Execution{Status: StatusSuspended, Kind: "x", WaitingFor: "go", WakeAt: &wake},
				TenantDisabled: true, TenantsAhead: 3, Running: 9},
			[]GateKind{GateTenantDisabled, GateWaiting}, `signal "go"`},
		{"suspended for children",
			ExplainFacts{Execution: &Execution{Status: StatusSuspended, Kind: "x", WaitingFor: ChildrenWaitFor("ship")}},
			[]GateKind{GateWaiting}, `Waiting for the children of spawn step "ship" (no timeout).`},
		{"suspended for an event",
			ExplainFacts{Execution: &Execution{Status: StatusSuspended, Kind: "x", WaitingFor: EventWaitFor("paid"), WakeAt: &wake}},
			[]GateKind{GateWaiting}, `Waiting for event "paid", or until its timeout at 2031-03-14T10:00:00Z.`},
		{"disabled: no fair turn",
			ExplainFacts{Execution: &Execution{Status: StatusQueued, Kind: "echo"}, TenantDisabled: true, TenantsAhead: 2, Workers: live},
			[]GateKind{GateTenantDisabled}, "disabled"},
		{"scheduled later: no fair turn",
			ExplainFacts{Execution: &Execution{Status: StatusScheduled, Kind: "echo", RunAt: now.Add(time.Minute)}, TenantsAhead: 2, Workers: live},
			[]GateKind{GateRunAt}, "1m0s from now"},
		{"due: a fair turn, at least the bound",
			ExplainFacts{Execution: &Execution{Status: StatusScheduled, Kind: "echo", RunAt: now}, TenantsAhead: MaxExplainTenants, Workers: live},
			[]GateKind{GateFairTurn}, "at least 1000"},
		{"key below its limit",
			ExplainFacts{Execution: &Execution{Status: StatusQueued, Kind: "echo", ConcurrencyKey: "k", ConcurrencyLimit: 2}, Running: 1, Workers: live},
			nil, ""},
		{"bucket with a token, worker of another kind",
			ExplainFacts{Execution: &Execution{Status: StatusQueued, Kind: "mail", RateKey: "r"},
				RateLimit: &RateLimit{Rate: 1, Per: time.Second, Burst: 1, TAT: now}, Workers: live},
			[]GateKind{GateNoWorker}, `kind "mail"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := c.f.Decide(now)
			var got []GateKind
			details := ""
			for _, g := range x.Gates {
				got = append(got, g.Gate)
				details += g.Detail
			}
			if x.Gates == nil || !slices.Equal(got, c.want) || !strings.Contains(details, c.has) {
				t.Errorf("gates %v (%q), want %v with %q", got, details, c.want, c.has)
			}
		})
	}
}

// TestWorkerClaims: a worker claims its tenant's executions, or every
// tenant's, of the queues and kinds of its filters (none: every one).
func TestWorkerClaims(t *testing.T) {
	for _, c := range []struct {
		w                   WorkerSeen
		tenant, queue, kind string
		want                bool
	}{
		{WorkerSeen{}, "a", "q", "k", true},
		{WorkerSeen{Tenant: "a"}, "a", "q", "k", true},
		{WorkerSeen{Tenant: "b"}, "a", "q", "k", false},
		{WorkerSeen{Queues: []string{"q"}, Kinds: []string{"k"}}, "a", "q", "k", true},
		{WorkerSeen{Queues: []string{"other"}}, "a", "q", "k", false},
		{WorkerSeen{Kinds: []string{"other"}}, "a", "q", "k", false},
	} {
		if got := c.w.Claims(c.tenant, c.queue, c.kind); got != c.want {
			t.Errorf("%+v claims %s/%s/%s: %v, want %v", c.w, c.tenant, c.queue, c.kind, got, c.want)
		}
	}
}
