package lincheck

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/latch-run/latch/store"
)

// Property drives random sequences of operations against one store from
// newStore and the model (State) side by side, with a fake clock that
// advances by random steps, and after every step compares everything the
// store shows: each execution of each tenant as List returns it (status,
// attempt, cancel request, run_at, finished_at, lease expiry, kind, key,
// payload, priority, max_attempts) and each tenant's inflight counter.
// Every answer is checked on the way, by sentinel error: dedup answers,
// quota refusals, reused keys, lost leases, not-terminal deletes.
//
// Operations: admit (single and batches; random kinds, keys, payloads,
// priorities, run_at, max_attempts and concurrency keys; an empty kind now
// and then), claim
// (by tenant, kinds, max and lease length), heartbeat, complete, fail (retry
// or not, with or without delay), release (started or not), cancel, delete
// and force delete, get, get tenant, rescue, promote, prune, the flow
// operations (record a step, sleep, wait with or without timeout, signal
// with or without idempotency key, wake, retry, read the journal), and
// advancing the clock — past leases, retry delays, dedup TTLs, retention,
// sleeps and timeouts. After every step it also compares the journal of
// every execution ever claimed. Ids and tokens are drawn
// from everything seen so far, so stale tokens, deleted ids, ids of the
// other tenant and unknown ids all occur.
//
// It is rapid's state machine test: the seed is printed on failure and
// -rapid.seed / -rapid.failfile replay it; -rapid.checks and -rapid.steps
// (or RAPID_CHECKS, RAPID_STEPS) size it. Each test case uses two fresh
// tenants and force-deletes its executions at the end, so the cases share
// one store without seeing each other.
func Property(t *testing.T, newStore NewStore) {
	t.Helper()
	s := newStore(t)
	ctx := t.Context()
	cases := 0
	seen := map[string]int{}
	rapid.Check(t, func(rt *rapid.T) {
		cases++
		p := newPropCase(ctx, rt, s, cases)
		p.seen = seen
		defer p.cleanup()
		rt.Repeat(p.actions())
	})
	t.Logf("outcomes over %d cases (shrinking included): %s", cases, fmtCounts(seen))
}

func fmtCounts(m map[string]int) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(&b, "%s=%d ", k, m[k])
	}
	return strings.TrimSpace(b.String())
}

// outcome names an answer for the coverage tally.
func outcome(in Input, out Output) []string {
	op := in.Op.String()
	switch {
	case out.Err != OK:
		return []string{op + ":" + string(out.Err)}
	case in.Op == OpAdmit:
		var r []string
		for _, it := range out.Items {
			switch {
			case it.Err != OK:
				r = append(r, "admit:"+string(it.Err))
			case it.Dedup:
				r = append(r, "admit:dedup")
			default:
				r = append(r, "admit:new-"+string(it.X.Status))
			}
		}
		return r
	case in.Op == OpClaim:
		return []string{fmt.Sprintf("claim:%d", len(out.Leases))}
	case in.Op == OpRescue:
		return []string{fmt.Sprintf("rescue:%d/%d/%d", out.Counts[0], out.Counts[1], out.Counts[2])}
	case in.Op == OpRecordStep || in.Op == OpSignal:
		return []string{op + flowOutcome(in, out)}
	case in.Op == OpPromote || in.Op == OpPrune || in.Op == OpWake:
		return []string{fmt.Sprintf("%s:%d", op, min(out.Counts[0], 2))}
	case out.X.Status != "":
		return []string{op + ":" + string(out.X.Status)}
	}
	return []string{op + ":ok"}
}

type propCase struct {
	ctx     context.Context
	rt      *rapid.T
	s       store.Store
	m       *State
	tenants []string
	now     int64
	steps   int
	ids     []string   // every id answered so far, deleted ones included
	leases  []LeaseOut // every lease handed out so far
	seen    map[string]int
}

func newPropCase(ctx context.Context, rt *rapid.T, s store.Store, n int) *propCase {
	specs := []store.CreateTenantParams{
		{Name: fmt.Sprintf("p%d-a", n), MaxInflight: 3, DedupTTL: time.Minute, Retention: 2 * time.Minute},
		{Name: fmt.Sprintf("p%d-b", n), MaxInflight: 5, DedupTTL: 10 * time.Minute, Retention: 30 * time.Second},
	}
	p := &propCase{ctx: ctx, rt: rt, s: s, m: NewState(specs...), now: base.UnixNano()}
	for _, sp := range specs {
		sp.Now = base
		if _, err := s.CreateTenant(ctx, &sp); err != nil {
			rt.Fatalf("CreateTenant %s: %v", sp.Name, err)
		}
		p.tenants = append(p.tenants, sp.Name)
	}
	return p
}

