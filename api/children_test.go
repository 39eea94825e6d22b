package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// The parent runs on the queue "flows", its children on "default", so that
// a claim takes the one the test means.
const parentQueue = `,"queues":["flows"]`

func (e *testEnv) spawnOn(key string, l lease, body string) *resp {
	e.t.Helper()
	return e.do("POST", "/api/executions/"+l.ExecutionID+"/children", key, `{"lease_token":"`+l.LeaseToken+`",`+body+`}`)
}

// parentLease submits a flow on the queue "flows" and claims it.
func (e *testEnv) parentLease(key string) lease {
	e.t.Helper()
	e.submit(key, `{"kind":"parent","queue":"flows"}`, http.StatusCreated)
	return e.claimOne(key, parentQueue)
}

func (e *testEnv) childrenOf(key, id string) []*execution {
	e.t.Helper()
	var list listResponse
	e.do("GET", "/api/executions?parent_id="+id, key, nil).want(http.StatusOK).decode(&list)
	return list.Items
}

// finishChild claims the child id on the queue "default" and completes it
// (result given) or fails it for good (result "").
func (e *testEnv) finishChild(key, id, result string) {
	e.t.Helper()
	l := e.claimOne(key, `,"queues":["default"]`)
	if l.ExecutionID != id {
		e.t.Fatalf("claimed %s, want the child %s", l.ExecutionID, id)
	}
	if result == "" {
		e.do("POST", "/api/executions/"+id+"/fail", key, `{"lease_token":"`+l.LeaseToken+`","error":"parcel lost","retry":false}`).want(http.StatusOK)
		return
	}
	e.do("POST", "/api/executions/"+id+"/complete", key, `{"lease_token":"`+l.LeaseToken+`","result":`+result+`}`).want(http.StatusOK)
}

func TestSpawn(t *testing.T) {
	t.Parallel()
	e, _, key := flowEnv(t)
	l := e.parentLease(key)

	r := e.spawnOn(key, l, `"step":"ship","items":[{"kind":"parcel","payload":{"n":1}},{"kind":"parcel","payload":{"n":2},"priority":5},{"kind":"parcel","payload":{"n":3}}]`)
	r.want(http.StatusCreated)
	var sp spawnResponse
	r.decode(&sp)
	if sp.Step != "ship" || !sp.Recorded || len(sp.Children) != 3 {
		t.Fatalf("spawn: %s", r.body)
	}
	ids := make([]string, 3)
	for i, c := range sp.Children {
		if c.Status != store.StatusQueued || !store.IsExecutionID(c.ExecutionID) {
			t.Fatalf("child %d: %+v", i, c)
		}
		ids[i] = c.ExecutionID
	}
	if got := e.inflight("acme"); got != 4 {
		t.Fatalf("inflight %d, want the parent and its 3 children", got)
	}
	// Each child is an execution of the tenant that names its parent.
	c := e.get(key, ids[1])
	if c.ParentID == nil || *c.ParentID != l.ExecutionID || c.ParentStep == nil || *c.ParentStep != "ship" ||
		c.Priority != 5 || string(c.Payload) != `{"n":2}` || c.Tenant != "acme" {
		t.Fatalf("child: %+v", c)
	}
	if raw := e.do("GET", "/api/executions/"+ids[0], key, nil).body; !strings.Contains(string(raw), `"parent_step":"ship"`) {
		t.Fatalf("child JSON: %s", raw)
	}
	// The parent has no parent: both fields are there, null.
	if raw := e.do("GET", "/api/executions/"+l.ExecutionID, key, nil).body; !strings.Contains(string(raw), `"parent_id":null,"parent_step":null`) {
		t.Fatalf("parent JSON: %s", raw)
	}

	// A repeat of the step answers the first spawn's children, 200 and
	// recorded false, whatever its items, and admits nothing.
	r = e.spawnOn(key, l, `"step":"ship","items":[{"kind":"other"}]`)
	r.want(http.StatusOK)
	var again spawnResponse
	r.decode(&again)
	if again.Recorded || len(again.Children) != 3 || again.Children[0].ExecutionID != ids[0] || again.Children[2].ExecutionID != ids[2] {
		t.Fatalf("repeat: %s", r.body)
	}
	if got := e.inflight("acme"); got != 4 {
		t.Fatalf("a repeated spawn admitted children: inflight %d", got)
	}
	// A step of another kind under the name is not a spawn's.
	e.record(key, l, `"name":"plain","result":1`).want(http.StatusOK)
	e.spawnOn(key, l, `"step":"plain","items":[{"kind":"parcel"}]`).problem(http.StatusBadRequest, CodeInvalidRequest)

	// The children list in spawn order.
	kids := e.childrenOf(key, l.ExecutionID)
	if len(kids) != 3 || kids[0].ExecutionID != ids[0] || kids[1].ExecutionID != ids[1] || kids[2].ExecutionID != ids[2] {
		t.Fatalf("children: %+v", kids)
	}
	if got := e.childrenOf(key, ids[0]); len(got) != 0 {
		t.Fatalf("a child without children lists %d", len(got))
	}

	// The journal, and so the next lease, holds the spawn as the step.
	steps := e.steps(key, l.ExecutionID)
	want := `{"children":["` + strings.Join(ids, `","`) + `"]}`
	if len(steps) != 2 || steps[0].Name != "ship" || string(steps[0].Result) != want {
		t.Fatalf("journal: %+v", steps)
	}
	e.do("POST", "/api/executions/"+l.ExecutionID+"/fail", key, `{"lease_token":"`+l.LeaseToken+`","error":"crash","retry_after_seconds":0}`).want(http.StatusOK)
	e.spawnOn(key, l, `"step":"ship","items":[{"kind":"parcel"}]`).problem(http.StatusConflict, CodeLeaseLost)
	l2 := e.claimOne(key, parentQueue)
	if l2.ExecutionID != l.ExecutionID || string(l2.Steps["ship"]) != want {
		t.Fatalf("replayed lease: %+v", l2)
	}
	// The replay answers the same ids.
	r = e.spawnOn(key, l2, `"step":"ship","items":[{"kind":"parcel"},{"kind":"parcel"},{"kind":"parcel"}]`).want(http.StatusOK)
	r.decode(&again)
	if again.Recorded || again.Children[1].ExecutionID != ids[1] {
		t.Fatalf("replay: %s", r.body)
	}
}

