package lincheck

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/latch-run/latch/store"
)

// base is the fake clock's origin, years ahead of the wall clock like the
// conformance suite's, so a backend that reads the wall clock instead of Now
// is caught.
var base = time.Date(2031, time.March, 14, 9, 0, 0, 0, time.UTC)

// clock stamps invocations and responses for porcupine: monotonic
// nanoseconds since the history began (time.Since reads Go's monotonic
// clock), bracketed by sequentially consistent atomic operations so that a
// stamp cannot be reordered with the store call it brackets — the fence
// porcupine recommends (anishathalye/porcupine#40).
type clock struct {
	start time.Time
	fence atomic.Int64
}

func newClock() *clock { return &clock{start: time.Now()} }

func (c *clock) stamp() int64 {
	c.fence.Add(1)
	ns := time.Since(c.start).Nanoseconds()
	c.fence.Add(1)
	return ns
}

// fakeNow is the Now passed to the store: base plus the real time elapsed,
// on a whole millisecond.
func (c *clock) fakeNow() int64 {
	return base.Add(time.Since(c.start).Truncate(time.Millisecond)).UnixNano()
}

// scope is one partition of a workload: a set of executions whose
// operations touch nothing outside it, so that porcupine checks each scope
// on its own (a history is linearizable iff each partition is).
type scope struct {
	name   string
	tenant string
	kind   string   // the kind of this scope's submissions
	kinds  []string // claim filter; nil = the whole tenant
	keys   []string // dedup keys, bound to kind
	// untimed: this scope's sleeps end at once and its waits have no
	// timeout even when the workload drives Wake (see eventWorkload).
	untimed bool
}

// workload describes the clients of one history. A workload with wake
// sets drives Wake, which acts on every tenant: it must be one partition,
// and its histories' executions are force deleted after each, so that the
// next history's Wake counts only its own; without it, sleeps end at once
// (until not in the future) and waits have no timeout, as nothing would
// wake them.
type workload struct {
	name    string
	tenants []store.CreateTenantParams
	scopes  []scope
	weights [numActions]int
	wake    bool
	// spawnItems bounds the children of one spawn (0: 3).
	spawnItems int
	// subs are the enabled subscriptions created before the history, by
	// tenant then name.
	subs []SubSpec
	// pubKeys is how many publish idempotency keys a tenant's clients
	// draw from (0: 24).
	pubKeys int
	// clients caps the clients of a history (0: Options.Clients): one
	// partition of many concurrent operations whose orders all leave
	// different states (journals, signal buffers) is a search porcupine
	// takes seconds over with 12 clients, milliseconds with 8.
	clients int
}

// The client actions a workload draws from.
const (
	actAdmitKeyed = iota
	actAdmitPlain
	actAdmitBatch
	actClaim
	actComplete
	actFail
	actCancel
	actDelete
	actForceDelete
	actGet
	actTenant
	actRecordStep
	actSleep
	actWait
	actSignal
	actWake
	actRetry
	actSteps
	actSpawn
	actFanIn
	actPublish
	actWaitEvent
	numActions
)

// Flow names the clients draw from: a few step names that records use,
// wait and sleep steps of their own (one shared with records, so that a
// suspension on a recorded step occurs), two signal names and two
// idempotency keys per execution.
var (
	recordNames  = []string{"a", "b", "c"}
	suspendNames = []string{"w1", "w2", "w3", "w4", "w5", "a"}
	signalNames  = []string{"go", "stop"}
	idemKeys     = []string{"i1", "i2"}
	spawnNames   = []string{"s1", "s2"}
	joinNames    = []string{"j1", "j2"}
	eventKeys    = []string{"", "k1", "k2"}
)

// tenantWorkload: several tenants, each one partition, with a small
// max_inflight so that quota refusals are frequent, three dedup keys shared
// by every client, and every lifecycle operation. It checks dedup, quota,
// claims, fencing, cancel and delete together, per tenant.
func tenantWorkload(h int) workload {
	w := workload{name: "tenants"}
	for i := range 3 {
		name := fmt.Sprintf("h%d-t%d", h, i)
		w.tenants = append(w.tenants, store.CreateTenantParams{Name: name, MaxInflight: 3 + i%2})
		w.scopes = append(w.scopes, scope{name: name, tenant: name, kind: "echo", keys: []string{"a", "b", "c"}})
	}
	w.weights = [numActions]int{
		actAdmitKeyed: 26, actAdmitPlain: 6, actAdmitBatch: 4, actClaim: 16, actComplete: 12, actFail: 10,
		actCancel: 6, actDelete: 4, actForceDelete: 6, actGet: 6, actTenant: 4,
		actRecordStep: 6, actSleep: 2, actWait: 2, actSignal: 4, actRetry: 2, actSteps: 2,
	}
	return w
}

