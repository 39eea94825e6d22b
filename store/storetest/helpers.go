package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// base is the fake clock's origin: every test drives time as base plus an
// offset (see at). It lies years ahead of the wall clock, so a backend that
// compares against time.Now() instead of the params' Now is caught: its
// leases would never expire and its dedup keys never age.
var base = time.Date(2031, time.March, 14, 9, 0, 0, 0, time.UTC)

// at returns the fake clock's time d after base.
func at(d time.Duration) time.Time { return base.Add(d) }

const (
	acme   = "acme"
	globex = "globex"

	// leaseFor is the lease duration tests claim with unless they say otherwise.
	leaseFor = 30 * time.Second
)

// mustJSON returns s in canonical form; s is a constant of the suite.
func mustJSON(s string) json.RawMessage {
	raw, err := store.CanonicalJSON([]byte(s))
	if err != nil {
		panic(fmt.Sprintf("storetest: bad JSON constant %q: %v", s, err))
	}
	return raw
}

// job is a plain submission of kind with an empty payload.
func job(kind string) store.Submission {
	return store.Submission{Kind: kind, Payload: mustJSON(`{}`)}
}

// keyed is a submission of kind with a dedup key and a payload.
func keyed(kind, key, payload string) store.Submission {
	return store.Submission{Kind: kind, DedupKey: key, Payload: mustJSON(payload)}
}

// env is one test's fresh store plus helpers that fail the test on
// unexpected errors. Its methods must be called from the test's goroutine
// (they may call t.Fatal); concurrent code calls e.s directly.
type env struct {
	t   *testing.T
	ctx context.Context
	s   store.Store
}

// startEmpty marks t parallel and opens a fresh store with no tenant.
func startEmpty(t *testing.T, ns NewStore) *env {
	t.Helper()
	t.Parallel()
	s := ns(t)
	if s == nil {
		t.Fatal("newStore returned nil")
	}
	return &env{t: t, ctx: t.Context(), s: s}
}

// start marks t parallel, opens a fresh store and creates tenant acme with
// the default settings.
func start(t *testing.T, ns NewStore) *env {
	t.Helper()
	e := startEmpty(t, ns)
	e.createTenant(store.CreateTenantParams{Name: acme})
	return e
}

// must fails the test at once if err is not nil.
func (e *env) must(err error, what string) {
	e.t.Helper()
	if err != nil {
		e.t.Fatalf("%s: unexpected error: %v", what, err)
	}
}

func (e *env) createTenant(p store.CreateTenantParams) *store.Tenant {
	e.t.Helper()
	if p.Now.IsZero() {
		p.Now = base
	}
	if p.KeyHash == "" {
		p.KeyHash = "hash-" + p.Name
	}
	tn, err := e.s.CreateTenant(e.ctx, &p)
	e.must(err, "CreateTenant "+p.Name)
	return tn
}

func (e *env) tenant(name string) *store.Tenant {
	e.t.Helper()
	tn, err := e.s.GetTenant(e.ctx, &store.GetTenantParams{Name: name})
	e.must(err, "GetTenant "+name)
	return tn
}

// wantInflight asserts the tenant's Inflight counter and that it matches its
// executions (CheckInflight).
func (e *env) wantInflight(tenant string, want int) {
	e.t.Helper()
	if got := e.tenant(tenant).Inflight; got != want {
		e.t.Errorf("tenant %s: Inflight = %d, want %d", tenant, got, want)
	}
	CheckInflight(e.t, e.s, tenant)
}

// admit calls Admit and checks the shape of the answer: one item per
// submission, each with exactly one of Execution and Err.
func (e *env) admit(tenant string, now time.Time, items ...store.Submission) []store.Admitted {
	e.t.Helper()
	res, err := e.s.Admit(e.ctx, &store.AdmitParams{Tenant: tenant, Items: items, Now: now})
	e.must(err, "Admit")
	checkAdmitResult(e.t, res, len(items))
	return res.Items
}