// cleanup force-deletes the case's executions so that the next case's
// Rescue, Promote, Prune and Wake see only their own.
func (p *propCase) cleanup() {
	if err := forceDeleteAll(p.ctx, p.s, p.tenants); err != nil {
		p.rt.Fatalf("cleanup: %v", err)
	}
}

// do runs one operation on the store and checks the answer with the model.
func (p *propCase) do(in Input) Output {
	p.steps++
	in.Now = p.now
	out := Do(p.ctx, p.s, in)
	p.rt.Logf("step %d: %s %s", p.steps, p.tenantOf(in), describe(in, out))
	if err := p.m.Apply(in, out); err != nil {
		p.rt.Fatalf("step %d: %s %s: %v", p.steps, p.tenantOf(in), in.Op, err)
	}
	for _, o := range outcome(in, out) {
		p.seen[o]++
	}
	for _, it := range out.Items {
		if it.X.ID != "" && !slices.Contains(p.ids, it.X.ID) {
			p.ids = append(p.ids, it.X.ID)
		}
	}
	p.leases = append(p.leases, out.Leases...)
	return out
}

func (p *propCase) tenantOf(in Input) string {
	if in.Tenant == "" {
		return "(any tenant)"
	}
	return in.Tenant
}

// Durations the clock and the operations draw from: exactly on and just
// past the leases (10s, 30s, 45s), dedup TTLs (1m, 10m) and retention (30s,
// 2m), so every strict or non-strict comparison meets its boundary.
var (
	advances = []time.Duration{time.Millisecond, time.Second, 5 * time.Second, 10 * time.Second,
		30 * time.Second, 45 * time.Second, time.Minute, 2 * time.Minute, 10 * time.Minute}
	leaseLens = []time.Duration{0, 10 * time.Second, 45 * time.Second}
	delays    = []time.Duration{0, 0, 5 * time.Second, 90 * time.Second}
	// Sleeps end before, at or after now, waits time out or not; steps and
	// signals carry null (""), numbers, strings and objects.
	sleeps   = []time.Duration{-time.Second, 0, time.Second, 10 * time.Second, 45 * time.Second, 2 * time.Minute}
	timeouts = []time.Duration{0, 0, time.Second, 10 * time.Second, 45 * time.Second}
	propData = []string{"", `1`, `2`, `"x"`, `{"n":3}`}
)

func (p *propCase) tenant(rt *rapid.T, label string) string {
	return rapid.SampledFrom(p.tenants).Draw(rt, label)
}

// scopeTenant is mostly the right tenant, sometimes any tenant ("") and
// sometimes the wrong one.
func (p *propCase) scopeTenant(rt *rapid.T, own string) string {
	switch rapid.IntRange(0, 12).Draw(rt, "tenantScope") {
	case 5:
		return ""
	case 7:
		for _, tn := range p.tenants {
			if tn != own {
				return tn
			}
		}
	}
	return own
}

func (p *propCase) sub(rt *rapid.T) Sub {
	s := Sub{
		Kind:        rapid.SampledFrom([]string{"echo", "echo", "sleep"}).Draw(rt, "kind"),
		Key:         rapid.SampledFrom([]string{"", "", "k1", "k2", "k3"}).Draw(rt, "key"),
		Payload:     rapid.SampledFrom([]string{"", `{"n":1}`}).Draw(rt, "payload"),
		Priority:    rapid.IntRange(0, 2).Draw(rt, "priority"),
		MaxAttempts: rapid.IntRange(0, 3).Draw(rt, "maxAttempts"),
		// Each key one limit: ck1 runs one at a time, ck2 two.
		CKey: rapid.SampledFrom([]string{"", "", "ck1", "ck1", "ck2"}).Draw(rt, "concurrencyKey"),
	}
	if s.CKey == "ck2" {
		s.CLimit = 2
	}
	// rapid favours the ends of a range, so rare cases test a middle value.
	if rapid.IntRange(0, 40).Draw(rt, "emptyKind") == 17 {
		s.Kind = ""
	}
	if d := rapid.SampledFrom(delays).Draw(rt, "runAfter"); d > 0 {
		s.RunAt = p.now + int64(d)
	}
	return s
}