// contentionWorkload: one tenant without a binding quota; every client
// hammers two kinds, each with two hot dedup keys. Claims filter by kind,
// so each kind is a partition and many clients race inside each: same-key
// submits, claims of the same attempt, complete/fail/cancel/force delete of
// the same execution.
func contentionWorkload(h int) workload {
	tenant := fmt.Sprintf("h%d-hot", h)
	w := workload{name: "contention", tenants: []store.CreateTenantParams{{Name: tenant, MaxInflight: 1 << 20}}}
	for _, k := range []string{"k0", "k1"} {
		w.scopes = append(w.scopes, scope{name: k, tenant: tenant, kind: k, kinds: []string{k},
			keys: []string{k + "-a", k + "-b"}})
	}
	w.weights = [numActions]int{
		actAdmitKeyed: 30, actAdmitPlain: 3, actAdmitBatch: 3, actClaim: 18, actComplete: 12, actFail: 10,
		actCancel: 6, actDelete: 3, actForceDelete: 8, actGet: 7,
		actRecordStep: 6, actSleep: 3, actWait: 3, actSignal: 5, actRetry: 2, actSteps: 2,
	}
	return w
}

// flowWorkload: one tenant running flows, whose quota binds now and then
// (suspended executions hold it), every client on one kind. Clients record
// steps under current and stale tokens, sleep (until past or future),
// wait (with and without timeout), signal (some with idempotency keys),
// wake at the advancing clock, retry failed executions and read journals,
// among claims, completes, failures, cancels and deletes. Wake acts on
// every tenant, so the workload is one partition.
func flowWorkload(h int) workload {
	tenant := fmt.Sprintf("h%d-flow", h)
	w := workload{name: "flows", wake: true, clients: 8, tenants: []store.CreateTenantParams{{Name: tenant, MaxInflight: 6}}}
	w.scopes = []scope{{name: "flow", tenant: tenant, kind: "flow", keys: []string{"f-a", "f-b"}}}
	w.weights = [numActions]int{
		actAdmitKeyed: 8, actAdmitPlain: 8, actClaim: 16, actComplete: 5, actFail: 6,
		actCancel: 3, actDelete: 2, actForceDelete: 2, actGet: 3, actTenant: 2,
		actRecordStep: 12, actSleep: 6, actWait: 8, actSignal: 12, actWake: 8, actRetry: 4, actSteps: 4,
	}
	return w
}

// childrenWorkload: one tenant whose flows spawn children (I13), every
// client on one kind, parents and children alike (a child may spawn in
// turn). Clients spawn under two step names, under current and stale
// tokens, concurrently with the same lease (a repeat must admit nothing),
// some children with on_parent_end abandon; wait for some or all of a
// spawn's children (fan-in), sometimes on a spawn not made or for more
// children than it has; and end children — complete, fail, cancel, force
// delete — while their parents spawn, suspend, get cancelled, complete or
// fail. A quota of 12 makes spawns refused whole now and then. The children
// and their parents relate across the tenant, so it is one partition.
func childrenWorkload(h int) workload {
	tenant := fmt.Sprintf("h%d-kids", h)
	w := workload{name: "children", clients: 8, tenants: []store.CreateTenantParams{{Name: tenant, MaxInflight: 12}}}
	w.scopes = []scope{{name: "kids", tenant: tenant, kind: "flow", keys: []string{"k-a"}}}
	w.weights = [numActions]int{
		actAdmitPlain: 10, actClaim: 16, actComplete: 12, actFail: 5,
		actCancel: 5, actDelete: 2, actForceDelete: 3, actGet: 2, actTenant: 2,
		actRecordStep: 1, actSteps: 3, actSpawn: 14, actFanIn: 12,
	}
	return w
}

