package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// An open events stream whose key is deleted sends nothing more of the
// execution: its next event is an unauthorized error, and it ends — the
// final status, result included, never arrives.
func TestEventsStreamEndsWhenItsKeyIsDeleted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	worker := e.tenant("acme")
	var watcher createdKey
	e.do("POST", "/api/tenants/acme/keys", e.admin, nil).want(http.StatusCreated).decode(&watcher)
	x := e.submit(worker, `{"kind":"echo","payload":{"secret":"s3cret-result"}}`, http.StatusCreated)
	_, ch := e.openStream("/api/executions/"+x.ExecutionID+"/events", watcher.APIKey)
	if ev, got := nextEvent(t, ch); ev.name != "status" || got.Status != store.StatusQueued {
		t.Fatalf("first event %+v", ev)
	}
	e.do("DELETE", "/api/tenants/acme/keys/"+watcher.KeyID, e.admin, nil).want(http.StatusNoContent)

	l := e.claimOne(worker)
	e.do("POST", "/api/executions/"+l.ExecutionID+"/complete", worker,
		`{"lease_token":"`+l.LeaseToken+`","result":{"secret":"s3cret-result"}}`).want(http.StatusOK)
	ev, _ := nextEvent(t, ch)
	var p Problem
	if ev.name != "error" || json.Unmarshal([]byte(ev.data), &p) != nil || p.Code != CodeUnauthorized ||
		strings.Contains(ev.data, "s3cret") {
		t.Fatalf("after the key's delete: %+v", ev)
	}
	streamEnds(t, ch)
}

// A stream lasts at most Config.MaxStreamLifetime, even for an execution
// that never ends: the client opens a new one (and is checked again).
func TestEventsStreamLifetimeIsCapped(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) { c.MaxStreamLifetime = 200 * time.Millisecond })
	key := e.tenant("acme")
	x := e.submit(key, `{"kind":"echo"}`, http.StatusCreated)
	_, ch := e.openStream("/api/executions/"+x.ExecutionID+"/events", key)
	if ev, _ := nextEvent(t, ch); ev.name != "status" {
		t.Fatalf("first event %+v", ev)
	}
	streamEnds(t, ch)
}
