package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// claim takes tenant's next execution as worker, straight from the store.
func (e *env) claim(tenant, worker string) store.Lease {
	e.t.Helper()
	res, err := e.store.Claim(context.Background(), &store.ClaimParams{WorkerID: worker, Tenant: tenant, Max: 1,
		LeaseDuration: time.Minute, Now: time.Now()})
	if err != nil || len(res.Leases) != 1 {
		e.t.Fatalf("claim as %s: %v %+v", worker, err, res)
	}
	return res.Leases[0]
}

func (e *env) step(l store.Lease, name, result string) {
	e.t.Helper()
	if _, err := e.store.RecordStep(context.Background(), &store.RecordStepParams{ExecutionID: l.ExecutionID,
		Token: l.Token, Name: name, Result: json.RawMessage(result), Now: time.Now()}); err != nil {
		e.t.Fatalf("record %s: %v", name, err)
	}
}

// failThenSucceed runs a flow of tenant twice: worker-a records a step and
// fails with "card declined", worker-b records another and completes.
func (e *env) failThenSucceed(tenant string) *store.Execution {
	e.t.Helper()
	ctx := context.Background()
	x := e.submit(tenant, store.Submission{Kind: "flow", MaxAttempts: 3})
	l := e.claim(tenant, "worker-a")
	e.step(l, "reserve", `{"seat":"12A"}`)
	if _, err := e.store.Fail(ctx, &store.FailParams{ExecutionID: x.ID, Token: l.Token, Error: "card declined",
		Retry: true, Now: time.Now()}); err != nil {
		e.t.Fatalf("fail: %v", err)
	}
	l = e.claim(tenant, "worker-b")
	e.step(l, "charge", `"`+strings.Repeat("x", 500)+`"`)
	if _, err := e.store.Complete(ctx, &store.CompleteParams{ExecutionID: x.ID, Token: l.Token, Now: time.Now()}); err != nil {
		e.t.Fatalf("complete: %v", err)
	}
	return x
}

// TestExecutionPageShowsItsHistory: the page lists the runs, oldest first,
// with workers, outcomes and the error, and the flow's steps with long
// results cut; an execution never claimed says so and has no steps table.
func TestExecutionPageShowsItsHistory(t *testing.T) {
	e := newEnv(t)
	key := e.tenant("a")
	e.tenant("b")
	x := e.failThenSucceed("a")
	plain := e.submit("a", store.Submission{})

	b := e.browser()
	b.login(key)
	p := b.do("GET", "/executions/"+x.ID, nil)
	if p.status != http.StatusOK {
		t.Fatalf("GET the execution: %d %s", p.status, p.body)
	}
	attempts := section(p.body, `<table class="attempts">`)
	for _, want := range []string{"worker-a", `class="status failed"`, "card declined", "worker-b", `class="status succeeded"`} {
		if !strings.Contains(attempts, want) {
			t.Errorf("the attempts table lacks %q:\n%s", want, attempts)
		}
	}
	if strings.Index(attempts, "worker-a") > strings.Index(attempts, "worker-b") {
		t.Error("the attempts table is not oldest first")
	}
	steps := section(p.body, `<table class="steps">`)
	if !strings.Contains(steps, "reserve") || !strings.Contains(steps, "{&#34;seat&#34;:&#34;12A&#34;}") ||
		!strings.Contains(steps, "charge") || strings.Contains(steps, strings.Repeat("x", 200)) || !strings.Contains(steps, "...") {
		t.Errorf("the steps table:\n%s", steps)
	}

	p = b.do("GET", "/executions/"+plain.ID, nil)
	if !strings.Contains(p.body, "Not claimed yet.") || strings.Contains(p.body, `<table class="steps">`) {
		t.Errorf("an execution never claimed:\n%s", p.body)
	}

	other := e.browser()
	other.login(e.tenant("c"))
	if p := other.do("GET", "/executions/"+x.ID, nil); p.status != http.StatusNotFound || strings.Contains(p.body, "card declined") {
		t.Errorf("another tenant reading the page: %d", p.status)
	}
	admin := e.browser()
	admin.login(e.admin)
	if p := admin.do("GET", "/executions/"+x.ID, nil); p.status != http.StatusOK || !strings.Contains(p.body, "card declined") {
		t.Errorf("the admin reading the page: %d", p.status)
	}
}

// section is the HTML of body from start to the end of its table.
func section(body, start string) string {
	i := strings.Index(body, start)
	if i < 0 {
		return ""
	}
	s := body[i:]
	if j := strings.Index(s, "</table>"); j >= 0 {
		s = s[:j]
	}
	return s
}

// TestExecutionPageShowsTheFirstStepsOfALargeJournal: a journal of more
// steps than the page reads shows its first ones, in record order, and
// says the rest are read through the API.
func TestExecutionPageShowsTheFirstStepsOfALargeJournal(t *testing.T) {
	e := newEnv(t)
	key := e.tenant("a")
	x := e.submit("a", store.Submission{Kind: "flow"})
	l := e.claim("a", "worker-a")
	for i := range store.MaxListLimit + 1 {
		e.step(l, fmt.Sprintf("step-%04d", i), "1")
	}
	b := e.browser()
	b.login(key)
	p := b.do("GET", "/executions/"+x.ID, nil)
	steps := section(p.body, `<table class="steps">`)
	last := fmt.Sprintf("step-%04d", store.MaxListLimit-1)
	if !strings.Contains(steps, "step-0000") || !strings.Contains(steps, last) ||
		strings.Contains(steps, fmt.Sprintf("step-%04d", store.MaxListLimit)) {
		t.Errorf("the steps table of a journal of %d steps does not hold exactly the first %d", store.MaxListLimit+1,
			store.MaxListLimit)
	}
	if !strings.Contains(p.body, fmt.Sprintf("The timeline shows the first %d steps", store.MaxListLimit)) {
		t.Errorf("the page does not say the journal holds more steps")
	}
}

// TestExecutionPageCountsTheStepsItShows: when the steps' bytes end the
// page before its count does, the page says how many it shows.
func TestExecutionPageCountsTheStepsItShows(t *testing.T) {
	e := newEnv(t)
	key := e.tenant("a")
	x := e.submit("a", store.Submission{Kind: "flow"})
	l := e.claim("a", "worker-a")
	big := `"` + strings.Repeat("x", 1<<20) + `"` // 9 of them pass the page's 8 MiB
	for i := range 12 {
		e.step(l, fmt.Sprintf("step-%02d", i), big)
	}
	b := e.browser()
	b.login(key)
	p := b.do("GET", "/executions/"+x.ID, nil)
	steps := section(p.body, `<table class="steps">`)
	shown := strings.Count(steps, "step-")
	if shown == 0 || shown >= 12 {
		t.Fatalf("the steps table shows %d of 12 steps of 1 MiB, want the first ones within 8 MiB", shown)
	}
	if !strings.Contains(p.body, fmt.Sprintf("The timeline shows the first %d steps", shown)) {
		t.Errorf("the page does not say it shows the first %d steps", shown)
	}
}