// eventWorkload: two tenants publishing events (I14) of two names, with
// and without a correlation key, about half with an idempotency key drawn
// from a small set, so that a client's retries and other clients' publishes
// of the same key meet; the first tenant has two subscriptions on the
// first name, the second one, so every publish of it starts executions.
// Their executions (admitted or started by a subscription) wait for events
// with and without a key, since the history's start, a little before now
// or now, some with a timeout that Wake ends, and are cancelled, claimed,
// completed and failed among the publishes. Wake acts on every tenant, so
// both tenants are one partition: the model sees that a publish resumes and
// starts nothing of the other tenant. Only the first tenant's sleeps and
// waits end by Wake: a backend may wake each tenant in a step of its own
// (store.Store.Wake; the Redis tenant router does), so a Wake across two
// tenants with due work has no single point to linearize at.
func eventWorkload(h int) workload {
	a, b := fmt.Sprintf("h%d-eva", h), fmt.Sprintf("h%d-evb", h)
	w := workload{name: "events", wake: true, clients: 6, tenants: []store.CreateTenantParams{
		{Name: a, MaxInflight: 7}, {Name: b, MaxInflight: 5}}}
	w.scopes = []scope{{name: "events", tenant: a, kind: "ev", keys: []string{"e-a"}},
		{name: "events", tenant: b, kind: "ev", keys: []string{"e-a"}, untimed: true}}
	w.subs = []SubSpec{{Tenant: a, Name: "s1", Event: eventNames[0], Kind: "ev"}, {Tenant: a, Name: "s2", Event: eventNames[0], Kind: "ev"},
		{Tenant: b, Name: "s1", Event: eventNames[0], Kind: "ev"}}
	w.weights = [numActions]int{
		actAdmitKeyed: 2, actAdmitPlain: 6, actClaim: 16, actComplete: 5, actFail: 3,
		actCancel: 5, actDelete: 1, actForceDelete: 2, actGet: 3, actTenant: 2,
		actRecordStep: 3, actSleep: 1, actWake: 8, actRetry: 1, actSteps: 4,
		actPublish: 14, actWaitEvent: 14,
	}
	return w
}

// eventNames: the subscriptions are on the first; most publishes and waits
// use it.
var eventNames = []string{"order", "ship"}

func eventName(r *rand.Rand) string {
	if r.IntN(4) == 0 {
		return eventNames[1]
	}
	return eventNames[0]
}

// pool is what the clients of one scope have learned from the store's
// answers: recent execution ids and leases. Operations on ids and tokens
// always start after the answer that revealed them.
type pool struct {
	mu     sync.Mutex
	ids    []string
	leases []LeaseOut
	// spawned: the spawn step a lease (by token) has made, so that a
	// fan-in wait under that lease mostly waits on a spawn it made.
	spawned map[string]string
	// every id the scope's answers revealed, in order, for the final reads
	every []string
}

const poolIDs, poolLeases = 10, 8

func (p *pool) addID(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !slices.Contains(p.every, id) {
		p.every = append(p.every, id)
	}
	p.ids = append(p.ids, id)
	if len(p.ids) > poolIDs {
		p.ids = p.ids[1:]
	}
}

func (p *pool) addLease(l LeaseOut) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.leases = append(p.leases, l)
	if len(p.leases) > poolLeases {
		p.leases = p.leases[1:]
	}
}

func (p *pool) pickID(r *rand.Rand) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.ids) == 0 {
		return "", false
	}
	return p.ids[r.IntN(len(p.ids))], true
}

// signalName is mostly the first name: signals of one name pile up, so
// that waits show the order they consume them in; the other name's are
// kept meanwhile.
func signalName(r *rand.Rand) string {
	if r.IntN(4) == 0 {
		return signalNames[1]
	}
	return signalNames[0]
}

// spawnName is mostly the first name, so that waits find the spawn made.
func spawnName(r *rand.Rand) string {
	if r.IntN(4) == 0 {
		return spawnNames[1]
	}
	return spawnNames[0]
}

// peekLease picks a lease and keeps it: a worker records several steps
// under one lease.
func (p *pool) peekLease(r *rand.Rand) (LeaseOut, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.leases) == 0 {
		return LeaseOut{}, false
	}
	return p.leases[r.IntN(len(p.leases))], true
}

// takeSpawner is takeLease preferring a lease that spawned: it returns
// the spawn step that lease made too ("" for none).
func (p *pool) takeSpawner(r *rand.Rand) (LeaseOut, string, bool) {
	p.mu.Lock()
	var spawners []int
	for i, l := range p.leases {
		if p.spawned[l.Token] != "" {
			spawners = append(spawners, i)
		}
	}
	if len(spawners) == 0 || r.IntN(5) == 0 {
		p.mu.Unlock()
		l, ok := p.takeLease(r)
		return l, "", ok
	}
	defer p.mu.Unlock()
	i := spawners[r.IntN(len(spawners))]
	l := p.leases[i]
	p.leases = append(p.leases[:i], p.leases[i+1:]...)
	return l, p.spawned[l.Token], true
}

