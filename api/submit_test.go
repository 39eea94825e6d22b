package api

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

func TestSubmitExecutionJSON(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.tenant("acme")
	r := e.do("POST", "/api/executions", key, `{"kind":"http","dedup_key":"order-123","payload":{"b":2,"a":[1, 2]}}`).want(http.StatusCreated)
	var m map[string]json.RawMessage
	r.decode(&m)
	want := []string{"execution_id", "tenant", "kind", "queue", "priority", "status", "dedup_key",
		"concurrency_key", "concurrency_limit", "rate_key", "payload", "result", "error", "attempt",
		"max_attempts", "timeout_seconds", "schedule", "created_at", "run_at", "started_at",
		"finished_at", "cancel_requested", "wake_at", "waiting_for", "parent_id", "parent_step", "dedup_hits",
		"last_dedup_hit_at", "deduplicated"} // and trace_parent, left out when there is none
	var got []string
	for k := range m {
		got = append(got, k)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("fields %v\nwant %v", got, want)
	}
	for _, k := range []string{"concurrency_key", "concurrency_limit", "rate_key", "result", "error", "schedule", "started_at", "finished_at", "wake_at", "waiting_for", "parent_id", "parent_step", "last_dedup_hit_at"} {
		if string(m[k]) != "null" {
			t.Errorf("%s = %s, want null", k, m[k])
		}
	}
	x := r.exec()
	if x.Tenant != "acme" || x.Kind != "http" || x.Queue != "default" || x.Priority != 0 ||
		x.Status != store.StatusQueued || *x.DedupKey != "order-123" || string(x.Payload) != `{"a":[1,2],"b":2}` ||
		x.Attempt != 0 || x.MaxAttempts != 3 || x.TimeoutSeconds != 300 || *x.Deduplicated {
		t.Fatalf("execution: %s", r.body)
	}
	for _, k := range []string{"created_at", "run_at"} {
		var s string
		json.Unmarshal(m[k], &s)
		if _, err := time.Parse(time.RFC3339, s); err != nil || !strings.HasSuffix(s, "Z") {
			t.Errorf("%s = %s, want RFC 3339 UTC", k, s)
		}
	}
	// deduplicated appears only in submit answers.
	g := e.do("GET", "/api/executions/"+x.ExecutionID, key, nil).want(http.StatusOK)
	if strings.Contains(string(g.body), "deduplicated") {
		t.Fatalf("GET has deduplicated: %s", g.body)
	}
	// Every option round-trips.
	y := e.submit(key, `{"kind":"k","queue":"q.1","priority":-5,"max_attempts":1,"timeout_seconds":9,
		"concurrency_key":"c","rate_key":"r","payload":null}`, http.StatusCreated)
	if y.Queue != "q.1" || y.Priority != -5 || y.MaxAttempts != 1 || y.TimeoutSeconds != 9 ||
		*y.ConcurrencyKey != "c" || *y.ConcurrencyLimit != 1 || *y.RateKey != "r" || string(y.Payload) != "{}" {
		t.Fatalf("options: %+v", y)
	}
	z := e.submit(key, `{"kind":"k","concurrency_key":"c","concurrency_limit":4}`, http.StatusCreated)
	if *z.ConcurrencyLimit != 4 {
		t.Fatalf("concurrency_limit %d", *z.ConcurrencyLimit)
	}
}

