package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/latch-run/latch/store"
)

// countingWriter is a ResponseWriter that keeps nothing of the body but its
// length, so that a measure of the handler's allocation leaves out the
// answer's own copy.
type countingWriter struct {
	h      http.Header
	status int
	n      int
}

func (w *countingWriter) Header() http.Header         { return w.h }
func (w *countingWriter) WriteHeader(status int)      { w.status = status }
func (w *countingWriter) Write(b []byte) (int, error) { w.n += len(b); return len(b), nil }

// bigJournal records n steps of 1 MiB each under l, straight in the store.
func bigJournal(t *testing.T, e *testEnv, l lease, n int) {
	t.Helper()
	result := json.RawMessage(`"` + strings.Repeat("x", 1<<20-2) + `"`)
	for i := range n {
		if _, err := e.store.RecordStep(context.Background(), &store.RecordStepParams{ExecutionID: l.ExecutionID,
			Tenant: l.Tenant, Token: l.LeaseToken, Name: fmt.Sprintf("step-%03d", i), Result: result}); err != nil {
			t.Fatal(err)
		}
	}
}

// allocated is what one call of the handler allocates, in bytes.
func allocated(h http.Handler, req *http.Request) (int64, *countingWriter) {
	w := &countingWriter{h: http.Header{}}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	h.ServeHTTP(w, req)
	runtime.ReadMemStats(&after)
	return int64(after.TotalAlloc - before.TotalAlloc), w
}

// TestStepsReadMemoryIsBounded: one read of a 40 MiB journal allocates a
// few times one page (the list's bound of bytes, here 2 MiB), not the
// journal: the page is cut by bytes in the store, before the results are
// read. (Reading, decoding and encoding a page copies it a few times.)
func TestStepsReadMemoryIsBounded(t *testing.T) {
	const pageBytes = 2 << 20
	e := newEnv(t, func(c *Config) { c.MaxListBytes = pageBytes })
	key := e.tenant("acme")
	e.submit(key, `{"kind":"flow"}`, http.StatusCreated)
	l := e.claimOne(key, `,"lease_seconds":600`) // recording 40 MiB outlasts the default lease on a loaded machine
	const steps = 40
	bigJournal(t, e, l, steps)

	req := httptest.NewRequest("GET", "/api/executions/"+l.ExecutionID+"/steps", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	got, w := allocated(e.api, req)
	const journal = steps << 20
	t.Logf("one page of a %d MiB journal: %.1f MiB allocated, %.1f MiB answered", journal>>20,
		float64(got)/(1<<20), float64(w.n)/(1<<20))
	if w.status != http.StatusOK {
		t.Fatalf("status %d", w.status)
	}
	if w.n > pageBytes+2<<20 {
		t.Errorf("one page answered %d bytes, want about the list's bound (%d)", w.n, pageBytes)
	}
	if got > 8*pageBytes || got > journal/2 {
		t.Errorf("one page of a %d-byte journal allocated %d bytes, want a few pages (%d bytes each), well below the journal",
			journal, got, pageBytes)
	}

	// Paging on reads every step once, in record order.
	var names []string
	cursor := ""
	for range steps {
		var page struct {
			Items      []step  `json:"items"`
			NextCursor *string `json:"next_cursor"`
		}
		e.do("GET", "/api/executions/"+l.ExecutionID+"/steps?limit=500"+cursor, key, nil).want(http.StatusOK).decode(&page)
		for _, st := range page.Items {
			names = append(names, st.Name)
		}
		if page.NextCursor == nil {
			break
		}
		cursor = "&cursor=" + *page.NextCursor
	}
	if len(names) != steps || names[0] != "step-000" || names[steps-1] != fmt.Sprintf("step-%03d", steps-1) {
		t.Errorf("paging through the journal: %d steps (%v…), want %d in record order", len(names), names[:min(3, len(names))], steps)
	}
	wantCode(t, e.do("GET", "/api/executions/"+l.ExecutionID+"/steps?cursor=bm9wZQ", key, nil), http.StatusBadRequest,
		CodeInvalidRequest)
}

// TestLeaseCarriesABoundedJournal: the lease of a flow resumed with a
// journal of 40 MiB carries about store.ClaimJournalBytes of it, says so
// (steps_complete false), and its claim allocates about that much.
func TestLeaseCarriesABoundedJournal(t *testing.T) {
	e := newEnv(t)
	key := e.tenant("acme")
	e.submit(key, `{"kind":"flow"}`, http.StatusCreated)
	l := e.claimOne(key, `,"lease_seconds":600`) // recording 40 MiB outlasts the default lease on a loaded machine
	const steps = 40
	bigJournal(t, e, l, steps)
	e.suspendOn(key, l, `"step":"nap","until":"2000-01-01T00:00:00Z"`).want(http.StatusOK)

	req := httptest.NewRequest("POST", "/api/workers/claim", strings.NewReader(`{"worker_id":"w"}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	got, w := allocated(e.api, req)
	t.Logf("the claim of a %d MiB journal: %.1f MiB allocated, %.1f MiB answered", steps, float64(got)/(1<<20),
		float64(w.n)/(1<<20))
	if w.status != http.StatusOK || w.n > 3*store.ClaimJournalBytes {
		t.Errorf("claim: status %d, %d bytes; want 200 and about %d", w.status, w.n, store.ClaimJournalBytes)
	}
	if got > steps<<20/2 {
		t.Errorf("the claim of a %d MiB journal allocated %d bytes, want well below the journal", steps, got)
	}
}
