package store

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Explain answers "why is this execution waiting?" (Store.Explain): every
// gate that holds it back at Now, each with its figures. A backend reads
// the facts (ExplainFacts) in a handful of indexed reads and Decide turns
// them into gates, with the rules Claim applies, so every backend answers
// alike.

// ExplainParams are the arguments of Store.Explain.
type ExplainParams struct {
	Tenant string // "" = any tenant
	ID     string
	Now    time.Time
}

// GateKind names what holds an execution back.
type GateKind string

// The gates of Explain (docs/api.md, "Explain").
const (
	// GateConcurrencyKey: its tenant runs as many executions of its
	// concurrency key as its limit allows.
	GateConcurrencyKey GateKind = "concurrency_key"
	// GateRateLimit: its rate key's bucket refuses a start at Now.
	GateRateLimit GateKind = "rate_limit"
	// GateRunAt: it is scheduled for later.
	GateRunAt GateKind = "run_at"
	// GateWaiting: it is a suspended flow, sleeping or waiting for a
	// signal, the children of a spawn step or an event.
	GateWaiting GateKind = "waiting"
	// GateFairTurn: tenants ahead of its tenant in the claim's turn order
	// have ready work, and are served first.
	GateFairTurn GateKind = "fair_turn"
	// GateTenantDisabled: its tenant is disabled; nothing of it starts.
	GateTenantDisabled GateKind = "tenant_disabled"
	// GateNoWorker: no live worker claims its queue and kind.
	GateNoWorker GateKind = "no_worker"
)

// Bounds of an explanation, so that its cost stays a handful of indexed
// reads however big the store is.
const (
	// MaxExplainHolders is the most holders of a concurrency key an
	// explanation names (the first by id); Running counts them all.
	MaxExplainHolders = 100
	// MaxExplainTenants is the most tenants ahead an explanation counts:
	// a count at it means at least that many.
	MaxExplainTenants = 1000
	// WorkerAlive is how recently a worker must have claimed to count as
	// live: a few report intervals (ReportEvery).
	WorkerAlive = time.Minute
)

// Gate is one reason an execution waits. Gate says which; the fields of
// that gate are set, the others zero.
type Gate struct {
	Gate   GateKind
	Detail string // a sentence for a person

	// concurrency_key: the key, the execution's limit, how many of the
	// tenant's executions with the key run, and the first
	// MaxExplainHolders of them by id. rate_limit: Key and NextTokenAt,
	// when the bucket next allows a start.
	Key         string
	Limit       int
	Running     int
	Holders     []string
	NextTokenAt time.Time
	// run_at.
	RunAt time.Time
	// waiting: the signal it waits for ("" for a sleep) and when the sleep
	// or the wait's timeout ends (nil: a wait without one).
	WaitingFor string
	WakeAt     *time.Time
	// fair_turn: the tenants with ready work before its tenant in turn
	// order (at most MaxExplainTenants).
	TenantsAhead int
	// no_worker.
	Queue string
	Kind  string
}

// Explanation is Store.Explain's answer. Gates is empty (not nil) for an
// execution nothing holds back, and for a running or terminal one.
type Explanation struct {
	ExecutionID string
	Status      Status
	Gates       []Gate
}

// ExplainFacts is what a backend reads to explain Execution, all in one
// snapshot where the backend has one.
type ExplainFacts struct {
	Execution      *Execution
	TenantDisabled bool
	// Running counts the running executions of the execution's tenant with
	// its concurrency key; Holders names the first MaxExplainHolders of
	// them by id. Both zero without a key.
	Running int
	Holders []string
	// RateLimit is its tenant's limit of its rate key, nil when it has
	// none (or no rate key).
	RateLimit *RateLimit
	// TenantsAhead counts, up to MaxExplainTenants, the other tenants a
	// claim serves before the execution's (smaller turn, or equal turn and
	// smaller name) that have ready work.
	TenantsAhead int
	// Workers are those seen since Now - WorkerAlive, of the execution's
	// tenant and of every tenant ("").
	Workers []*WorkerSeen
}

// Waiting reports whether an execution in this status can be held back by
// gates: it is neither running nor terminal.
func (s Status) Waiting() bool {
	return s == StatusScheduled || s == StatusQueued || s == StatusSuspended
}

// Claims reports whether worker w claims executions of tenant in queue of
// kind: a worker of every tenant ("") or of tenant, whose filters (none:
// every queue, every kind) take them.
func (w *WorkerSeen) Claims(tenant, queue, kind string) bool {
	return (w.Tenant == "" || w.Tenant == tenant) &&
		(len(w.Queues) == 0 || slices.Contains(w.Queues, queue)) &&
		(len(w.Kinds) == 0 || slices.Contains(w.Kinds, kind))
}