func TestSubmitDedup(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.tenant("acme")
	first := e.submit(key, `{"kind":"echo","dedup_key":"k","payload":{"a":1,"b":2}}`, http.StatusCreated)
	again := e.submit(key, `{"kind":"echo","dedup_key":"k","payload":{ "b": 2, "a": 1 }}`, http.StatusOK)
	if again.ExecutionID != first.ExecutionID || !*again.Deduplicated {
		t.Fatalf("dedup: %+v", again)
	}
	e.do("POST", "/api/executions", key, `{"kind":"echo","dedup_key":"k","payload":{"a":2}}`).
		problem(http.StatusUnprocessableEntity, CodeDedupKeyReused)
	e.do("POST", "/api/executions", key, `{"kind":"other","dedup_key":"k","payload":{"a":1,"b":2}}`).
		problem(http.StatusUnprocessableEntity, CodeDedupKeyReused)
	// The header is the same key.
	h := e.submit(key, `{"kind":"echo","payload":{"a":1,"b":2}}`, http.StatusOK, "Idempotency-Key", "k")
	if h.ExecutionID != first.ExecutionID {
		t.Fatal("Idempotency-Key did not dedup")
	}
	e.submit(key, `{"kind":"echo","dedup_key":"k","payload":{"a":1,"b":2}}`, http.StatusOK, "Idempotency-Key", "k")
	// A finished execution still holds its key.
	l := e.claimOne(key)
	e.do("POST", "/api/executions/"+l.ExecutionID+"/complete", key, `{"lease_token":"`+l.LeaseToken+`","result":{"ok":true}}`).want(http.StatusOK)
	done := e.submit(key, `{"kind":"echo","dedup_key":"k","payload":{"a":1,"b":2}}`, http.StatusOK)
	if done.Status != store.StatusSucceeded || string(done.Result) != `{"ok":true}` {
		t.Fatalf("after completion: %+v", done)
	}
	// Another tenant never shares the key.
	other := e.tenant("other")
	o := e.submit(other, `{"kind":"echo","dedup_key":"k","payload":{"a":1,"b":2}}`, http.StatusCreated)
	if o.ExecutionID == first.ExecutionID {
		t.Fatal("tenants share a dedup key")
	}
	// Force delete frees the key at once.
	e.do("DELETE", "/api/executions/"+first.ExecutionID+"?force=true", key, nil).want(http.StatusNoContent)
	fresh := e.submit(key, `{"kind":"echo","dedup_key":"k","payload":{"a":9}}`, http.StatusCreated)
	if fresh.ExecutionID == first.ExecutionID {
		t.Fatal("key still maps to the deleted execution")
	}
	if n := e.inflight("acme"); n != 1 {
		t.Fatalf("inflight %d, want 1", n)
	}
}

func TestSubmitQuota(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.tenant("acme", `,"max_inflight":1`)
	e.submit(key, `{"kind":"echo","dedup_key":"a"}`, http.StatusCreated)
	r := e.do("POST", "/api/executions", key, `{"kind":"echo","dedup_key":"b"}`)
	r.problem(http.StatusTooManyRequests, CodeQuotaExceeded)
	if ra := r.header.Get("Retry-After"); ra == "" || ra == "0" {
		t.Fatalf("Retry-After %q", ra)
	}
	// A dedup hit takes no quota.
	e.submit(key, `{"kind":"echo","dedup_key":"a"}`, http.StatusOK)
	if e.count() != 1 || e.inflight("acme") != 1 {
		t.Fatalf("count %d inflight %d", e.count(), e.inflight("acme"))
	}
}

func TestSubmitSchedule(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.tenant("acme")
	at := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	x := e.submit(key, `{"kind":"echo","run_at":"`+at.Format(time.RFC3339)+`"}`, http.StatusCreated)
	if x.Status != store.StatusScheduled || !x.RunAt.Equal(at) {
		t.Fatalf("run_at: %s %s", x.Status, x.RunAt)
	}
	// A zone offset is accepted and answered in UTC.
	x = e.submit(key, `{"kind":"echo","run_at":"`+at.In(time.FixedZone("X", 2*3600)).Format(time.RFC3339)+`"}`, http.StatusCreated)
	if !x.RunAt.Equal(at) || x.RunAt.Location() != time.UTC {
		t.Fatalf("run_at with offset: %s", x.RunAt)
	}
	before := time.Now()
	x = e.submit(key, `{"kind":"echo","delay_seconds":60}`, http.StatusCreated)
	if x.Status != store.StatusScheduled || x.RunAt.Before(before.Add(59*time.Second)) || x.RunAt.After(time.Now().Add(61*time.Second)) {
		t.Fatalf("delay: %s %s", x.Status, x.RunAt)
	}
	x = e.submit(key, `{"kind":"echo","run_at":"2001-01-01T00:00:00Z"}`, http.StatusCreated)
	if x.Status != store.StatusQueued {
		t.Fatalf("past run_at: %s", x.Status)
	}
	x = e.submit(key, `{"kind":"echo","delay_seconds":0}`, http.StatusCreated)
	if x.Status != store.StatusQueued {
		t.Fatalf("delay 0: %s", x.Status)
	}
}

