package api

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

func TestBatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.tenant("acme", `,"max_inflight":3`)
	e.submit(key, `{"kind":"echo","dedup_key":"old","payload":{"v":1}}`, http.StatusCreated)
	var out batchResponse
	e.do("POST", "/api/executions/batch", key, `{"items":[
		{"kind":"echo","dedup_key":"a"},
		{"kind":"echo","dedup_key":"a"},
		{"kind":"echo","dedup_key":"old","payload":{"v":1}},
		{"kind":"echo","dedup_key":"old","payload":{"v":2}},
		{"kind":""},
		{"kind":"echo","bogus":1},
		"not an object",
		{"kind":"echo"},
		{"kind":"echo"}
	]}`).want(http.StatusOK).decode(&out)
	want := []struct {
		status int
		code   Code
	}{{201, ""}, {200, ""}, {200, ""}, {422, CodeDedupKeyReused}, {400, CodeInvalidRequest},
		{400, CodeInvalidRequest}, {400, CodeInvalidRequest}, {201, ""}, {429, CodeQuotaExceeded}}
	if len(out.Items) != len(want) {
		t.Fatalf("%d items, want %d", len(out.Items), len(want))
	}
	for i, w := range want {
		it := out.Items[i]
		if it.Status != w.status {
			t.Errorf("item %d: status %d, want %d (%+v)", i, it.Status, w.status, it.Error)
			continue
		}
		if w.code == "" {
			if it.Execution == nil || it.Error != nil {
				t.Errorf("item %d: %+v", i, it)
			}
			continue
		}
		if it.Execution != nil || it.Error == nil || it.Error.Code != w.code || it.Error.Status != w.status {
			t.Errorf("item %d: %+v, want code %s", i, it, w.code)
		}
	}
	if out.Items[0].Execution.ExecutionID != out.Items[1].Execution.ExecutionID || !*out.Items[1].Execution.Deduplicated {
		t.Fatal("two items with one dedup key got different executions")
	}
	if *out.Items[0].Execution.Deduplicated {
		t.Fatal("first item marked deduplicated")
	}
	for i, field := range map[int]string{4: "items[4].kind", 5: "items[5].bogus", 6: "items[6]"} {
		if !strings.Contains(out.Items[i].Error.Detail, field) {
			t.Errorf("item %d detail %q does not name %s", i, out.Items[i].Error.Detail, field)
		}
	}
	if c, in := e.count(), e.inflight("acme"); c != 3 || in != 3 {
		t.Fatalf("rows %d inflight %d, want 3 3", c, in)
	}
}

func TestBatchLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.tenant("acme")
	p := e.do("POST", "/api/executions/batch", key, `{"items":[]}`).problem(http.StatusBadRequest, CodeInvalidRequest)
	detailHas(t, p, "items")
	e.do("POST", "/api/executions/batch", key, `{}`).problem(http.StatusBadRequest, CodeInvalidRequest)
	e.do("POST", "/api/executions/batch", key, `{"items":{}}`).problem(http.StatusBadRequest, CodeInvalidRequest)
	e.do("POST", "/api/executions/batch", key, `{"items":[{"kind":"echo"}]}`, "Idempotency-Key", "x").
		problem(http.StatusBadRequest, CodeInvalidRequest)
	items := strings.Repeat(`{"kind":"echo"},`, 1001)
	p = e.do("POST", "/api/executions/batch", key, `{"items":[`+strings.TrimSuffix(items, ",")+`]}`).
		problem(http.StatusBadRequest, CodeInvalidRequest)
	detailHas(t, p, "1000")
	if n := e.count(); n != 0 {
		t.Fatalf("%d executions after refused batches", n)
	}

	var b strings.Builder
	for i := range 1000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"kind":"echo","dedup_key":"k%d"}`, i%500)
	}
	var out batchResponse
	e.do("POST", "/api/executions/batch", key, `{"items":[`+b.String()+`]}`).want(http.StatusOK).decode(&out)
	created, deduped := 0, 0
	for _, it := range out.Items {
		switch it.Status {
		case 201:
			created++
		case 200:
			deduped++
		}
	}
	if created != 500 || deduped != 500 || e.count() != 500 {
		t.Fatalf("created %d deduplicated %d rows %d", created, deduped, e.count())
	}

	small := newEnv(t, func(c *Config) { c.MaxBatchBytes = 1000 })
	skey := small.tenant("acme")
	small.do("POST", "/api/executions/batch", skey, `{"items":[{"kind":"`+strings.Repeat("x", 1000)+`"}]}`).
		problem(http.StatusRequestEntityTooLarge, CodePayloadTooLarge)
}

// A batch item answers only the statuses docs/api.md lists for items (201, 200,
// 422, 429, 400): an over-large payload, 413 when submitted alone, is a 400
// item with code payload_too_large whose detail names the limit. A 429
// item carries retry_after_seconds, since it has no Retry-After header.
func TestBatchItemStatuses(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) { c.MaxPayloadBytes = 100 })
	key := e.tenant("acme", `,"max_inflight":1`)
	big := `{"kind":"echo","payload":"` + strings.Repeat("x", 200) + `"}`
	var out batchResponse
	e.do("POST", "/api/executions/batch", key, `{"items":[`+big+`,{"kind":"echo"},{"kind":"echo"}]}`).
		want(http.StatusOK).decode(&out)
	if len(out.Items) != 3 {
		t.Fatalf("%d items", len(out.Items))
	}
	tooBig := out.Items[0]
	if tooBig.Status != http.StatusBadRequest || tooBig.Error == nil || tooBig.Error.Code != CodePayloadTooLarge ||
		tooBig.Error.Status != http.StatusBadRequest || tooBig.Execution != nil {
		t.Fatalf("over-large item: %+v %+v", tooBig, tooBig.Error)
	}
	detailHas(t, tooBig.Error, "items[0].payload")
	detailHas(t, tooBig.Error, "limit of 100")
	if tooBig.Error.RetryAfterSeconds != 0 {
		t.Fatalf("400 item with retry_after_seconds %d", tooBig.Error.RetryAfterSeconds)
	}
	if out.Items[1].Status != http.StatusCreated {
		t.Fatalf("item 1: %+v", out.Items[1])
	}
	quota := out.Items[2]
	if quota.Status != http.StatusTooManyRequests || quota.Error == nil || quota.Error.Code != CodeQuotaExceeded ||
		quota.Error.RetryAfterSeconds != quotaRetryAfter {
		t.Fatalf("quota item: %+v %+v", quota, quota.Error)
	}
	// On the wire: the field's name, and the integer.
	r := e.do("POST", "/api/executions/batch", key, `{"items":[{"kind":"echo"}]}`).want(http.StatusOK)
	if !strings.Contains(string(r.body), `"status":429`) || !strings.Contains(string(r.body), `"retry_after_seconds":5`) {
		t.Fatalf("429 item on the wire: %s", r.body)
	}

	// Alone, the same payload is still 413, and a 429 is told by its header.
	e.do("POST", "/api/executions", key, big).problem(http.StatusRequestEntityTooLarge, CodePayloadTooLarge)
	r = e.do("POST", "/api/executions", key, `{"kind":"echo"}`)
	r.problem(http.StatusTooManyRequests, CodeQuotaExceeded)
	if r.header.Get("Retry-After") != "5" || strings.Contains(string(r.body), "retry_after_seconds") {
		t.Fatalf("single 429: Retry-After %q, body %s", r.header.Get("Retry-After"), r.body)
	}
}