// Decide is the explanation of f at now, by the rules Claim applies:
//
//   - running or terminal: no gate;
//   - tenant_disabled: a disabled tenant's executions are never claimed;
//   - waiting: a suspended execution waits for its wake or its signal (no
//     other gate applies before it is queued again);
//   - run_at: scheduled with RunAt after now;
//   - concurrency_key: Running at or above its ConcurrencyLimit;
//   - rate_limit: its bucket refuses a start at now (RateLimit.FreeAt);
//   - no_worker: no live worker Claims its tenant, queue and kind;
//   - fair_turn: ready at now (no run_at gate), its tenant enabled, and
//     TenantsAhead tenants with ready work are served first.
func (f *ExplainFacts) Decide(now time.Time) *Explanation {
	x := f.Execution
	out := &Explanation{ExecutionID: x.ID, Status: x.Status, Gates: []Gate{}}
	if !x.Status.Waiting() {
		return out
	}
	add := func(g Gate) { out.Gates = append(out.Gates, g) }
	if f.TenantDisabled {
		add(Gate{Gate: GateTenantDisabled,
			Detail: fmt.Sprintf("Tenant %s is disabled: none of its executions starts until it is enabled again.", x.Tenant)})
	}
	if x.Status == StatusSuspended {
		add(waitingGate(x))
		return out
	}
	ready := x.Status == StatusQueued || !x.RunAt.After(now)
	if !ready {
		add(Gate{Gate: GateRunAt, RunAt: x.RunAt.UTC(),
			Detail: fmt.Sprintf("Scheduled to run at %s, %s from now.", stamp(x.RunAt), roundDur(x.RunAt.Sub(now)))})
	}
	if x.ConcurrencyKey != "" && f.Running >= x.ConcurrencyLimit {
		add(Gate{Gate: GateConcurrencyKey, Key: x.ConcurrencyKey, Limit: x.ConcurrencyLimit, Running: f.Running,
			Holders: append([]string{}, f.Holders...),
			Detail: fmt.Sprintf("Concurrency key %q is at its limit: %d running, limit %d; it starts when one of them ends.",
				x.ConcurrencyKey, f.Running, x.ConcurrencyLimit)})
	}
	if rl := f.RateLimit; rl != nil && x.RateKey != "" {
		if free := rl.FreeAt(rl.TAT, now); free.After(now) {
			add(Gate{Gate: GateRateLimit, Key: x.RateKey, NextTokenAt: free.UTC(),
				Detail: fmt.Sprintf("Rate limit %q (%d per %s, burst %d) has no token now; the next frees at %s.",
					x.RateKey, rl.Rate, rl.Per, rl.Burst, stamp(free))})
		}
	}
	if !slices.ContainsFunc(f.Workers, func(w *WorkerSeen) bool { return w.Claims(x.Tenant, x.Queue, x.Kind) }) {
		add(Gate{Gate: GateNoWorker, Queue: x.Queue, Kind: x.Kind,
			Detail: fmt.Sprintf("No live worker claims kind %q in queue %q (none seen in the last %s).",
				x.Kind, x.Queue, WorkerAlive)})
	}
	if ready && !f.TenantDisabled && f.TenantsAhead > 0 {
		n := fmt.Sprint(f.TenantsAhead)
		if f.TenantsAhead >= MaxExplainTenants {
			n = "at least " + n
		}
		add(Gate{Gate: GateFairTurn, TenantsAhead: f.TenantsAhead,
			Detail: fmt.Sprintf("Tenants take turns: %s other tenant(s) with ready work come first in the next claim.", n)})
	}
	return out
}

// waitingGate is the gate of suspended execution x.
func waitingGate(x *Execution) Gate {
	g := Gate{Gate: GateWaiting, WaitingFor: x.WaitingFor}
	if x.WakeAt != nil {
		t := x.WakeAt.UTC()
		g.WakeAt = &t
	}
	var b strings.Builder
	step, children := ChildrenWaitStep(x.WaitingFor)
	event, isEvent := EventWaitName(x.WaitingFor)
	switch {
	case children && x.WakeAt != nil:
		fmt.Fprintf(&b, "Waiting for the children of spawn step %q, or until its timeout at %s.", step, stamp(*x.WakeAt))
	case children:
		fmt.Fprintf(&b, "Waiting for the children of spawn step %q (no timeout).", step)
	case isEvent && x.WakeAt != nil:
		fmt.Fprintf(&b, "Waiting for event %q, or until its timeout at %s.", event, stamp(*x.WakeAt))
	case isEvent:
		fmt.Fprintf(&b, "Waiting for event %q (no timeout).", event)
	case x.WaitingFor == "" && x.WakeAt != nil:
		fmt.Fprintf(&b, "Sleeping until %s.", stamp(*x.WakeAt))
	case x.WaitingFor == "":
		b.WriteString("Suspended.")
	case x.WakeAt != nil:
		fmt.Fprintf(&b, "Waiting for signal %q, or until its timeout at %s.", x.WaitingFor, stamp(*x.WakeAt))
	default:
		fmt.Fprintf(&b, "Waiting for signal %q (no timeout).", x.WaitingFor)
	}
	g.Detail = b.String()
	return g
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// roundDur rounds d for a sentence: to the second, or the millisecond
// below one second.
func roundDur(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Second)
}

// ReadyKindsParams are the arguments of Store.ReadyKinds.
type ReadyKindsParams struct {
	Tenant string // "" = every tenant
	Now    time.Time
}

// ReadyKind names a tenant with executions of Kind ready at Now (queued, or
// scheduled and due): work a claim for that kind may take.
type ReadyKind struct {
	Tenant string
	Kind   string
}

// MaxReadyKinds bounds the answer of Store.ReadyKinds.
const MaxReadyKinds = 1000