// TestSubmitInvalidChangesNothing sends every kind of bad submit and checks
// each is refused with the right code, naming the field, and that nothing
// was written.
func TestSubmitInvalidChangesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) { c.MaxPayloadBytes = 1000 })
	key := e.tenant("acme")
	long := func(n int) string { return strings.Repeat("x", n) }
	for _, tc := range []struct {
		name    string
		body    string
		headers []string
		status  int
		code    Code
		mention string
	}{
		{"malformed", `{"kind":"echo"`, nil, 400, CodeInvalidRequest, "malformed JSON"},
		{"malformed value", `{"kind":echo}`, nil, 400, CodeInvalidRequest, "malformed JSON"},
		{"trailing data", `{"kind":"echo"} {"kind":"echo"}`, nil, 400, CodeInvalidRequest, "after the JSON object"},
		{"trailing garbage", `{"kind":"echo"}x`, nil, 400, CodeInvalidRequest, "body"},
		{"not an object", `["echo"]`, nil, 400, CodeInvalidRequest, "object"},
		{"null body", `null`, nil, 400, CodeInvalidRequest, "object"},
		{"empty body", ``, nil, 400, CodeInvalidRequest, "body"},
		{"unknown field", `{"kind":"echo","kindd":"x"}`, nil, 400, CodeInvalidRequest, "kindd"},
		{"wrong case", `{"Kind":"echo"}`, nil, 400, CodeInvalidRequest, "Kind"},
		{"duplicate field", `{"kind":"echo","kind":"other"}`, nil, 400, CodeInvalidRequest, "kind"},
		{"missing kind", `{"payload":{}}`, nil, 400, CodeInvalidRequest, "kind"},
		{"empty kind", `{"kind":""}`, nil, 400, CodeInvalidRequest, "kind"},
		{"long kind", `{"kind":"` + long(129) + `"}`, nil, 400, CodeInvalidRequest, "kind"},
		{"kind with newline", `{"kind":"a\nb"}`, nil, 400, CodeInvalidRequest, "kind"},
		{"kind number", `{"kind":7}`, nil, 400, CodeInvalidRequest, "kind"},
		{"empty dedup_key", `{"kind":"echo","dedup_key":""}`, nil, 400, CodeInvalidRequest, "dedup_key"},
		{"long dedup_key", `{"kind":"echo","dedup_key":"` + long(257) + `"}`, nil, 400, CodeInvalidRequest, "dedup_key"},
		{"dedup_key number", `{"kind":"echo","dedup_key":5}`, nil, 400, CodeInvalidRequest, "dedup_key"},
		{"idempotency differs", `{"kind":"echo","dedup_key":"a"}`, []string{"Idempotency-Key", "b"}, 400, CodeInvalidRequest, "Idempotency-Key"},
		{"long idempotency key", `{"kind":"echo"}`, []string{"Idempotency-Key", long(257)}, 400, CodeInvalidRequest, "Idempotency-Key"},
		{"priority string", `{"kind":"echo","priority":"1"}`, nil, 400, CodeInvalidRequest, "priority"},
		{"priority fraction", `{"kind":"echo","priority":1.5}`, nil, 400, CodeInvalidRequest, "priority"},
		{"priority huge", `{"kind":"echo","priority":99999999999}`, nil, 400, CodeInvalidRequest, "priority"},
		{"queue empty", `{"kind":"echo","queue":""}`, nil, 400, CodeInvalidRequest, "queue"},
		{"queue charset", `{"kind":"echo","queue":"a b"}`, nil, 400, CodeInvalidRequest, "queue"},
		{"queue long", `{"kind":"echo","queue":"` + long(129) + `"}`, nil, 400, CodeInvalidRequest, "queue"},
		{"run_at and delay", `{"kind":"echo","run_at":"2030-01-01T00:00:00Z","delay_seconds":5}`, nil, 400, CodeInvalidRequest, "delay_seconds"},
		{"run_at not rfc3339", `{"kind":"echo","run_at":"tomorrow"}`, nil, 400, CodeInvalidRequest, "run_at"},
		{"run_at no zone", `{"kind":"echo","run_at":"2030-01-01T00:00:00"}`, nil, 400, CodeInvalidRequest, "run_at"},
		{"run_at number", `{"kind":"echo","run_at":1700000000}`, nil, 400, CodeInvalidRequest, "run_at"},
		{"delay negative", `{"kind":"echo","delay_seconds":-1}`, nil, 400, CodeInvalidRequest, "delay_seconds"},
		{"max_attempts zero", `{"kind":"echo","max_attempts":0}`, nil, 400, CodeInvalidRequest, "max_attempts"},
		{"timeout zero", `{"kind":"echo","timeout_seconds":0}`, nil, 400, CodeInvalidRequest, "timeout_seconds"},
		{"limit without key", `{"kind":"echo","concurrency_limit":2}`, nil, 400, CodeInvalidRequest, "concurrency_limit"},
		{"limit zero", `{"kind":"echo","concurrency_key":"c","concurrency_limit":0}`, nil, 400, CodeInvalidRequest, "concurrency_limit"},
		{"empty rate_key", `{"kind":"echo","rate_key":""}`, nil, 400, CodeInvalidRequest, "rate_key"},
		{"unknown query", `{"kind":"echo"}`, []string{"X-Path", "?tenant=other"}, 400, CodeInvalidRequest, "tenant"},
		{"payload too large", `{"kind":"echo","payload":"` + long(1000) + `"}`, nil, 413, CodePayloadTooLarge, "payload"},
		{"body too large", `{"kind":"echo","payload":"` + long(80<<10) + `"}`, nil, 413, CodePayloadTooLarge, "exceeds"},
		{"no content type", `{"kind":"echo"}`, []string{"Content-Type", ""}, 415, CodeUnsupportedMediaType, "application/json"},
		{"text content type", `{"kind":"echo"}`, []string{"Content-Type", "text/plain"}, 415, CodeUnsupportedMediaType, "application/json"},
		{"form content type", `kind=echo`, []string{"Content-Type", "application/x-www-form-urlencoded"}, 415, CodeUnsupportedMediaType, "application/json"},
		{"latin1 charset", `{"kind":"echo"}`, []string{"Content-Type", "application/json; charset=latin1"}, 415, CodeUnsupportedMediaType, "UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := "/api/executions"
			headers := tc.headers
			if len(headers) == 2 && headers[0] == "X-Path" {
				path += headers[1]
				headers = nil
			}
			var body any = tc.body
			r := e.do("POST", path, key, body, headers...)
			p := r.problem(tc.status, tc.code)
			detailHas(t, p, tc.mention)
		})
	}
	if n := e.count(); n != 0 {
		t.Fatalf("%d executions written by refused submits", n)
	}
	if n := e.inflight("acme"); n != 0 {
		t.Fatalf("inflight %d after refused submits", n)
	}
	// Accepted forms of the content type.
	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON; charset=UTF-8"} {
		e.submit(key, `{"kind":"echo"}`, http.StatusCreated, "Content-Type", ct)
	}
}