func TestSpawnRefusals(t *testing.T) {
	t.Parallel()
	e, _, key := flowEnv(t, `,"max_inflight":3`)
	l := e.parentLease(key)
	items := func(n int) string {
		return `"items":[` + strings.TrimSuffix(strings.Repeat(`{"kind":"parcel"},`, n), ",") + `]`
	}
	for body, field := range map[string]string{
		`"items":[{"kind":"parcel"}]`: "step",
		`"step":"s","items":[]`:       "items",
		`"step":"s"`:                  "items",
		`"step":"s","items":[{"kind":"parcel"},{"kind":"p","dedup_key":"k"}]`: "items[1].dedup_key",
		`"step":"s","items":[{"payload":{}}]`:                                 "items[0].kind",
		`"step":"s","items":[{"kind":"p","priority":"high"}]`:                 "items[0].priority",
		`"step":"s","items":[{"kind":"p","colour":1}]`:                        "items[0].colour",
		`"step":"s","items":[{"kind":"p"}],"on_parent_end":"orphan"`:          "on_parent_end",
	} {
		p := e.spawnOn(key, l, body).problem(http.StatusBadRequest, CodeInvalidRequest)
		detailHas(t, p, field)
	}
	e.do("POST", "/api/executions/"+l.ExecutionID+"/children", key, `{"step":"s","items":[{"kind":"p"}]}`).problem(http.StatusBadRequest, CodeInvalidRequest)

	// Past the quota: nothing admitted, the lease kept.
	r := e.spawnOn(key, l, `"step":"s",`+items(3))
	r.problem(http.StatusTooManyRequests, CodeQuotaExceeded)
	if r.header.Get("Retry-After") != "5" {
		t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
	}
	if got := e.inflight("acme"); got != 1 || e.count() != 1 {
		t.Fatalf("a refused spawn admitted: inflight %d, %d executions", got, e.count())
	}
	// Past the bound of one spawn: too_many_children, nothing admitted.
	e.spawnOn(key, l, `"step":"s",`+items(store.MaxSpawnItems+1)).problem(http.StatusConflict, CodeTooManyChildren)
	if e.count() != 1 {
		t.Fatalf("a spawn past its bound admitted %d", e.count()-1)
	}
	// Within the quota the same lease spawns.
	e.spawnOn(key, l, `"step":"s",`+items(2)).want(http.StatusCreated)
	if got := e.inflight("acme"); got != 3 {
		t.Fatalf("inflight %d", got)
	}
	e.spawnOn(key, lease{ExecutionID: l.ExecutionID, LeaseToken: "not-the-token"}, `"step":"t",`+items(1)).problem(http.StatusConflict, CodeLeaseLost)
}

