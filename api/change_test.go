package api

import (
	"net/http"
	"testing"

	"github.com/latch-run/latch/store"
)

func TestCancel(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.tenant("acme")
	queued := e.submit(key, `{"kind":"echo"}`, http.StatusCreated)
	scheduled := e.submit(key, `{"kind":"echo","delay_seconds":3600}`, http.StatusCreated)
	for _, x := range []*execution{queued, scheduled} {
		c := e.do("POST", "/api/executions/"+x.ExecutionID+"/cancel", key, nil).want(http.StatusOK).exec()
		if c.Status != store.StatusCancelled {
			t.Fatalf("cancel %s: %s", x.Status, c.Status)
		}
		// Already terminal: 200, unchanged.
		c = e.do("POST", "/api/executions/"+x.ExecutionID+"/cancel", key, nil).want(http.StatusOK).exec()
		if c.Status != store.StatusCancelled {
			t.Fatalf("second cancel: %s", c.Status)
		}
	}
	if n := e.inflight("acme"); n != 0 {
		t.Fatalf("inflight %d after cancels", n)
	}

	// Running: the worker learns it from its heartbeat.
	e.submit(key, `{"kind":"echo"}`, http.StatusCreated)
	l := e.claimOne(key)
	c := e.do("POST", "/api/executions/"+l.ExecutionID+"/cancel", key, nil).want(http.StatusOK).exec()
	if c.Status != store.StatusRunning || !c.CancelRequested {
		t.Fatalf("cancel running: %s cancel_requested=%v", c.Status, c.CancelRequested)
	}
	var hb heartbeatResponse
	e.do("POST", "/api/executions/"+l.ExecutionID+"/heartbeat", key, `{"lease_token":"`+l.LeaseToken+`"}`).want(http.StatusOK).decode(&hb)
	if !hb.CancelRequested {
		t.Fatal("heartbeat does not report the cancel")
	}
	f := e.do("POST", "/api/executions/"+l.ExecutionID+"/fail", key, `{"lease_token":"`+l.LeaseToken+`","error":"stopped"}`).want(http.StatusOK).exec()
	if f.Status != store.StatusCancelled {
		t.Fatalf("stopped after cancel: %s", f.Status)
	}
	e.do("POST", "/api/executions/nope/cancel", key, nil).problem(http.StatusNotFound, CodeNotFound)
	e.do("POST", "/api/executions/"+l.ExecutionID+"/cancel?now=1", key, nil).problem(http.StatusBadRequest, CodeInvalidRequest)
}

func TestDelete(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.tenant("acme")
	x := e.submit(key, `{"kind":"echo","dedup_key":"k"}`, http.StatusCreated)
	e.do("DELETE", "/api/executions/"+x.ExecutionID, key, nil).problem(http.StatusConflict, CodeNotTerminal)
	e.do("DELETE", "/api/executions/"+x.ExecutionID+"?force=false", key, nil).problem(http.StatusConflict, CodeNotTerminal)
	e.do("DELETE", "/api/executions/"+x.ExecutionID+"?force=maybe", key, nil).problem(http.StatusBadRequest, CodeInvalidRequest)
	e.do("GET", "/api/executions/"+x.ExecutionID, key, nil).want(http.StatusOK)

	e.do("POST", "/api/executions/"+x.ExecutionID+"/cancel", key, nil).want(http.StatusOK)
	r := e.do("DELETE", "/api/executions/"+x.ExecutionID, key, nil).want(http.StatusNoContent)
	if len(r.body) != 0 {
		t.Fatalf("204 with body %q", r.body)
	}
	e.do("GET", "/api/executions/"+x.ExecutionID, key, nil).problem(http.StatusNotFound, CodeNotFound)
	e.do("DELETE", "/api/executions/"+x.ExecutionID, key, nil).problem(http.StatusNotFound, CodeNotFound)
	if e.count() != 0 {
		t.Fatal("row left after delete")
	}

	// Force removes a running execution; its worker's lease is lost.
	y := e.submit(key, `{"kind":"echo","dedup_key":"k"}`, http.StatusCreated)
	l := e.claimOne(key)
	e.do("DELETE", "/api/executions/"+y.ExecutionID+"?force=true", key, nil).want(http.StatusNoContent)
	e.do("POST", "/api/executions/"+l.ExecutionID+"/complete", key, `{"lease_token":"`+l.LeaseToken+`"}`).
		problem(http.StatusConflict, CodeLeaseLost)
	if e.inflight("acme") != 0 || e.count() != 0 {
		t.Fatalf("inflight %d rows %d after force delete", e.inflight("acme"), e.count())
	}
}
