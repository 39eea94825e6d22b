package storetest

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

func (e *env) queueStats(tenant string, now time.Time) []*store.QueueStats {
	e.t.Helper()
	got, err := e.s.QueueStats(e.ctx, &store.QueueStatsParams{Tenant: tenant, Now: now})
	e.must(err, "QueueStats")
	return got
}

func (e *env) report(r store.ServerReport) {
	e.t.Helper()
	e.must(e.s.ReportServer(e.ctx, &r), "ReportServer "+r.ID)
}

func (e *env) presence(tenant string, since time.Time) *store.Presence {
	e.t.Helper()
	p, err := e.s.Presence(e.ctx, &store.PresenceParams{Tenant: tenant, Since: since})
	e.must(err, "Presence")
	if p == nil {
		e.t.Fatal("Presence returned nil and no error")
	}
	return p
}

func (e *env) activity(tenant string, since time.Time) []*store.ActivityMinute {
	e.t.Helper()
	got, err := e.s.Activity(e.ctx, &store.ActivityParams{Tenant: tenant, Since: since})
	e.must(err, "Activity")
	return got
}

func (e *env) listRateLimits(tenant string) []*store.RateLimit {
	e.t.Helper()
	got, err := e.s.ListRateLimits(e.ctx, &store.ListRateLimitsParams{Tenant: tenant})
	e.must(err, "ListRateLimits")
	return got
}

func (e *env) concurrencyKeys(tenant string) []*store.ConcurrencyKeyUse {
	e.t.Helper()
	got, err := e.s.ConcurrencyKeys(e.ctx, &store.ConcurrencyKeysParams{Tenant: tenant})
	e.must(err, "ConcurrencyKeys")
	return got
}

// wantList asserts got equals want item by item, compared with same
// (times with Equal).
func wantList[T any](t testing.TB, what string, got, want []*T) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: got %d items %s, want %d %s", what, len(got), showItems(got), len(want), showItems(want))
		return
	}
	for i := range want {
		if !sameFields(*got[i], *want[i]) {
			t.Errorf("%s: item %d = %s, want %s", what, i, showItem(*got[i]), showItem(*want[i]))
		}
	}
}

// sameFields compares two structs of one type field by field with
// sameValue (times with Equal).
func sameFields(a, b any) bool {
	av, bv := reflect.ValueOf(a), reflect.ValueOf(b)
	for i := range av.NumField() {
		if !sameValue(av.Field(i).Interface(), bv.Field(i).Interface()) {
			return false
		}
	}
	return true
}

// showItem prints a struct's fields by name, times readable.
func showItem(v any) string {
	rv := reflect.ValueOf(v)
	parts := make([]string, rv.NumField())
	for i := range rv.NumField() {
		parts[i] = rv.Type().Field(i).Name + ":" + show(rv.Field(i).Interface())
	}
	return "{" + strings.Join(parts, " ") + "}"
}

func showItems[T any](items []*T) string {
	parts := make([]string, len(items))
	for i, it := range items {
		parts[i] = showItem(*it)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func wantQueueStats(t testing.TB, what string, got, want []*store.QueueStats) {
	t.Helper()
	wantList(t, what, got, want)
}

func wantServers(t testing.TB, what string, got, want []*store.Server) {
	t.Helper()
	wantList(t, what, got, want)
}

func wantWorkers(t testing.TB, what string, got, want []*store.WorkerSeen) {
	t.Helper()
	wantList(t, what, got, want)
}

func wantActivity(t testing.TB, what string, got, want []*store.ActivityMinute) {
	t.Helper()
	wantList(t, what, got, want)
}

func wantKeys(t testing.TB, what string, got, want []*store.ConcurrencyKeyUse) {
	t.Helper()
	wantList(t, what, got, want)
}