func checkAdmitResult(t testing.TB, res *store.AdmitResult, n int) {
	t.Helper()
	if res == nil {
		t.Fatal("Admit returned a nil result and no error")
	}
	if len(res.Items) != n {
		t.Fatalf("Admit returned %d items for %d submissions", len(res.Items), n)
	}
	for i, it := range res.Items {
		if (it.Execution == nil) == (it.Err == nil) {
			t.Fatalf("Admit item %d: exactly one of Execution and Err must be set, got Execution=%v Err=%v",
				i, it.Execution != nil, it.Err)
		}
		if it.Err != nil && it.Deduplicated {
			t.Errorf("Admit item %d: Deduplicated set on a refused item (%v)", i, it.Err)
		}
	}
}

// admitOne admits a single submission and returns its outcome.
func (e *env) admitOne(tenant string, now time.Time, sub store.Submission) store.Admitted {
	e.t.Helper()
	return e.admit(tenant, now, sub)[0]
}

// submit admits one submission that must become a new execution.
func (e *env) submit(tenant string, now time.Time, sub store.Submission) *store.Execution {
	e.t.Helper()
	it := e.admitOne(tenant, now, sub)
	if it.Err != nil {
		e.t.Fatalf("Admit %s/%s: %v", tenant, sub.Kind, it.Err)
	}
	if it.Deduplicated {
		e.t.Fatalf("Admit %s/%s: deduplicated onto %s, want a new execution", tenant, sub.Kind, it.Execution.ID)
	}
	return it.Execution
}

// dedup admits a submission that must be answered with the existing
// execution id.
func (e *env) dedup(tenant string, now time.Time, sub store.Submission, id string) *store.Execution {
	e.t.Helper()
	it := e.admitOne(tenant, now, sub)
	if it.Err != nil {
		e.t.Fatalf("Admit %s key %q: %v, want deduplicated onto %s", tenant, sub.DedupKey, it.Err, id)
	}
	if !it.Deduplicated || it.Execution.ID != id {
		e.t.Fatalf("Admit %s key %q: got %s (Deduplicated=%v), want deduplicated onto %s",
			tenant, sub.DedupKey, it.Execution.ID, it.Deduplicated, id)
	}
	return it.Execution
}

// claim calls Claim with defaults for the fields left zero: worker
// "worker-1", Max 1, leaseFor.
func (e *env) claim(p store.ClaimParams) []store.Lease {
	e.t.Helper()
	if p.WorkerID == "" {
		p.WorkerID = "worker-1"
	}
	if p.Max == 0 {
		p.Max = 1
	}
	if p.LeaseDuration == 0 {
		p.LeaseDuration = leaseFor
	}
	res, err := e.s.Claim(e.ctx, &p)
	e.must(err, "Claim")
	if res == nil {
		e.t.Fatal("Claim returned a nil result and no error")
	}
	if len(res.Leases) > p.Max {
		e.t.Fatalf("Claim with Max %d returned %d leases", p.Max, len(res.Leases))
	}
	return res.Leases
}

// claimOne claims exactly one execution of tenant.
func (e *env) claimOne(tenant string, now time.Time) store.Lease {
	e.t.Helper()
	ls := e.claim(store.ClaimParams{Tenant: tenant, Now: now})
	if len(ls) != 1 {
		e.t.Fatalf("Claim %s at %s: got %d leases, want 1", tenant, now.Sub(base), len(ls))
	}
	return ls[0]
}

// claimNone asserts that nothing of tenant is claimable at now.
func (e *env) claimNone(tenant string, now time.Time) {
	e.t.Helper()
	ls := e.claim(store.ClaimParams{Tenant: tenant, Now: now, Max: 100})
	for _, l := range ls {
		e.t.Errorf("Claim %s at %s: handed out %s (attempt %d), want nothing claimable",
			tenant, now.Sub(base), l.ExecutionID, l.Attempt)
	}
}

// run admits sub at now and claims it: the execution is running under the
// returned lease (duration leaseFor). No other execution of tenant may be
// ready at now.
func (e *env) run(tenant string, now time.Time, sub store.Submission) store.Lease {
	e.t.Helper()
	x := e.submit(tenant, now, sub)
	l := e.claimOne(tenant, now)
	if l.ExecutionID != x.ID {
		e.t.Fatalf("claimed %s, want the execution just admitted %s", l.ExecutionID, x.ID)
	}
	return l
}