// Another tenant's execution is not found: its children are not read
// (404) nor listed, and a spawn or a wait on it is fenced like every worker
// call (409 lease_lost: the token is not a lease of the caller's).
func TestSpawnTenantIsolation(t *testing.T) {
	t.Parallel()
	e, _, key := flowEnv(t)
	other := e.tenant("other")
	l := e.parentLease(key)
	e.spawnOn(other, l, `"step":"ship","items":[{"kind":"parcel"}]`).problem(http.StatusConflict, CodeLeaseLost)
	if e.count() != 1 {
		t.Fatalf("another tenant's spawn admitted %d", e.count()-1)
	}
	var sp spawnResponse
	e.spawnOn(key, l, `"step":"ship","items":[{"kind":"parcel"}]`).want(http.StatusCreated).decode(&sp)
	e.do("GET", "/api/executions/"+sp.Children[0].ExecutionID, other, nil).problem(http.StatusNotFound, CodeNotFound)
	if got := e.childrenOf(other, l.ExecutionID); len(got) != 0 {
		t.Fatalf("another tenant lists %d children", len(got))
	}
	if got := e.childrenOf(e.admin, l.ExecutionID); len(got) != 1 {
		t.Fatalf("the admin lists %d children", len(got))
	}
	e.suspendOn(other, l, `"step":"wait","children":"ship"`).problem(http.StatusConflict, CodeLeaseLost)
	if g := e.get(key, l.ExecutionID); g.Status != store.StatusRunning {
		t.Fatalf("another tenant's wait suspended it: %+v", g)
	}
}

// fanIn is the fan-in step as the HTTP contract gives it.
type fanIn struct {
	Children []map[string]json.RawMessage `json:"children"`
	TimedOut bool                         `json:"timed_out"`
}