func (p *pool) addSpawn(token, step string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.spawned == nil {
		p.spawned = map[string]string{}
	}
	p.spawned[token] = step
}

// takeLease picks a lease and usually forgets it (a worker finishes an
// attempt once); the rest stay and are used again with a now stale token.
func (p *pool) takeLease(r *rand.Rand) (LeaseOut, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.leases) == 0 {
		return LeaseOut{}, false
	}
	i := r.IntN(len(p.leases))
	l := p.leases[i]
	if r.IntN(5) != 0 {
		p.leases = append(p.leases[:i], p.leases[i+1:]...)
	}
	return l, true
}

// next draws a client's next operation in sc.
func (w *workload) next(r *rand.Rand, sc *scope, p *pool, clk *clock) Input {
	total := 0
	for _, n := range w.weights {
		total += n
	}
	in := Input{Scope: sc.name, Tenant: sc.tenant}
	pick := r.IntN(total)
	act := 0
	for ; act < numActions; act++ {
		if pick < w.weights[act] {
			break
		}
		pick -= w.weights[act]
	}
	sub := func(keyed bool) Sub {
		s := Sub{Kind: sc.kind, Priority: r.IntN(2), MaxAttempts: 2}
		if keyed {
			s.Key = sc.keys[r.IntN(len(sc.keys))]
			s.Payload = `{"key":"` + s.Key + `"}`
			if r.IntN(15) == 0 {
				s.Payload = `{"key":"other"}` // reused with another payload
			}
			s.Priority = 0 // a key's submissions agree on everything else
		}
		return s
	}
	switch act {
	case actClaim:
		in.Op, in.Kinds, in.Max = OpClaim, sc.kinds, 1+r.IntN(2)
	case actComplete, actFail:
		l, ok := p.takeLease(r)
		if !ok {
			in.Op, in.Kinds, in.Max = OpClaim, sc.kinds, 1
			break
		}
		in.Op, in.ID, in.Token = OpComplete, l.ID, l.Token
		if act == actFail {
			in.Op, in.Retry = OpFail, r.IntN(3) != 0
			if r.IntN(3) == 0 {
				in.Delay = int64(2 * time.Millisecond)
			}
		}
	case actCancel, actDelete, actForceDelete, actGet:
		id, ok := p.pickID(r)
		if !ok {
			in.Op, in.Items = OpAdmit, []Sub{sub(true)}
			break
		}
		in.ID = id
		switch act {
		case actCancel:
			in.Op = OpCancel
		case actGet:
			in.Op = OpGet
		default:
			in.Op, in.Force = OpDelete, act == actForceDelete
		}
	case actTenant:
		in.Op = OpTenant
	case actPublish:
		in.Op, in.Name, in.EvKey = OpPublish, eventName(r), eventKeys[r.IntN(len(eventKeys))]
		in.Data = fmt.Sprintf(`{"e":%d}`, r.IntN(1_000_000))
		if r.IntN(2) == 0 {
			// A client's retry of a publish repeats its data; another
			// client's publish of the key may not (the first answer wins).
			k := r.IntN(cmp.Or(w.pubKeys, 24))
			in.IdemKey, in.Data = fmt.Sprintf("p%d", k), fmt.Sprintf(`{"e":%d}`, k)
		}
	case actRecordStep, actSleep, actWait, actWaitEvent:
		take := p.takeLease
		if act == actRecordStep {
			take = p.peekLease
		}
		l, ok := take(r)
		if !ok {
			in.Op, in.Kinds, in.Max = OpClaim, sc.kinds, 1
			break
		}
		in.ID, in.Token = l.ID, l.Token
		switch act {
		case actRecordStep:
			in.Op, in.Name = OpRecordStep, recordNames[r.IntN(len(recordNames))]
			in.Data = fmt.Sprintf(`{"r":%d}`, r.IntN(1_000_000))
		case actSleep:
			in.Op, in.Name = OpSuspend, suspendNames[r.IntN(len(suspendNames))]
		case actWaitEvent:
			in.Op, in.Name, in.Event = OpSuspend, suspendNames[r.IntN(len(suspendNames))], eventName(r)
			if r.IntN(3) == 0 {
				in.EvKey = eventKeys[1]
			}
		default:
			in.Op, in.Name = OpSuspend, suspendNames[r.IntN(len(suspendNames))]
			in.Signal = signalName(r)
		}
	case actSignal, actRetry, actSteps:
		id, ok := p.pickID(r)
		if !ok {
			in.Op, in.Items = OpAdmit, []Sub{sub(false)}
			break
		}
		in.ID = id
		switch act {
		case actSignal:
			in.Op, in.Name = OpSignal, signalName(r)
			in.Data = fmt.Sprintf(`{"s":%d}`, r.IntN(1_000_000)) // distinct: the journal shows which one a wait consumed
			if r.IntN(3) == 0 {
				in.IdemKey = idemKeys[r.IntN(len(idemKeys))]
			}
		case actRetry:
			in.Op = OpRetry
		default:
			in.Op = OpSteps
		}
	case actWake:
		in.Op = OpWake
	case actSpawn, actFanIn:
		// A worker spawns, then waits, under one lease.
		l, ok := p.peekLease(r)
		made := ""
		if act == actFanIn {
			l, made, ok = p.takeSpawner(r)
		}
		if !ok {
			in.Op, in.Kinds, in.Max = OpClaim, sc.kinds, 1
			break
		}
		in.ID, in.Token = l.ID, l.Token
		if act == actSpawn {
			in.Op, in.Name, in.Abandon = OpSpawn, spawnName(r), r.IntN(4) == 0
			for range 1 + r.IntN(cmp.Or(w.spawnItems, 3)) {
				in.Items = append(in.Items, Sub{Kind: sc.kind, Priority: r.IntN(2), MaxAttempts: 2})
			}
			break
		}
		in.Op, in.Name = OpSuspend, joinNames[r.IntN(len(joinNames))]
		// Mostly all of the spawn the lease made; now and then a count,
		// one more than the spawn has (refused) or a spawn not made
		// (refused).
		in.Children, in.Count = spawnName(r), max(0, r.IntN(5)-2)
		if made != "" && r.IntN(6) != 0 {
			in.Children = made
		}
	case actAdmitBatch:
		in.Op, in.Items = OpAdmit, []Sub{sub(r.IntN(2) == 0), sub(true)}
	default:
		in.Op, in.Items = OpAdmit, []Sub{sub(act == actAdmitKeyed)}
	}
	in.Now = clk.fakeNow()
	timed := w.wake && !sc.untimed
	switch {
	case in.Op == OpRecordStep && r.IntN(2) == 0:
		in.StartedAt = in.Now - int64(time.Millisecond)
	case in.Op == OpSuspend && in.Children != "":
	case in.Op == OpSuspend && in.Event != "":
		// Since the history's start (every retained event), a little
		// before now, or now.
		in.Since = []int64{base.UnixNano(), in.Now - int64(5*time.Millisecond), in.Now}[r.IntN(3)]
		if timed && r.IntN(2) == 0 {
			in.Timeout = int64(time.Duration(2+r.IntN(8)) * time.Millisecond)
		}
	case in.Op == OpSuspend && in.Signal == "":
		// A sleep until the past, now or (when Wake runs) a little later.
		ahead := []time.Duration{-time.Millisecond, 0}
		if timed {
			ahead = append(ahead, 2*time.Millisecond, 5*time.Millisecond, 10*time.Millisecond)
		}
		in.Until = in.Now + int64(ahead[r.IntN(len(ahead))])
	case in.Op == OpSuspend && timed && r.IntN(2) == 0:
		in.Timeout = int64(time.Duration(2+r.IntN(8)) * time.Millisecond)
	}
	if in.Op == OpAdmit {
		for i := range in.Items {
			if r.IntN(8) == 0 && in.Items[i].Key == "" {
				in.Items[i].RunAt = in.Now + int64(3*time.Millisecond) // scheduled
			}
		}
	}
	return in
}