// TestSubmitConcurrentSameKey: 64 concurrent submits with one dedup key get
// one execution: one 201 and 63 × 200, one row, quota taken once.
func TestSubmitConcurrentSameKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.tenant("acme")
	const n = 64
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		ids     = map[string]bool{}
		created int
		deduped int
		other   []string
		start   = make(chan struct{})
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			req, _ := http.NewRequest("POST", e.srv.URL+"/api/executions", strings.NewReader(`{"kind":"echo","dedup_key":"same","payload":{"n":1}}`))
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			res, err := e.srv.Client().Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer res.Body.Close()
			var x execution
			json.NewDecoder(res.Body).Decode(&x)
			mu.Lock()
			defer mu.Unlock()
			switch res.StatusCode {
			case http.StatusCreated:
				created++
			case http.StatusOK:
				deduped++
			default:
				other = append(other, res.Status)
			}
			ids[x.ExecutionID] = true
		}()
	}
	close(start)
	wg.Wait()
	if created != 1 || deduped != n-1 || len(other) != 0 || len(ids) != 1 {
		t.Fatalf("created %d deduplicated %d other %v ids %d", created, deduped, other, len(ids))
	}
	if c, in := e.count(), e.inflight("acme"); c != 1 || in != 1 {
		t.Fatalf("rows %d inflight %d", c, in)
	}
}

func TestSubmitPayloadBytes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.tenant("acme")
	// No HTML escaping, numbers as written, keys sorted: the canonical form
	// is answered byte for byte.
	x := e.submit(key, `{"kind":"echo","payload":{"z":"<b>&amp;</b>","a":1.50,"m":"é\u00e9"}}`, http.StatusCreated)
	if want := `{"a":1.50,"m":"éé","z":"<b>&amp;</b>"}`; string(x.Payload) != want {
		t.Fatalf("payload %s, want %s", x.Payload, want)
	}
	// Lengths count characters, not bytes.
	e.submit(key, `{"kind":"`+strings.Repeat("é", 128)+`"}`, http.StatusCreated)
	e.do("POST", "/api/executions", key, `{"kind":"`+strings.Repeat("é", 129)+`"}`).problem(http.StatusBadRequest, CodeInvalidRequest)
	e.submit(key, `{"kind":"echo","dedup_key":"`+strings.Repeat("ü", 256)+`"}`, http.StatusCreated)
	// Any JSON value is a payload.
	for _, p := range []string{`[1,2]`, `"s"`, `3`, `true`} {
		if x := e.submit(key, `{"kind":"echo","payload":`+p+`}`, http.StatusCreated); string(x.Payload) != p {
			t.Fatalf("payload %s answered as %s", p, x.Payload)
		}
	}
}