// pickID draws an execution id: one seen before (of either tenant, maybe
// deleted) or an unknown one.
func (p *propCase) pickID(rt *rapid.T) (id, own string) {
	if len(p.ids) == 0 || rapid.IntRange(0, 20).Draw(rt, "unknownID") == 11 {
		return "00000000-0000-7000-8000-000000000000", p.tenants[0]
	}
	id = rapid.SampledFrom(p.ids).Draw(rt, "id")
	if x, ok := p.m.Execs[id]; ok {
		return id, x.Tenant
	}
	return id, p.tenants[0]
}

// pickLease draws a lease seen before (current or stale) or a forged one.
func (p *propCase) pickLease(rt *rapid.T) LeaseOut {
	if len(p.leases) == 0 {
		rt.Skip("no lease yet")
	}
	// Mostly a lease the model holds current, else any (most are stale).
	var current []LeaseOut
	for _, l := range p.leases {
		if x, ok := p.m.Execs[l.ID]; ok && x.Status == store.StatusRunning && x.Token == l.Token {
			current = append(current, l)
		}
	}
	from := p.leases
	if len(current) > 0 && rapid.IntRange(0, 3).Draw(rt, "staleLease") != 2 {
		from = current
	}
	l := rapid.SampledFrom(from).Draw(rt, "lease")
	if rapid.IntRange(0, 20).Draw(rt, "forgedToken") == 11 {
		l.Token = "forged-token"
	}
	return l
}

func (p *propCase) actions() map[string]func(*rapid.T) {
	fenced := func(op OpKind) func(rt *rapid.T) {
		return func(rt *rapid.T) {
			l := p.pickLease(rt)
			in := Input{Op: op, ID: l.ID, Token: l.Token, Tenant: p.scopeTenant(rt, l.Tenant)}
			switch op {
			case OpHeartbeat:
				in.Lease = int64(rapid.SampledFrom(leaseLens).Draw(rt, "lease"))
			case OpFail:
				in.Retry = rapid.Bool().Draw(rt, "retry")
				in.Delay = int64(rapid.SampledFrom(delays).Draw(rt, "retryDelay"))
			case OpRelease:
				in.Unstarted = rapid.IntRange(0, 3).Draw(rt, "unstarted") == 2
			case OpRecordStep:
				in.Name = rapid.SampledFrom(recordNames).Draw(rt, "step")
				in.Data = rapid.SampledFrom(propData).Draw(rt, "result")
				if rapid.Bool().Draw(rt, "startedAt") {
					in.StartedAt = p.now - int64(time.Second)
				}
			case OpSuspend:
				in.Name = rapid.SampledFrom(suspendNames).Draw(rt, "step")
				if rapid.Bool().Draw(rt, "wait") {
					in.Signal = rapid.SampledFrom(signalNames).Draw(rt, "signal")
					in.Timeout = int64(rapid.SampledFrom(timeouts).Draw(rt, "timeout"))
				} else {
					in.Until = p.now + int64(rapid.SampledFrom(sleeps).Draw(rt, "until"))
				}
			}
			p.do(in)
		}
	}
	byID := func(op OpKind) func(rt *rapid.T) {
		return func(rt *rapid.T) {
			id, own := p.pickID(rt)
			in := Input{Op: op, ID: id, Tenant: p.scopeTenant(rt, own)}
			if op == OpDelete {
				in.Force = rapid.Bool().Draw(rt, "force")
			}
			p.do(in)
		}
	}
	return map[string]func(*rapid.T){
		"admit": func(rt *rapid.T) {
			p.do(Input{Op: OpAdmit, Tenant: p.tenant(rt, "tenant"), Items: []Sub{p.sub(rt)}})
		},
		"admitBatch": func(rt *rapid.T) {
			n := rapid.IntRange(2, 4).Draw(rt, "items")
			in := Input{Op: OpAdmit, Tenant: p.tenant(rt, "tenant")}
			for range n {
				in.Items = append(in.Items, p.sub(rt))
			}
			p.do(in)
		},
		"claim": func(rt *rapid.T) {
			in := Input{Op: OpClaim, Client: 1,
				Tenant: rapid.SampledFrom(append([]string{"", "nobody"}, p.tenants...)).Draw(rt, "claimTenant"),
				Kinds:  rapid.SampledFrom([][]string{nil, nil, {"echo"}, {"sleep", "echo"}}).Draw(rt, "kinds"),
				Max:    rapid.IntRange(1, 3).Draw(rt, "max"),
				Lease:  int64(rapid.SampledFrom(leaseLens).Draw(rt, "lease")),
			}
			p.do(in)
		},
		"heartbeat": fenced(OpHeartbeat),
		"complete":  fenced(OpComplete),
		"fail":      fenced(OpFail),
		"release":   fenced(OpRelease),
		"record":    fenced(OpRecordStep),
		"suspend":   fenced(OpSuspend),
		"signal": func(rt *rapid.T) {
			id, own := p.pickID(rt)
			name := rapid.SampledFrom(signalNames).Draw(rt, "signal")
			// Mostly to a suspended execution, and mostly the signal it
			// waits for.
			if w := p.withStatus(store.StatusSuspended); len(w) > 0 && rapid.IntRange(0, 2).Draw(rt, "toWait") != 1 {
				x := p.m.Execs[rapid.SampledFrom(w).Draw(rt, "wait")]
				id, own = x.ID, x.Tenant
				if x.WaitingFor != "" && rapid.IntRange(0, 3).Draw(rt, "itsSignal") != 1 {
					name = x.WaitingFor
				}
			}
			p.do(Input{Op: OpSignal, ID: id, Tenant: p.scopeTenant(rt, own), Name: name,
				Data:    rapid.SampledFrom(propData).Draw(rt, "data"),
				IdemKey: rapid.SampledFrom([]string{"", "", "i1", "i2"}).Draw(rt, "idempotencyKey"),
			})
		},
		"flow": p.flow,
		"wake": func(rt *rapid.T) { p.do(Input{Op: OpWake}) },
		"retry": func(rt *rapid.T) {
			id, own := p.pickID(rt)
			if f := p.withStatus(store.StatusFailed); len(f) > 0 && rapid.Bool().Draw(rt, "failed") {
				id = rapid.SampledFrom(f).Draw(rt, "failedID")
				own = p.m.Execs[id].Tenant
			}
			p.do(Input{Op: OpRetry, ID: id, Tenant: p.scopeTenant(rt, own)})
		},
		"steps":  byID(OpSteps),
		"cancel": byID(OpCancel),
		"delete": byID(OpDelete),
		"get":    byID(OpGet),
		"getTenant": func(rt *rapid.T) {
			p.do(Input{Op: OpTenant, Tenant: rapid.SampledFrom(append([]string{"nobody"}, p.tenants...)).Draw(rt, "tenant")})
		},
		"rescue":  func(rt *rapid.T) { p.do(Input{Op: OpRescue}) },
		"promote": func(rt *rapid.T) { p.do(Input{Op: OpPromote}) },
		"prune":   func(rt *rapid.T) { p.do(Input{Op: OpPrune}) },
		"advance": func(rt *rapid.T) {
			d := rapid.SampledFrom(advances).Draw(rt, "advance")
			p.now += int64(d)
			rt.Logf("clock: %s", fmtNS(p.now))
		},
		"": p.compare,
	}
}

