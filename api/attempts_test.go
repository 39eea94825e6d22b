package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

func (e *testEnv) attempts(key, id string) ([]attempt, []byte) {
	e.t.Helper()
	r := e.do("GET", "/api/executions/"+id+"/attempts", key, nil).want(http.StatusOK)
	var out attemptsResponse
	r.decode(&out)
	return out.Items, r.body
}

// claimAs claims one lease for key as worker.
func (e *testEnv) claimAs(key, worker string) lease {
	e.t.Helper()
	var out claimResponse
	e.do("POST", "/api/workers/claim", key, `{"worker_id":"`+worker+`"}`).want(http.StatusOK).decode(&out)
	if len(out.Leases) != 1 {
		e.t.Fatalf("%s claimed %d leases, want 1", worker, len(out.Leases))
	}
	return out.Leases[0]
}

// TestAttempts: an execution that failed once then succeeded shows both
// runs, oldest first, with their workers, times, outcomes and the error;
// a run still going has null end, outcome and error.
func TestAttempts(t *testing.T) {
	t.Parallel()
	e, clock, key := flowEnv(t)
	x := e.submit(key, `{"kind":"echo","max_attempts":3}`, http.StatusCreated)
	if got, body := e.attempts(key, x.ExecutionID); len(got) != 0 || !strings.Contains(string(body), `"items":[]`) {
		t.Fatalf("before any claim: %s", body)
	}

	t0 := clock.Now()
	l1 := e.claimAs(key, "worker-a")
	got, body := e.attempts(key, x.ExecutionID)
	if len(got) != 1 || got[0].WorkerID != "worker-a" || got[0].Attempt != 1 || !got[0].ClaimedAt.Equal(t0) {
		t.Fatalf("a running run: %s", body)
	}
	for _, field := range []string{`"ended_at":null`, `"outcome":null`, `"error":null`, `"started_at":"` + t0.Format(time.RFC3339)} {
		if !strings.Contains(string(body), field) {
			t.Errorf("a running run's JSON lacks %s: %s", field, body)
		}
	}

	clock.add(2 * time.Second)
	t1 := clock.Now()
	e.do("POST", "/api/executions/"+x.ExecutionID+"/fail", key,
		`{"lease_token":"`+l1.LeaseToken+`","error":"connection refused","retry_after_seconds":0}`).want(http.StatusOK)
	clock.add(time.Second)
	t2 := clock.Now()
	l2 := e.claimAs(key, "worker-b")
	clock.add(3 * time.Second)
	t3 := clock.Now()
	e.do("POST", "/api/executions/"+x.ExecutionID+"/complete", key, `{"lease_token":"`+l2.LeaseToken+`","result":1}`).want(http.StatusOK)

	got, body = e.attempts(key, x.ExecutionID)
	if len(got) != 2 {
		t.Fatalf("after a failure and a success: %s", body)
	}
	a, b := got[0], got[1]
	if a.Attempt != 1 || a.WorkerID != "worker-a" || !a.ClaimedAt.Equal(t0) || !a.StartedAt.Equal(t0) ||
		a.EndedAt == nil || !a.EndedAt.Equal(t1) || a.Outcome == nil || *a.Outcome != store.RunFailed ||
		a.Error == nil || *a.Error != "connection refused" {
		t.Errorf("the failed run: %+v in %s", a, body)
	}
	if b.Attempt != 2 || b.WorkerID != "worker-b" || !b.ClaimedAt.Equal(t2) || !b.StartedAt.Equal(t2) ||
		b.EndedAt == nil || !b.EndedAt.Equal(t3) || b.Outcome == nil || *b.Outcome != store.RunSucceeded || b.Error != nil {
		t.Errorf("the succeeded run: %+v in %s", b, body)
	}
	// The admin reads any tenant's history.
	if got, _ := e.attempts(e.admin, x.ExecutionID); len(got) != 2 {
		t.Errorf("the admin reads %d runs, want 2", len(got))
	}
}

// TestAttemptsOfAnotherTenant: another tenant's history is answered like
// a missing execution's.
func TestAttemptsOfAnotherTenant(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	mine := e.tenant("acme")
	other := e.tenant("other")
	x := e.submit(mine, `{"kind":"echo"}`, http.StatusCreated)
	e.claimOne(mine)

	p := e.do("GET", "/api/executions/"+x.ExecutionID+"/attempts", other, nil).problem(http.StatusNotFound, CodeNotFound)
	detailHas(t, p, x.ExecutionID)
	e.do("GET", "/api/executions/0193a6e4-7c1e-7b3a-9f1e-2d9c3e8a4b10/attempts", mine, nil).problem(http.StatusNotFound, CodeNotFound)
	// The admin naming the other tenant is told the same.
	e.do("GET", "/api/executions/"+x.ExecutionID+"/attempts", e.admin, nil, "Latch-Tenant", "other").problem(http.StatusNotFound, CodeNotFound)
	if got, _ := e.attempts(e.admin, x.ExecutionID); len(got) != 1 || got[0].WorkerID != "w1" {
		t.Errorf("the admin reads %+v", got)
	}
}

// TestAttemptOutcomesDocumented: the document's outcome enum is the
// store's, in the store's order.
func TestAttemptOutcomesDocumented(t *testing.T) {
	t.Parallel()
	var root map[string]any
	if err := json.Unmarshal(openAPIDocument, &root); err != nil {
		t.Fatal(err)
	}
	enum := dig(root, "components", "schemas", "RunOutcome", "enum")
	want := []store.RunOutcome{store.RunSucceeded, store.RunFailed, store.RunCancelled,
		store.RunReleased, store.RunSuspended, store.RunExpired}
	if fmt.Sprint(enum) != fmt.Sprint(want) {
		t.Errorf("RunOutcome enum %v, want %v", enum, want)
	}
}
