package api

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

func TestGetWaitReturnsWhenCompleted(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) { c.PollInterval = time.Hour }) // only the notifier wakes
	key := e.tenant("acme")
	x := e.submit(key, `{"kind":"echo","payload":{"hi":1}}`, http.StatusCreated)

	done := make(chan *resp, 1)
	start := time.Now()
	go func() { done <- e.do("GET", "/api/executions/"+x.ExecutionID+"?wait_seconds=30", key, nil) }()

	l := e.claimOne(key)
	e.do("POST", "/api/executions/"+l.ExecutionID+"/complete", key, `{"lease_token":"`+l.LeaseToken+`","result":{"hi":1}}`).want(http.StatusOK)
	r := <-done
	got := r.want(http.StatusOK).exec()
	if got.Status != store.StatusSucceeded || string(got.Result) != `{"hi":1}` || got.FinishedAt == nil || got.StartedAt == nil {
		t.Fatalf("after wait: %s", r.body)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("wait took %s", d)
	}
}

func TestGetWaitTimesOut(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.tenant("acme")
	x := e.submit(key, `{"kind":"echo"}`, http.StatusCreated)
	start := time.Now()
	got := e.do("GET", "/api/executions/"+x.ExecutionID+"?wait_seconds=1", key, nil).want(http.StatusOK).exec()
	if d := time.Since(start); d < time.Second || d > 5*time.Second {
		t.Fatalf("wait of 1s took %s", d)
	}
	if got.Status != store.StatusQueued {
		t.Fatalf("status %s", got.Status)
	}
	// A terminal execution answers at once.
	e.do("POST", "/api/executions/"+x.ExecutionID+"/cancel", key, nil).want(http.StatusOK)
	start = time.Now()
	e.do("GET", "/api/executions/"+x.ExecutionID+"?wait_seconds=60", key, nil).want(http.StatusOK)
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("wait on terminal took %s", d)
	}
	for _, bad := range []string{"61", "-1", "x", "1.5", "1&wait_seconds=2"} {
		p := e.do("GET", "/api/executions/"+x.ExecutionID+"?wait_seconds="+bad, key, nil).problem(http.StatusBadRequest, CodeInvalidRequest)
		detailHas(t, p, "wait_seconds")
	}
	e.do("GET", "/api/executions/nope?wait_seconds=5", key, nil).problem(http.StatusNotFound, CodeNotFound)
	p := e.do("GET", "/api/executions/"+x.ExecutionID+"?wait=5", key, nil).problem(http.StatusBadRequest, CodeInvalidRequest)
	detailHas(t, p, "wait")
}

func TestListPagination(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.tenant("acme")
	var ids []string
	for i := range 7 {
		kind := "a"
		if i%2 == 1 {
			kind = "b"
		}
		x := e.submit(key, fmt.Sprintf(`{"kind":%q,"queue":"q%d","dedup_key":"d%d"}`, kind, i%3, i), http.StatusCreated)
		ids = append(ids, x.ExecutionID)
	}
	var seen []string
	cursor := ""
	pages := 0
	for {
		path := "/api/executions?limit=3"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		var page listResponse
		e.do("GET", path, key, nil).want(http.StatusOK).decode(&page)
		pages++
		for _, it := range page.Items {
			seen = append(seen, it.ExecutionID)
		}
		if page.NextCursor == nil {
			break
		}
		cursor = *page.NextCursor
		if pages > 5 {
			t.Fatal("pagination does not end")
		}
	}
	if pages != 3 || len(seen) != 7 {
		t.Fatalf("%d pages, %d items", pages, len(seen))
	}
	for i, id := range seen { // newest first
		if id != ids[len(ids)-1-i] {
			t.Fatalf("order: got %v, submitted %v", seen, ids)
		}
	}

	count := func(q string) int {
		var page listResponse
		e.do("GET", "/api/executions?"+q, key, nil).want(http.StatusOK).decode(&page)
		if page.Items == nil {
			t.Fatalf("%s: items is null", q)
		}
		return len(page.Items)
	}
	for q, want := range map[string]int{
		"kind=a": 4, "kind=b": 3, "queue=q0": 3, "dedup_key=d3": 1, "status=queued": 7,
		"status=running": 0, "schedule=nightly": 0, "kind=a&queue=q0": 2, "status=&kind=": 7,
	} {
		if got := count(q); got != want {
			t.Errorf("%s: %d items, want %d", q, got, want)
		}
	}
	var empty listResponse
	r := e.do("GET", "/api/executions?kind=none", key, nil).want(http.StatusOK)
	r.decode(&empty)
	if string(r.body) != "{\"items\":[],\"next_cursor\":null}\n" {
		t.Fatalf("empty page: %s", r.body)
	}

	for q, field := range map[string]string{
		"status=done": "status", "limit=0": "limit", "limit=501": "limit", "limit=x": "limit",
		"cursor=!!!": "cursor", "cursor=" + base64.StdEncoding.EncodeToString([]byte{0xff, 0xfe}): "cursor",
		"statuss=queued": "statuss", "tenant=other": "tenant",
	} {
		p := e.do("GET", "/api/executions?"+q, key, nil).problem(http.StatusBadRequest, CodeInvalidRequest)
		detailHas(t, p, field)
	}
}