// compare checks everything the store shows against the model: one List
// of every execution (only this case's exist: earlier cases cleaned up),
// compared per tenant, and each tenant's quota counter.
func (p *propCase) compare(rt *rapid.T) {
	got := map[string]map[string]View{}
	for _, tn := range p.tenants {
		got[tn] = map[string]View{}
	}
	after := ""
	for {
		res, err := p.s.List(p.ctx, &store.ListParams{Limit: 500, After: after})
		if err != nil {
			rt.Fatalf("List: %v", err)
		}
		for _, x := range res.Items {
			if m, ok := got[x.Tenant]; ok {
				m[x.ID] = viewOf(x)
			}
		}
		if res.Next == "" {
			break
		}
		after = res.Next
	}
	for _, tn := range p.tenants {
		want := map[string]View{}
		for id, x := range p.m.Execs {
			if x.Tenant == tn {
				want[id] = x.View
			}
		}
		var diffs []string
		for _, id := range slices.Sorted(maps.Keys(want)) {
			g, ok := got[tn][id]
			if !ok {
				diffs = append(diffs, fmt.Sprintf("execution %s (%s) is missing", short(id), want[id].Status))
				continue
			}
			if err := wantView(g, want[id]); err != nil {
				diffs = append(diffs, err.Error())
			}
		}
		for _, id := range slices.Sorted(maps.Keys(got[tn])) {
			if _, ok := want[id]; !ok {
				diffs = append(diffs, fmt.Sprintf("execution %s (%s) should not exist", short(id), got[tn][id].Status))
			}
		}
		tnr, err := p.s.GetTenant(p.ctx, &store.GetTenantParams{Name: tn})
		if err != nil {
			rt.Fatalf("GetTenant %s: %v", tn, err)
		}
		mt := p.m.Tenants[tn]
		if n := p.m.countInflight(tn); mt.Inflight != n {
			diffs = append(diffs, fmt.Sprintf("model bug: inflight counter %d, %d in flight", mt.Inflight, n))
		}
		if tnr.Inflight != mt.Inflight {
			diffs = append(diffs, fmt.Sprintf("I3: inflight %d, want %d", tnr.Inflight, mt.Inflight))
		}
		diffs = append(diffs, p.compareJournals(rt, tn, want)...)
		if len(diffs) > 0 {
			rt.Fatalf("after step %d, tenant %s differs from the model:\n  %s\nmodel: %s",
				p.steps, tn, strings.Join(diffs, "\n  "), p.m)
		}
	}
}

