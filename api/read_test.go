package api

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strings"
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
	// id_prefix: the executions whose id starts with it, newest first.
	for _, n := range []int{8, 13, 30, 36} {
		prefix := ids[3][:n]
		var want []string
		for i := len(ids) - 1; i >= 0; i-- {
			if strings.HasPrefix(ids[i], prefix) {
				want = append(want, ids[i])
			}
		}
		var page listResponse
		e.do("GET", "/api/executions?id_prefix="+prefix, key, nil).want(http.StatusOK).decode(&page)
		var got []string
		for _, x := range page.Items {
			got = append(got, x.ExecutionID)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("id_prefix=%s: %v, want %v", prefix, got, want)
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
		"id_prefix=0190abc": "id_prefix", "id_prefix=0190ABCD": "id_prefix", "id_prefix=0190abcd0": "id_prefix",
		"id_prefix=" + ids[0][:8] + "&parent_id=" + ids[0]: "id_prefix",
	} {
		p := e.do("GET", "/api/executions?"+q, key, nil).problem(http.StatusBadRequest, CodeInvalidRequest)
		detailHas(t, p, field)
	}
}

// A cursor must be what next_cursor gives: the base64url of an execution
// id, which is a UUID.
func TestListCursorMustHoldAnExecutionID(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.tenant("acme")
	id := "0193a6e4-7c1e-7b3a-9f1e-2d9c3e8a4b10"
	e.do("GET", "/api/executions?cursor="+encodeCursor(id), key, nil).want(http.StatusOK)
	for _, c := range []string{
		"Zm9v", // "foo"
		encodeCursor("not-a-uuid"),
		encodeCursor(strings.ToUpper(id)),
		encodeCursor("{" + id + "}"),
		encodeCursor(strings.ReplaceAll(id, "-", "")),
		encodeCursor(id + " "),
		encodeCursor(id) + "=",
		base64.StdEncoding.EncodeToString([]byte(id)) + "==",
		strings.Repeat("A", 10000),
	} {
		p := e.do("GET", "/api/executions?cursor="+c, key, nil).problem(http.StatusBadRequest, CodeInvalidRequest)
		detailHas(t, p, "cursor")
	}
}

// A page is bounded by bytes as well as by limit: once its payloads and
// results reach MaxListBytes it is cut (never below one item) and
// next_cursor leads on.
func TestListPageIsBoundedByBytes(t *testing.T) {
	t.Parallel()
	if d := newEnv(t).api.cfg.MaxListBytes; d != 8<<20 {
		t.Fatalf("default MaxListBytes %d, want 8 MiB", d)
	}
	e := newEnv(t, func(c *Config) { c.MaxListBytes = 2000 })
	key := e.tenant("acme")
	var ids []string
	for i := range 5 {
		body := fmt.Sprintf(`{"kind":"echo","payload":{"n":%d,"pad":%q}}`, i, strings.Repeat("x", 1000))
		ids = append(ids, e.submit(key, body, http.StatusCreated).ExecutionID)
	}
	small := e.submit(key, `{"kind":"echo"}`, http.StatusCreated).ExecutionID
	ids = append(ids, small)
	var sizes []int
	var seen []string
	path := "/api/executions?limit=500"
	for range 10 {
		var page listResponse
		e.do("GET", path, key, nil).want(http.StatusOK).decode(&page)
		sizes = append(sizes, len(page.Items))
		for _, it := range page.Items {
			seen = append(seen, it.ExecutionID)
		}
		if page.NextCursor == nil {
			break
		}
		path = "/api/executions?limit=500&cursor=" + *page.NextCursor
	}
	// Newest first, payloads of ~2 and ~1016 bytes: the small one and two
	// big ones reach 2000 bytes; the next two big ones do; the last one.
	if fmt.Sprint(sizes) != "[3 2 1]" {
		t.Fatalf("page sizes %v, want [3 2 1]", sizes)
	}
	slices.Reverse(ids)
	if !slices.Equal(seen, ids) {
		t.Fatalf("paged through %v, want %v", seen, ids)
	}

	// A bound below one item's size still answers one item per page.
	one := newEnv(t, func(c *Config) { c.MaxListBytes = 10 })
	okey := one.tenant("acme")
	one.submit(okey, `{"kind":"echo","payload":{"pad":"`+strings.Repeat("y", 100)+`"}}`, http.StatusCreated)
	one.submit(okey, `{"kind":"echo","payload":{"pad":"`+strings.Repeat("y", 100)+`"}}`, http.StatusCreated)
	var page listResponse
	one.do("GET", "/api/executions?limit=500", okey, nil).want(http.StatusOK).decode(&page)
	if len(page.Items) != 1 || page.NextCursor == nil {
		t.Fatalf("page under a tiny bound: %d items, next %v", len(page.Items), page.NextCursor)
	}
}

// TestListScanBound: a filtered GET /api/executions examines at most
// ListScan executions. A filter the newest ones do not match answers a page
// with no items and a next_cursor; following next_cursor to null finds every
// match once, newest first.
func TestListScanBound(t *testing.T) {
	t.Parallel()
	if d := newEnv(t).api.cfg.ListScan; d != store.DefaultListScan {
		t.Fatalf("default ListScan %d, want %d", d, store.DefaultListScan)
	}
	e := newEnv(t, func(c *Config) { c.ListScan = 5 })
	key := e.tenant("acme")
	var want []string
	for i := range 24 {
		kind := "common"
		if i%6 == 0 && i < 12 {
			kind = "rare"
		}
		id := e.submit(key, `{"kind":"`+kind+`"}`, http.StatusCreated).ExecutionID
		if kind == "rare" {
			want = append([]string{id}, want...)
		}
	}
	var pages, empty int
	var seen []string
	path := "/api/executions?kind=rare&limit=1"
	for {
		var page listResponse
		e.do("GET", path, key, nil).want(http.StatusOK).decode(&page)
		pages++
		if len(page.Items) == 0 && page.NextCursor != nil {
			empty++
		}
		for _, it := range page.Items {
			seen = append(seen, it.ExecutionID)
		}
		if page.NextCursor == nil {
			break
		}
		if pages > 30 {
			t.Fatal("paging did not end")
		}
		path = "/api/executions?kind=rare&limit=1&cursor=" + *page.NextCursor
	}
	if !slices.Equal(seen, want) {
		t.Fatalf("paged through %v, want %v", seen, want)
	}
	// The newest 12 are common: the first two pages examine 5 each and
	// find nothing.
	if empty < 2 {
		t.Fatalf("%d empty pages with a next_cursor in %d pages, want at least 2", empty, pages)
	}
}