// learn feeds an answer's ids and leases back to the scope's pool.
func learn(p *pool, in Input, out Output) {
	if in.Op == OpSpawn && out.Err == OK {
		p.addSpawn(in.Token, in.Name)
	}
	for _, it := range out.Items {
		if it.X.ID != "" {
			p.addID(it.X.ID)
		}
	}
	for _, l := range out.Leases {
		p.addLease(l)
	}
	for _, c := range out.Spawned {
		p.addID(c.ID)
	}
	for _, st := range out.Published.Starts {
		if st.ID != "" {
			p.addID(st.ID)
		}
	}
}

// record runs clients goroutines against servers (client c through
// servers[c%len(servers)]) until ops operations have been invoked and
// returns the history. Tenants must exist already. A client picks a random
// scope for every operation.
func record(ctx context.Context, servers []store.Store, w *workload, clients, ops int, seed uint64) []porcupine.Operation {
	clk := newClock()
	pools := make([]pool, len(w.scopes))
	var issued atomic.Int64
	hist := make([][]porcupine.Operation, clients)
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for c := range clients {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, uint64(c)))
			s := servers[c%len(servers)]
			<-gate
			var follow *Input // the fan-in wait that follows a spawn
			i := 0
			for issued.Add(1) <= int64(ops) && ctx.Err() == nil {
				var in Input
				if follow != nil {
					in, follow = *follow, nil
					in.Now = clk.fakeNow()
				} else {
					i = r.IntN(len(w.scopes))
					in = w.next(r, &w.scopes[i], &pools[i], clk)
				}
				in.Client = c
				call := clk.stamp()
				out := Do(ctx, s, in)
				ret := clk.stamp()
				learn(&pools[i], in, out)
				if in.Op == OpSpawn && out.Err == OK && r.IntN(3) != 0 {
					// As latch.Map does: spawn, then wait on it at once
					// under the same lease, for all or the first.
					follow = &Input{Op: OpSuspend, Scope: in.Scope, Tenant: in.Tenant, ID: in.ID, Token: in.Token,
						Name: joinNames[r.IntN(len(joinNames))], Children: in.Name, Count: r.IntN(2)}
				}
				hist[c] = append(hist[c], porcupine.Operation{ClientId: c, Input: in, Call: call, Output: out, Return: ret})
			}
		})
	}
	close(gate)
	wg.Wait()
	// The final reads: once the clients have stopped, one more client
	// reads every execution the history revealed, so that a wrong state no
	// later operation happened to look at (a wait that never ended, a
	// cancel that did not cascade) is seen all the same.
	final := clients
	for i, sc := range w.scopes {
		for _, id := range pools[i].every {
			if ctx.Err() != nil {
				break
			}
			in := Input{Op: OpGet, Scope: sc.name, Tenant: sc.tenant, ID: id, Client: final}
			call := clk.stamp()
			out := Do(ctx, servers[0], in)
			ret := clk.stamp()
			hist = append(hist, []porcupine.Operation{{ClientId: final, Input: in, Call: call, Output: out, Return: ret}})
		}
	}
	var all []porcupine.Operation
	for _, h := range hist {
		all = append(all, h...)
	}
	return all
}

