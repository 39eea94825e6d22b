package lincheck

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/latch-run/latch/store"
)

// NewStore returns a fresh, empty store that no other test uses and
// arranges (with t.Cleanup) for it to be closed — the same contract as
// storetest.NewStore.
type NewStore = func(t *testing.T) store.Store

// NewServers returns n stores opened on one fresh, empty database that no
// other test uses — what n latch servers pointed at the same database would
// each open — and arranges (with t.Cleanup) for them to be closed. Each is a
// separate handle with its own connections and its own in-process state
// (grouping of concurrent operations, wake-ups), so their operations meet
// only in the database.
type NewServers = func(t *testing.T, n int) []store.Store

// Options size a linearizability run. The zero value of a field takes its
// default, which environment variables override (see doc.go).
type Options struct {
	Ops        int           // operations per workload, all histories together
	HistoryOps int           // operations per history
	Clients    int           // concurrent clients per history
	Servers    int           // stores on one database; client c goes through server c mod Servers
	Timeout    time.Duration // porcupine's budget per history
	OutDir     string        // where illegal histories are visualized
	Seed       uint64        // seeds the clients' choices (the interleaving is the scheduler's)
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func (o Options) withDefaults(t *testing.T) Options {
	if o.HistoryOps == 0 {
		o.HistoryOps = envInt("LATCH_LINCHECK_HISTORY_OPS", 300)
	}
	if o.Ops == 0 {
		o.Ops = envInt("LATCH_LINCHECK_OPS", 3*o.HistoryOps)
	}
	if o.Clients == 0 {
		o.Clients = envInt("LATCH_LINCHECK_CLIENTS", 12)
	}
	if o.Servers == 0 {
		o.Servers = envInt("LATCH_LINCHECK_SERVERS", 3)
	}
	if o.Timeout == 0 {
		o.Timeout = time.Duration(envInt("LATCH_LINCHECK_TIMEOUT_SECONDS", 60)) * time.Second
	}
	if o.OutDir == "" {
		o.OutDir = os.Getenv("LATCH_LINCHECK_OUT")
	}
	if o.OutDir == "" {
		o.OutDir = t.TempDir()
	}
	if o.Seed == 0 {
		if v, err := strconv.ParseUint(os.Getenv("LATCH_LINCHECK_SEED"), 10, 64); err == nil && v != 0 {
			o.Seed = v
		} else {
			o.Seed = uint64(time.Now().UnixNano())
		}
	}
	return o
}

// Check records concurrent histories of the store's core operations against
// fresh databases from newServers — each opened by Options.Servers stores,
// the clients spread over them — and checks each with porcupine against the
// sequential model of the contract (State). It runs four workloads:
//
//	Tenants     admit (keyed, plain, batches), get, cancel, delete, force
//	            delete, claim, complete, fail (with and without retry) and
//	            the tenant's quota counter, over three tenants with
//	            max_inflight 3 or 4; one partition per tenant.
//	Contention  the same operations without a binding quota, many clients
//	            on two kinds with two hot dedup keys each; claims filter by
//	            kind, one partition per kind.
//	Flows       the same and the flow operations with Wake, 8 clients on
//	            one tenant's flows: one partition, as Wake acts on all.
//	Children    spawns, fan-in waits, and children's and parents' ends
//	            (I13), 8 clients on one tenant: one partition, as a
//	            parent and its children relate across it.
//	Events      publishes (with and without idempotency and correlation
//	            keys) into two tenants with subscriptions, waits for events
//	            (key, since, timeout) ended by publishes, by retained
//	            events and by Wake, cancels of waiters; 6 clients, one
//	            partition (I14).
//
// Tenants and Contention record steps, sleep (until now or before), wait
// (without timeout), signal, retry and read journals too.
//
// An illegal history fails the test and is written out as porcupine's HTML
// visualization; the log names the file and what the model refused.
func Check(t *testing.T, newServers NewServers) {
	CheckWith(t, newServers, Options{})
}

// CheckWith is Check with explicit options.
func CheckWith(t *testing.T, newServers NewServers, opts Options) {
	t.Helper()
	for _, wl := range []struct {
		name string
		mk   func(h int) workload
	}{{"Tenants", tenantWorkload}, {"Contention", contentionWorkload}, {"Flows", flowWorkload}, {"Children", childrenWorkload}, {"Events", eventWorkload}} {
		t.Run(wl.name, func(t *testing.T) {
			o := opts.withDefaults(t)
			servers := newServers(t, o.Servers)
			histories := max(1, (o.Ops+o.HistoryOps-1)/o.HistoryOps)
			t.Logf("%d histories of %d operations, %d clients through %d servers, seed %d (LATCH_LINCHECK_SEED to repeat the clients' choices)",
				histories, o.HistoryOps, o.Clients, len(servers), o.Seed)
			for h := range histories {
				v, err := runHistory(t.Context(), servers, wl.mk(h), o, o.Seed+uint64(h), fmt.Sprintf("%s-%s-h%d", t.Name(), wl.name, h))
				if err != nil {
					t.Fatal(err)
				}
				report(t, h, v)
			}
		})
	}
}

// runHistory creates the workload's tenants through the first of servers,
// records one history (client c going through servers[c%len(servers)]) and
// checks it.
func runHistory(ctx context.Context, servers []store.Store, w workload, o Options, seed uint64, name string) (verdict, error) {
	for _, p := range w.tenants {
		p.Now = base
		if _, err := servers[0].CreateTenant(ctx, &p); err != nil {
			return verdict{}, fmt.Errorf("CreateTenant %s: %w", p.Name, err)
		}
	}
	for _, sub := range w.subs {
		if _, err := servers[0].PutSubscription(ctx, &store.PutSubscriptionParams{Now: base, Subscription: store.Subscription{
			Tenant: sub.Tenant, Name: sub.Name, Event: sub.Event, Kind: sub.Kind, Enabled: true}}); err != nil {
			return verdict{}, fmt.Errorf("PutSubscription %s/%s: %w", sub.Tenant, sub.Name, err)
		}
	}
	clients := o.Clients
	if w.clients > 0 {
		clients = min(clients, w.clients)
	}
	hist := record(ctx, servers, &w, clients, o.HistoryOps, seed)
	for _, op := range hist {
		if out := op.Output.(Output); out.Err.unexpected() {
			return verdict{}, fmt.Errorf("client %d: %s: %s", op.ClientId, op.Input.(Input).Op, out.Err)
		}
		for _, it := range op.Output.(Output).Items {
			if it.Err.unexpected() {
				return verdict{}, fmt.Errorf("client %d: admit item: %s", op.ClientId, it.Err)
			}
		}
	}
	if w.wake {
		names := make([]string, len(w.tenants))
		for i, p := range w.tenants {
			names[i] = p.Name
		}
		if err := forceDeleteAll(ctx, servers[0], names); err != nil {
			return verdict{}, err
		}
	}
	tenants, subs := w.tenants, w.subs
	model := porcupineModel(func() *State {
		st := NewState(tenants...)
		st.Subs = subs
		return st
	})
	return check(model, hist, o.Timeout, o.OutDir, name), nil
}

// forceDeleteAll force-deletes every execution of the tenants, so that the
// global operations (Wake, Rescue, Promote, Prune) of what runs next on the
// store see only their own.
func forceDeleteAll(ctx context.Context, s store.Store, tenants []string) error {
	for _, tn := range tenants {
		for {
			res, err := s.List(ctx, &store.ListParams{Tenant: tn, Limit: 500})
			if err != nil {
				return fmt.Errorf("list %s: %w", tn, err)
			}
			if len(res.Items) == 0 {
				break
			}
			for _, x := range res.Items {
				if err := s.Delete(ctx, &store.DeleteParams{Tenant: tn, ID: x.ID, Force: true, Now: base}); err != nil {
					return fmt.Errorf("force delete %s: %w", x.ID, err)
				}
			}
		}
	}
	return nil
}

func report(t *testing.T, h int, v verdict) {
	t.Helper()
	switch v.result {
	case porcupine.Ok:
		t.Logf("history %d: %d operations linearizable (checked in %v)\n  %s", h, v.ops, v.took.Round(time.Millisecond), v.tally)
	case porcupine.Unknown:
		t.Logf("history %d: %d operations NOT DECIDED within the timeout (%v); nothing proven for it", h, v.ops, v.took.Round(time.Millisecond))
	default:
		t.Errorf("history %d: %d operations are NOT linearizable.\nvisualization: %s%s\n%s", h, v.ops, v.html,
			keepHint(), v.why)
	}
}

func keepHint() string {
	if os.Getenv("LATCH_LINCHECK_OUT") == "" {
		return " (removed with the test's temporary directory; set LATCH_LINCHECK_OUT=dir to keep it)"
	}
	return ""
}