func (e *env) heartbeat(l store.Lease, now time.Time, d time.Duration) (*store.HeartbeatResult, error) {
	return e.s.Heartbeat(e.ctx, &store.HeartbeatParams{
		ExecutionID: l.ExecutionID, Tenant: l.Tenant, Token: l.Token, LeaseDuration: d, Now: now,
	})
}

func (e *env) complete(l store.Lease, now time.Time, result json.RawMessage) (*store.Execution, error) {
	return e.s.Complete(e.ctx, &store.CompleteParams{
		ExecutionID: l.ExecutionID, Tenant: l.Tenant, Token: l.Token, Result: result, Now: now,
	})
}

func (e *env) fail(l store.Lease, now time.Time, msg string, retry bool, delay time.Duration) (*store.Execution, error) {
	return e.s.Fail(e.ctx, &store.FailParams{
		ExecutionID: l.ExecutionID, Tenant: l.Tenant, Token: l.Token, Error: msg,
		Retry: retry, RetryDelay: delay, Now: now,
	})
}

func (e *env) release(l store.Lease, now time.Time) (*store.Execution, error) {
	return e.s.Release(e.ctx, &store.ReleaseParams{
		ExecutionID: l.ExecutionID, Tenant: l.Tenant, Token: l.Token, Now: now,
	})
}

func (e *env) cancel(tenant, id string, now time.Time) (*store.Execution, error) {
	return e.s.Cancel(e.ctx, &store.CancelParams{Tenant: tenant, ID: id, Now: now})
}

func (e *env) del(tenant, id string, force bool, now time.Time) error {
	return e.s.Delete(e.ctx, &store.DeleteParams{Tenant: tenant, ID: id, Force: force, Now: now})
}

func (e *env) rescue(now time.Time, limit int) store.RescueResult {
	e.t.Helper()
	res, err := e.s.Rescue(e.ctx, &store.RescueParams{Now: now, Limit: limit})
	e.must(err, "Rescue")
	if res == nil {
		e.t.Fatal("Rescue returned a nil result and no error")
	}
	return *res
}

func (e *env) promote(now time.Time, limit int) int {
	e.t.Helper()
	res, err := e.s.Promote(e.ctx, &store.PromoteParams{Now: now, Limit: limit})
	e.must(err, "Promote")
	if res == nil {
		e.t.Fatal("Promote returned a nil result and no error")
	}
	return res.Promoted
}

func (e *env) prune(now time.Time, limit int) store.PruneResult {
	e.t.Helper()
	res, err := e.s.Prune(e.ctx, &store.PruneParams{Now: now, Limit: limit})
	e.must(err, "Prune")
	if res == nil {
		e.t.Fatal("Prune returned a nil result and no error")
	}
	return *res
}

// get reads an execution of any tenant; it must exist.
func (e *env) get(id string) *store.Execution {
	e.t.Helper()
	x, err := e.s.Get(e.ctx, &store.GetParams{ID: id})
	e.must(err, "Get "+id)
	if x == nil {
		e.t.Fatalf("Get %s returned nil and no error", id)
	}
	return x
}

// gone asserts that the execution no longer exists.
func (e *env) gone(id string) {
	e.t.Helper()
	_, err := e.s.Get(e.ctx, &store.GetParams{ID: id})
	if !errors.Is(err, store.ErrNotFound) {
		e.t.Errorf("Get %s: err = %v, want ErrNotFound (the execution should be gone)", id, err)
	}
}

// list pages through every execution matching p.
func (e *env) list(p store.ListParams) []*store.Execution {
	e.t.Helper()
	return listAll(e.t, e.s, p)
}

// wantStatus reads id and asserts its status.
func (e *env) wantStatus(id string, want store.Status) *store.Execution {
	e.t.Helper()
	x := e.get(id)
	if x.Status != want {
		e.t.Errorf("execution %s: status %s, want %s", id, x.Status, want)
	}
	return x
}

// wantErr asserts that err wraps one of targets.
func wantErr(t testing.TB, what string, err error, targets ...error) {
	t.Helper()
	if !isAny(err, targets...) {
		t.Errorf("%s: err = %v, want %v", what, err, targets)
	}
}