// porcupineModel wraps State for porcupine. init returns the state of the
// history's tenants; Step is pure (it applies to a clone); partitions are
// the workload's scopes.
func porcupineModel(init func() *State) porcupine.Model {
	return porcupine.Model{
		Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
			idx := map[string]int{}
			var parts [][]porcupine.Operation
			for _, op := range history {
				sc := op.Input.(Input).Scope
				i, ok := idx[sc]
				if !ok {
					i = len(parts)
					idx[sc] = i
					parts = append(parts, nil)
				}
				parts[i] = append(parts[i], op)
			}
			return parts
		},
		Init: func() any {
			st := init()
			st.Concurrent = true // claims may pass by what concurrent operations hold
			return st
		},
		Step: func(state, input, output any) (bool, any) {
			next := state.(*State).Clone()
			if err := next.Apply(input.(Input), output.(Output)); err != nil {
				return false, state
			}
			return true, next
		},
		Equal: func(a, b any) bool { return a.(*State).Equal(b.(*State)) },
		Hash:  func(s any) uint64 { return s.(*State).Hash() },
		DescribeOperation: func(input, output any) string {
			return describe(input.(Input), output.(Output))
		},
		DescribeState: func(s any) string { return s.(*State).String() },
	}
}

// describe renders one operation for the visualization.
func describe(in Input, out Output) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s", in.Op)
	switch in.Op {
	case OpAdmit:
		for _, it := range in.Items {
			k := it.Key
			if k == "" {
				k = "-"
			}
			sched := ""
			if it.RunAt != 0 {
				sched = " sched"
			}
			ck := ""
			if it.CKey != "" {
				ck = fmt.Sprintf(" ck=%s/%d", it.CKey, it.CLimit)
			}
			fmt.Fprintf(&b, " [%s key=%s p%d%s%s]", it.Kind, k, it.Priority, sched, ck)
		}
		b.WriteString(" →")
		for _, it := range out.Items {
			switch {
			case it.Err != OK:
				fmt.Fprintf(&b, " %s", it.Err)
			case it.Dedup:
				fmt.Fprintf(&b, " dedup %s(%s)", short(it.X.ID), it.X.Status)
			default:
				fmt.Fprintf(&b, " new %s", short(it.X.ID))
			}
		}
	case OpClaim:
		fmt.Fprintf(&b, " max %d →", in.Max)
		for _, l := range out.Leases {
			fmt.Fprintf(&b, " %s#%d tok %s", short(l.ID), l.Attempt, short(l.Token))
		}
		if len(out.Leases) == 0 {
			b.WriteString(" none")
		}
	case OpTenant:
		fmt.Fprintf(&b, " → inflight %d/%d", out.Inflight, out.MaxInflight)
	case OpSpawn:
		fmt.Fprintf(&b, " %s tok %s step %s %d children abandon=%t →", short(in.ID), short(in.Token), in.Name, len(in.Items), in.Abandon)
		if out.Err == OK {
			fmt.Fprintf(&b, " recorded=%t", out.Recorded)
			for _, c := range out.Spawned {
				fmt.Fprintf(&b, " %s(%s)", short(c.ID), c.Status)
			}
		}
	case OpWake:
		fmt.Fprintf(&b, " → %d", out.Counts[0])
	case OpPublish:
		fmt.Fprintf(&b, " %s key %q data %s", in.Name, in.EvKey, in.Data)
		if in.IdemKey != "" {
			fmt.Fprintf(&b, " idem %s", in.IdemKey)
		}
		fmt.Fprintf(&b, " → %s", out.Published)
	case OpRecordStep, OpSignal, OpSteps:
		fmt.Fprintf(&b, " %s", short(in.ID))
		if in.Token != "" {
			fmt.Fprintf(&b, " tok %s", short(in.Token))
		}
		fmt.Fprintf(&b, " %s %s", in.Name, in.Data)
		if in.IdemKey != "" {
			fmt.Fprintf(&b, " key %s", in.IdemKey)
		}
		b.WriteString(" →")
		switch {
		case out.Err != OK:
		case in.Op == OpRecordStep:
			fmt.Fprintf(&b, " %s=%s recorded=%t", out.Step.Name, out.Step.Result, out.Recorded)
		case in.Op == OpSignal:
			fmt.Fprintf(&b, " delivered=%t", out.Delivered)
		default:
			for _, st := range out.Steps {
				fmt.Fprintf(&b, " %s=%s", st.Name, st.Result)
			}
		}
	default:
		fmt.Fprintf(&b, " %s", short(in.ID))
		if in.Token != "" {
			fmt.Fprintf(&b, " tok %s", short(in.Token))
		}
		if in.Force {
			b.WriteString(" force")
		}
		if in.Op == OpFail {
			fmt.Fprintf(&b, " retry=%t", in.Retry)
		}
		if in.Op == OpSuspend {
			fmt.Fprintf(&b, " step %s", in.Name)
			switch {
			case in.Children != "":
				fmt.Fprintf(&b, " fan-in %s count %d", in.Children, in.Count)
			case in.Event != "":
				fmt.Fprintf(&b, " wait event %s key %q since now%+v timeout %v", in.Event, in.EvKey,
					time.Duration(in.Since-in.Now), time.Duration(in.Timeout))
			case in.Signal != "":
				fmt.Fprintf(&b, " wait %s timeout %v", in.Signal, time.Duration(in.Timeout))
			default:
				fmt.Fprintf(&b, " until now%+v", time.Duration(in.Until-in.Now))
			}
		}
		b.WriteString(" →")
		if out.X.ID != "" {
			fmt.Fprintf(&b, " %s#%d", out.X.Status, out.X.Attempt)
			if out.X.CancelRequested {
				b.WriteString(" cancel-requested")
			}
		}
	}
	if out.Err != OK {
		fmt.Fprintf(&b, " %s", out.Err)
	}
	return b.String()
}