func TestFanIn(t *testing.T) {
	t.Parallel()
	e, clock, key := flowEnv(t)
	l := e.parentLease(key)
	var sp spawnResponse
	e.spawnOn(key, l, `"step":"ship","items":[{"kind":"parcel"},{"kind":"parcel"}]`).want(http.StatusCreated).decode(&sp)
	a, b := sp.Children[0].ExecutionID, sp.Children[1].ExecutionID

	e.suspendOn(key, l, `"step":"wait","children":"nope"`).problem(http.StatusBadRequest, CodeInvalidRequest)
	e.suspendOn(key, l, `"step":"wait","children":"ship","count":3`).problem(http.StatusBadRequest, CodeInvalidRequest)
	e.suspendOn(key, l, `"step":"wait","signal":"s","count":1`).problem(http.StatusBadRequest, CodeInvalidRequest)
	e.suspendOn(key, l, `"step":"wait","signal":"s","children":"ship"`).problem(http.StatusBadRequest, CodeInvalidRequest)
	e.suspendOn(key, l, `"step":"wait","children":"ship","count":-1`).problem(http.StatusBadRequest, CodeInvalidRequest)

	s := e.suspendOn(key, l, `"step":"wait","children":"ship"`).want(http.StatusOK).exec()
	if s.Status != store.StatusSuspended || s.WaitingFor == nil || *s.WaitingFor != "children:ship" || s.WakeAt != nil {
		t.Fatalf("fan-in wait: %+v", s)
	}
	e.finishChild(key, a, `{"tracking":"T1"}`)
	if g := e.get(key, l.ExecutionID); g.Status != store.StatusSuspended {
		t.Fatalf("resumed with one child of two ended: %+v", g)
	}
	clock.add(time.Second)
	e.finishChild(key, b, "")
	if g := e.get(key, l.ExecutionID); g.Status != store.StatusQueued || g.WaitingFor != nil {
		t.Fatalf("not resumed when both ended: %+v", g)
	}
	l2 := e.claimOne(key, parentQueue)
	if l2.Attempt != 1 {
		t.Fatalf("a resume counted an attempt: %d", l2.Attempt)
	}
	var fi fanIn
	if err := json.Unmarshal(l2.Steps["wait"], &fi); err != nil || fi.TimedOut || len(fi.Children) != 2 {
		t.Fatalf("fan-in step %s: %v", l2.Steps["wait"], err)
	}
	want := []map[string]string{
		{"execution_id": `"` + a + `"`, "status": `"succeeded"`, "result": `{"tracking":"T1"}`, "error": "null"},
		{"execution_id": `"` + b + `"`, "status": `"failed"`, "result": "null", "error": `"parcel lost"`},
	}
	for i, w := range want {
		if len(fi.Children[i]) != len(w) {
			t.Fatalf("child %d has keys %v, want %v", i, fi.Children[i], w)
		}
		for k, v := range w {
			if string(fi.Children[i][k]) != v {
				t.Fatalf("child %d %s = %s, want %s (step %s)", i, k, fi.Children[i][k], v, l2.Steps["wait"])
			}
		}
	}
	// The condition holds already: queued at once, the step recorded.
	q := e.suspendOn(key, l2, `"step":"again","children":"ship","count":1`).want(http.StatusOK).exec()
	if q.Status != store.StatusQueued {
		t.Fatalf("a wait that holds suspended: %+v", q)
	}
	l3 := e.claimOne(key, parentQueue)
	if err := json.Unmarshal(l3.Steps["again"], &fi); err != nil || len(fi.Children) != 2 || fi.TimedOut {
		t.Fatalf("step of a wait that held: %s", l3.Steps["again"])
	}
}

func TestFanInCountAndTimeout(t *testing.T) {
	t.Parallel()
	e, clock, key := flowEnv(t)
	l := e.parentLease(key)
	var sp spawnResponse
	e.spawnOn(key, l, `"step":"race","items":[{"kind":"parcel"},{"kind":"parcel"},{"kind":"parcel"}]`).want(http.StatusCreated).decode(&sp)
	e.suspendOn(key, l, `"step":"first","children":"race","count":1,"timeout_seconds":60`).want(http.StatusOK)
	e.finishChild(key, sp.Children[0].ExecutionID, `1`)
	l2 := e.claimOne(key, parentQueue)
	var fi fanIn
	if err := json.Unmarshal(l2.Steps["first"], &fi); err != nil || fi.TimedOut || len(fi.Children) != 3 ||
		string(fi.Children[0]["status"]) != `"succeeded"` || string(fi.Children[1]["status"]) != `"queued"` {
		t.Fatalf("count 1: %s", l2.Steps["first"])
	}

	// The rest never end: the timeout ends the wait with timed_out.
	s := e.suspendOn(key, l2, `"step":"all","children":"race","timeout_seconds":30`).want(http.StatusOK).exec()
	if s.WakeAt == nil || !s.WakeAt.Equal(clock.Now().Add(30*time.Second)) {
		t.Fatalf("wait with a timeout: %+v", s)
	}
	clock.add(30 * time.Second)
	if _, err := e.store.Wake(context.Background(), &store.WakeParams{Now: clock.Now()}); err != nil {
		t.Fatal(err)
	}
	l3 := e.claimOne(key, parentQueue)
	if err := json.Unmarshal(l3.Steps["all"], &fi); err != nil || !fi.TimedOut || len(fi.Children) != 3 {
		t.Fatalf("timed out: %s", l3.Steps["all"])
	}

	// The parent's end cancels its live children.
	e.do("POST", "/api/executions/"+l3.ExecutionID+"/complete", key, `{"lease_token":"`+l3.LeaseToken+`"}`).want(http.StatusOK)
	for _, c := range e.childrenOf(key, l3.ExecutionID)[1:] {
		if c.Status != store.StatusCancelled {
			t.Fatalf("child outlived its parent: %+v", c)
		}
	}
}