func isAny(err error, targets ...error) bool {
	for _, target := range targets {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// wantFinished asserts a terminal status and FinishedAt == now.
func wantFinished(t testing.TB, what string, x *store.Execution, st store.Status, now time.Time) {
	t.Helper()
	if x == nil {
		t.Errorf("%s: nil execution, want %s", what, st)
		return
	}
	if x.Status != st {
		t.Errorf("%s: status %s, want %s", what, x.Status, st)
	}
	wantTimePtr(t, what+": FinishedAt", x.FinishedAt, now)
}

func wantTime(t testing.TB, what string, got, want time.Time) {
	t.Helper()
	if !got.Equal(want) {
		t.Errorf("%s = %s, want %s", what, fmtTime(got), fmtTime(want))
	}
}

func wantTimePtr(t testing.TB, what string, got *time.Time, want time.Time) {
	t.Helper()
	if got == nil {
		t.Errorf("%s = nil, want %s", what, fmtTime(want))
		return
	}
	wantTime(t, what, *got, want)
}

// fmtTime shows a time as an offset from base, which is how tests think.
func fmtTime(x time.Time) string {
	if x.IsZero() {
		return "zero"
	}
	return fmt.Sprintf("base%+v (%s)", x.Sub(base), x.UTC().Format(time.RFC3339Nano))
}

// sameJSON compares two JSON documents by their canonical form; nil, empty
// and null are all "no document".
func sameJSON(a, b json.RawMessage) bool {
	absent := func(m json.RawMessage) bool {
		s := strings.TrimSpace(string(m))
		return s == "" || s == "null"
	}
	if absent(a) || absent(b) {
		return absent(a) && absent(b)
	}
	ca, errA := store.CanonicalJSON(a)
	cb, errB := store.CanonicalJSON(b)
	if errA != nil || errB != nil {
		return string(a) == string(b)
	}
	return string(ca) == string(cb)
}

func wantJSON(t testing.TB, what string, got, want json.RawMessage) {
	t.Helper()
	if !sameJSON(got, want) {
		t.Errorf("%s = %s, want %s", what, got, want)
	}
}

// sameExecution asserts that got equals want field by field (times compared
// with Equal, JSON by canonical form).
func sameExecution(t testing.TB, what string, got, want *store.Execution) {
	t.Helper()
	if got == nil || want == nil {
		if got != want {
			t.Errorf("%s: got %v, want %v", what, got, want)
		}
		return
	}
	if d := diffExecution(got, want); len(d) > 0 {
		t.Errorf("%s: execution %s differs:\n  %s", what, want.ID, strings.Join(d, "\n  "))
	}
}

// diffExecution lists the fields that differ. It walks the struct by
// reflection so that fields added to store.Execution are compared too.
func diffExecution(got, want *store.Execution) []string {
	gv, wv := reflect.ValueOf(*got), reflect.ValueOf(*want)
	var out []string
	for i := range gv.NumField() {
		g, w := gv.Field(i).Interface(), wv.Field(i).Interface()
		if !sameValue(g, w) {
			out = append(out, fmt.Sprintf("%s: got %s, want %s", gv.Type().Field(i).Name, show(g), show(w)))
		}
	}
	return out
}

func sameValue(a, b any) bool {
	switch a := a.(type) {
	case time.Time:
		return a.Equal(b.(time.Time))
	case *time.Time:
		bt := b.(*time.Time)
		if a == nil || bt == nil {
			return a == nil && bt == nil
		}
		return a.Equal(*bt)
	case json.RawMessage:
		return sameJSON(a, b.(json.RawMessage))
	}
	return reflect.DeepEqual(a, b)
}

func show(v any) string {
	switch v := v.(type) {
	case time.Time:
		return fmtTime(v)
	case *time.Time:
		if v == nil {
			return "nil"
		}
		return fmtTime(*v)
	case json.RawMessage:
		if v == nil {
			return "nil"
		}
		return string(v)
	case string:
		return fmt.Sprintf("%q", v)
	}
	return fmt.Sprintf("%v", v)
}

// uuidV7 matches the text form of a version 7, RFC 9562 variant UUID.
var uuidV7 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// CheckInflight asserts invariant I3 for one tenant: its Inflight counter
// equals the number of its executions that are scheduled, queued, running or
// suspended, counted by paging through List, and its storage count
// (CheckStorage). Call it when no other goroutine is changing the tenant's
// executions.
func CheckInflight(t testing.TB, s store.Store, tenant string) {
	t.Helper()
	tn, err := s.GetTenant(t.Context(), &store.GetTenantParams{Name: tenant})
	if err != nil {
		t.Errorf("CheckInflight: GetTenant %s: %v", tenant, err)
		return
	}
	n := 0
	for _, st := range []store.Status{store.StatusScheduled, store.StatusQueued, store.StatusRunning, store.StatusSuspended} {
		n += len(listAll(t, s, store.ListParams{Tenant: tenant, Status: st, Limit: 500}))
	}
	if tn.Inflight != n {
		t.Errorf("I3: tenant %s has Inflight = %d but %d executions scheduled, queued, running or suspended", tenant, tn.Inflight, n)
	}
	if tn.Inflight < 0 {
		t.Errorf("I3: tenant %s has a negative Inflight %d", tenant, tn.Inflight)
	}
	CheckStorage(t, s, tenant)
}

// listAll pages through List from p.After on and returns every item,
// failing on a repeated item, an item out of newest-first order (not
// checked with ParentID: children list in spawn order), a page
// over its limit, a Next that does not move on, or an item that does not
// match p's filters. A page may be empty and still have a Next (Scan).
func listAll(t testing.TB, s store.Store, p store.ListParams) []*store.Execution {
	t.Helper()
	return listPages(t, s, p, nil)
}

// listPages is listAll, calling page (if not nil) with each page's result.
func listPages(t testing.TB, s store.Store, p store.ListParams, page func(*store.ListResult)) []*store.Execution {
	t.Helper()
	seen := map[string]bool{}
	var out []*store.Execution
	limit := p.Limit
	if limit == 0 {
		limit = store.DefaultListLimit
	}
	for n := 0; ; n++ {
		if n > 100000 {
			t.Fatal("List: paging did not end")
		}
		res, err := s.List(t.Context(), &p)
		if err != nil {
			t.Fatalf("List %+v: %v", p, err)
		}
		if page != nil {
			page(res)
		}
		if len(res.Items) > limit {
			t.Fatalf("List %+v: %d items, over the limit %d", p, len(res.Items), limit)
		}
		for _, x := range res.Items {
			if seen[x.ID] {
				t.Fatalf("List: execution %s appeared twice while paging", x.ID)
			}
			seen[x.ID] = true
			if msg := mismatch(x, &p); msg != "" {
				t.Errorf("List %+v returned %s, which does not match: %s", p, x.ID, msg)
			}
			// By ParentID the order is spawn order, which the caller checks.
			if p.ParentID == "" && len(out) > 0 && x.ID >= out[len(out)-1].ID {
				t.Fatalf("List: %s after %s, not newest first", x.ID, out[len(out)-1].ID)
			}
			out = append(out, x)
		}
		if res.Next == "" {
			return out
		}
		if p.ParentID == "" && p.After != "" && res.Next >= p.After {
			t.Fatalf("List after %s: Next %s does not move on", p.After, res.Next)
		}
		p.After = res.Next
	}
}

// mismatch says which of p's filters x fails, or "".
func mismatch(x *store.Execution, p *store.ListParams) string {
	var bad []string
	check := func(name, filter, value string) {
		if filter != "" && filter != value {
			bad = append(bad, fmt.Sprintf("%s %q != %q", name, value, filter))
		}
	}
	check("tenant", p.Tenant, x.Tenant)
	check("status", string(p.Status), string(x.Status))
	check("kind", p.Kind, x.Kind)
	check("queue", p.Queue, x.Queue)
	check("dedup_key", p.DedupKey, x.DedupKey)
	check("schedule", p.Schedule, x.Schedule)
	check("parent_id", p.ParentID, x.ParentID)
	return strings.Join(bad, ", ")
}

// together runs f(0..n-1) on n goroutines released at one moment and waits
// for all of them. f must not call t.Fatal; it records what it saw.
func together(n int, f func(i int)) {
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-gate
			f(i)
		})
	}
	close(gate)
	wg.Wait()
}