// verdict is the outcome of checking one history.
type verdict struct {
	result porcupine.CheckResult
	ops    int
	took   time.Duration
	html   string // the visualization of an illegal history
	why    string // the model's objections, for the log
	tally  string // what the history exercised
}

// check decides whether hist is linearizable with respect to the model.
// An illegal history is written out as porcupine's HTML visualization under
// dir.
func check(model porcupine.Model, hist []porcupine.Operation, timeout time.Duration, dir, name string) verdict {
	start := time.Now()
	v := verdict{ops: len(hist), tally: tally(hist)}
	v.result = porcupine.CheckOperationsTimeout(model, hist, timeout)
	if v.result == porcupine.Illegal {
		res, info := porcupine.CheckOperationsVerbose(model, hist, timeout)
		if res == porcupine.Illegal {
			v.why = explain(model, hist, info)
			path := filepath.Join(dir, fileName(name)+".html")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				v.html = "(not written: " + err.Error() + ")"
			} else if err := porcupine.VisualizePath(model, info, path); err != nil {
				v.html = "(not written: " + err.Error() + ")"
			} else {
				v.html = path
			}
		}
	}
	v.took = time.Since(start)
	return v
}

// explain replays the longest partial linearization of each illegal
// partition and asks the model about every operation that could have come
// next, so the log says what the model objected to.
func explain(model porcupine.Model, hist []porcupine.Operation, info porcupine.LinearizationInfo) string {
	var b strings.Builder
	parts := model.Partition(hist)
	lins := info.PartialLinearizations()
	for p, part := range parts {
		if p >= len(lins) {
			break
		}
		var longest []int
		for _, lin := range lins[p] {
			if len(lin) > len(longest) {
				longest = lin
			}
		}
		if len(longest) == len(part) {
			continue
		}
		st := model.Init().(*State)
		done := make([]bool, len(part))
		for _, i := range longest {
			_ = st.Apply(part[i].Input.(Input), part[i].Output.(Output))
			done[i] = true
		}
		// The operations that may linearize next: invoked before the
		// earliest response among those left.
		minRet := int64(1<<63 - 1)
		for i, op := range part {
			if !done[i] {
				minRet = min(minRet, op.Return)
			}
		}
		fmt.Fprintf(&b, "partition %s: only %d of %d operations linearize; state after them: %s\n",
			part[0].Input.(Input).Scope, len(longest), len(part), st)
		for i, op := range part {
			if done[i] || op.Call > minRet {
				continue
			}
			in, out := op.Input.(Input), op.Output.(Output)
			if err := st.Clone().Apply(in, out); err != nil {
				fmt.Fprintf(&b, "  next cannot be client %d %s: %v\n", op.ClientId, describe(in, out), err)
			}
		}
	}
	return b.String()
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func fileName(s string) string { return strings.Trim(unsafeName.ReplaceAllString(s, "_"), "_") }

// tally counts the outcomes of a history by operation, so the log shows
// what a run exercised (quota refusals, dedup answers, lost leases, ...).
func tally(hist []porcupine.Operation) string {
	counts := map[string]int{}
	overlap := 0
	for i, op := range hist {
		in, out := op.Input.(Input), op.Output.(Output)
		key := in.Op.String()
		switch {
		case out.Err != OK:
			key += ":" + string(out.Err)
		case in.Op == OpAdmit:
			for _, it := range out.Items {
				switch {
				case it.Err != OK:
					counts["admit:"+string(it.Err)]++
				case it.Dedup:
					counts["admit:dedup"]++
				default:
					counts["admit:new"]++
				}
			}
			continue
		case in.Op == OpClaim:
			key += fmt.Sprintf(":%d", len(out.Leases))
			for _, l := range out.Leases {
				if strings.Contains(l.Steps, `"timed_out":false`) {
					counts["claim:after-fan-in"]++ // a parent resumed by its fan-in wait's end
				}
			}
		case in.Op == OpWake:
			key += fmt.Sprintf(":%d", min(out.Counts[0], 2))
		case in.Op == OpRecordStep || in.Op == OpSignal:
			key += flowOutcome(in, out)
		case in.Op == OpSpawn && out.Recorded:
			key += ":new"
		case in.Op == OpSpawn:
			key += ":repeat"
		case in.Op == OpSuspend && in.Children != "":
			key = "fan-in:" + string(out.X.Status)
		case in.Op == OpPublish:
			key += publishOutcome(out.Published)
		case out.X.Status != "":
			key += ":" + string(out.X.Status)
		}
		counts[key]++
		for _, o := range hist[i+1:] {
			if o.ClientId != op.ClientId && o.Call < op.Return && op.Call < o.Return {
				overlap++
			}
		}
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		fmt.Fprintf(&b, "%s=%d ", k, counts[k])
	}
	fmt.Fprintf(&b, "| overlapping pairs=%d", overlap)
	return b.String()
}

// flowOutcome names the answer of a record or a signal for the tallies.
func flowOutcome(in Input, out Output) string {
	switch {
	case in.Op == OpRecordStep && out.Recorded:
		return ":new"
	case in.Op == OpRecordStep:
		return ":first-wins"
	case out.Delivered:
		return ":delivered"
	}
	return ":kept"
}

// publishOutcome names the answer of a publish for the tallies.
func publishOutcome(p PublishOut) string {
	switch {
	case p.Replayed:
		return ":replayed"
	case p.Resumed > 0:
		return ":resumed"
	}
	return ":new"
}