// compareJournals reads the journal of each of the tenant's executions that
// can have one and compares it with the model's (I10: every record, in
// record order). One never claimed has none: only a lease records, and
// only a suspension (which a lease starts) takes a signal's record.
func (p *propCase) compareJournals(rt *rapid.T, tn string, want map[string]View) []string {
	var diffs []string
	for _, id := range slices.Sorted(maps.Keys(want)) {
		if _, ok := p.m.Flows[id]; !ok && want[id].Attempt == 0 {
			continue
		}
		got, err := p.s.Steps(p.ctx, &store.StepsParams{Tenant: tn, ID: id})
		if err != nil {
			rt.Fatalf("Steps %s: %v", short(id), err)
		}
		var g []StepOut
		for _, st := range got.Items {
			g = append(g, stepOf(st))
		}
		if w := p.m.Flows[id].Steps; !slices.Equal(g, w) {
			diffs = append(diffs, fmt.Sprintf("I10: journal of %s is %+v, want %+v", short(id), g, w))
		}
	}
	return diffs
}

// withStatus lists the case's executions in a status, in id order.
func (p *propCase) withStatus(st store.Status) []string {
	var ids []string
	for id, x := range p.m.Execs {
		if x.Status == st {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// flow runs a piece of a flow as a worker would: claim one execution,
// record a step or two under its lease, then sleep, wait, complete or fail.
func (p *propCase) flow(rt *rapid.T) {
	out := p.do(Input{Op: OpClaim, Client: 1, Tenant: p.tenant(rt, "tenant"), Max: 1})
	if len(out.Leases) == 0 {
		return
	}
	l := out.Leases[0]
	in := Input{ID: l.ID, Token: l.Token, Tenant: l.Tenant}
	for range rapid.IntRange(0, 2).Draw(rt, "records") {
		rec := in
		rec.Op = OpRecordStep
		rec.Name = rapid.SampledFrom(recordNames).Draw(rt, "step")
		rec.Data = rapid.SampledFrom(propData).Draw(rt, "result")
		p.do(rec)
	}
	// Signals that come while it runs are kept, each with data of its
	// own, so that the waits' records show the order they are consumed in.
	early := rapid.SampledFrom(signalNames).Draw(rt, "early signal")
	n := rapid.IntRange(0, 3).Draw(rt, "early signals")
	for range n {
		p.do(Input{Op: OpSignal, ID: l.ID, Tenant: l.Tenant, Name: early, Data: fmt.Sprintf(`{"seq":%d}`, p.steps)})
	}
	end := rapid.IntRange(0, 5).Draw(rt, "end")
	if n > 0 && end < 4 && rapid.Bool().Draw(rt, "waitForEarly") {
		end = 4
	}
	switch end {
	case 0:
		in.Op = OpComplete
	case 1:
		in.Op, in.Retry = OpFail, rapid.Bool().Draw(rt, "retry")
	case 2, 3:
		in.Op, in.Name = OpSuspend, rapid.SampledFrom(suspendNames).Draw(rt, "sleepStep")
		in.Until = p.now + int64(rapid.SampledFrom(sleeps).Draw(rt, "until"))
	default:
		in.Op, in.Name = OpSuspend, rapid.SampledFrom(suspendNames).Draw(rt, "waitStep")
		in.Signal = rapid.SampledFrom(signalNames).Draw(rt, "signal")
		if n > 0 && rapid.IntRange(0, 3).Draw(rt, "otherSignal") != 1 {
			in.Signal = early
		}
		in.Timeout = int64(rapid.SampledFrom(timeouts).Draw(rt, "timeout"))
	}
	p.do(in)
}
