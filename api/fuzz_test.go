package api

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/latch-run/latch/schedule"
	"github.com/latch-run/latch/store"
)

// Fuzz targets for the request decoders. Seeds live in testdata/fuzz/;
// run one with e.g. go test -fuzz FuzzSubmitDecode ./api.

// checkRefusal: a decoder refuses only with a 400 or 413 problem.
func checkRefusal(t *testing.T, err error) {
	var p *Problem
	if !errors.As(err, &p) || (p.Status != http.StatusBadRequest && p.Status != http.StatusRequestEntityTooLarge) {
		t.Fatalf("refusal is not a 400/413 problem: %#v", err)
	}
	if p.Detail == "" || !utf8.ValidString(p.Detail) {
		t.Fatalf("bad detail %q", p.Detail)
	}
}

func FuzzSubmitDecode(f *testing.F) {
	f.Add([]byte(`{"kind":"echo","payload":{"b":1,"a":[1,2.50,"x"]},"dedup_key":"k"}`), "")
	f.Add([]byte(`{"kind":"echo","run_at":"2030-01-01T00:00:00+02:00","concurrency_key":"c","concurrency_limit":3}`), "k")
	f.Add([]byte(`{"kind":"echo","delay_seconds":5,"run_at":"x"}`), "")
	f.Add([]byte(`{"kind":1}`), "")
	f.Add([]byte(`{"kind":"e","kind":"f"}`), "")
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, body []byte, idem string) {
		var req submitRequest
		if idem != "" {
			req.idempotencyKey = &idem
		}
		err := decodeJSON(body, &req, "")
		var sub store.Submission
		if err == nil {
			sub, err = req.submission(now, 1000, "")
		}
		if err != nil {
			checkRefusal(t, err)
			return
		}
		if n := utf8.RuneCountInString(sub.Kind); n < 1 || n > maxKindLen {
			t.Fatalf("accepted kind of %d characters", n)
		}
		if len(sub.DedupKey) > 4*maxKeyFieldLen {
			t.Fatalf("accepted dedup_key of %d bytes", len(sub.DedupKey))
		}
		if idem != "" && sub.DedupKey != idem {
			t.Fatalf("Idempotency-Key %q lost: dedup_key %q", idem, sub.DedupKey)
		}
		if !json.Valid(sub.Payload) || len(sub.Payload) > 1000 {
			t.Fatalf("accepted payload %q", sub.Payload)
		}
		again, err := store.CanonicalJSON(sub.Payload)
		if err != nil || !bytes.Equal(again, sub.Payload) {
			t.Fatalf("payload not canonical: %q vs %q", sub.Payload, again)
		}
		if sub.ConcurrencyLimit != 0 && sub.ConcurrencyKey == "" {
			t.Fatal("concurrency_limit without key")
		}
		if sub.MaxAttempts < 0 || sub.TimeoutSeconds < 0 {
			t.Fatalf("negative settings %+v", sub)
		}
	})
}

func FuzzBatchDecode(f *testing.F) {
	f.Add([]byte(`{"items":[{"kind":"a"},{"kind":""},"x",null,{"kind":"b","dedup_key":"k"}]}`))
	f.Add([]byte(`{"items":{}}`))
	f.Add([]byte(`{"items":[]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var req batchRequest
		err := decodeJSON(body, &req, "")
		if err == nil {
			err = req.validate()
		}
		if err != nil {
			checkRefusal(t, err)
			return
		}
		for _, raw := range req.Items {
			var item submitRequest
			err := decodeJSON(raw, &item, "items[0].")
			if err == nil {
				_, err = item.submission(time.Now(), 1000, "items[0].")
			}
			if err != nil {
				checkRefusal(t, err)
			}
		}
	})
}

func FuzzClaimDecode(f *testing.F) {
	f.Add([]byte(`{"worker_id":"w","queues":["default"],"kinds":["echo"],"max":10,"lease_seconds":30,"wait_seconds":5}`))
	f.Add([]byte(`{"worker_id":"w","queues":[1]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var req claimRequest
		err := decodeJSON(body, &req, "")
		if err == nil {
			err = req.validate()
		}
		if err != nil {
			checkRefusal(t, err)
			return
		}
		if req.WorkerID == nil || *req.WorkerID == "" {
			t.Fatal("accepted a claim without worker_id")
		}
		if m := orDefault(req.Max, defaultClaimMax); m < 1 || m > maxClaimMax {
			t.Fatalf("accepted max %d", m)
		}
	})
}

func FuzzWorkerCallDecode(f *testing.F) {
	f.Add([]byte(`{"lease_token":"t","lease_seconds":30}`))
	f.Add([]byte(`{"lease_token":"t","result":{"a":1}}`))
	f.Add([]byte(`{"lease_token":"t","error":"boom","retry":false,"retry_after_seconds":3}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, req := range []interface{ validate() error }{&heartbeatRequest{}, &completeRequest{}, &failRequest{}, &releaseRequest{}} {
			err := decodeJSON(body, req, "")
			if err == nil {
				err = req.validate()
			}
			if err != nil {
				checkRefusal(t, err)
			}
		}
	})
}

func FuzzTenantDecode(f *testing.F) {
	f.Add([]byte(`{"name":"acme","max_inflight":5,"dedup_ttl_seconds":60,"retention_seconds":60}`))
	f.Add([]byte(`{"name":"ACME"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var req createTenantRequest
		err := decodeJSON(body, &req, "")
		if err == nil {
			err = req.validate()
		}
		if err != nil {
			checkRefusal(t, err)
			return
		}
		if checkTenantName("name", *req.Name) != nil {
			t.Fatalf("accepted name %q", *req.Name)
		}
	})
}

func FuzzScheduleDecode(f *testing.F) {
	f.Add([]byte(`{"cron":"0 9 * * mon-fri","timezone":"Europe/Berlin","kind":"http","payload":{"b":1,"a":2},"queue":"q","priority":-1,"max_attempts":2,"timeout_seconds":60,"rate_key":"r","overlap":"queue","catchup":"none","enabled":false}`), "nightly")
	f.Add([]byte(`{"name":"s","tenant":"acme","cron":null,"every":"1h30m","timezone":"UTC","kind":"echo","payload":{},"queue":"default","priority":0,"max_attempts":3,"timeout_seconds":300,"rate_key":null,"overlap":"skip","catchup":"one","enabled":true,"next_run_at":"2030-01-01T01:30:00Z","last_run_at":null,"last_execution_id":null,"running":false,"created_at":"2030-01-01T00:00:00Z","updated_at":"2030-01-01T00:00:00Z"}`), "s")
	f.Add([]byte(`{"cron":"* * * * *","every":"1m","kind":"echo"}`), "s")
	f.Add([]byte(`{"every":"0.5s","kind":"echo","timezone":"Local"}`), "a b")
	now := time.Date(2030, 1, 1, 0, 7, 30, 0, time.UTC)
	f.Fuzz(func(t *testing.T, body []byte, name string) {
		req := putScheduleRequest{path: name}
		err := decodeJSON(body, &req, "")
		if err == nil {
			err = req.validate()
		}
		var sc store.Schedule
		if err == nil {
			sc, err = req.schedule("acme", now, 1000)
		}
		if err != nil {
			checkRefusal(t, err)
			return
		}
		if checkScheduleName("name", sc.Name) != nil || sc.Name != name {
			t.Fatalf("accepted name %q for path %q", sc.Name, name)
		}
		if err := store.ValidateSchedule(&sc); err != nil {
			t.Fatalf("accepted a schedule the store refuses: %v", err)
		}
		if n := utf8.RuneCountInString(sc.Kind); n < 1 || n > maxKindLen {
			t.Fatalf("accepted kind of %d characters", n)
		}
		if sc.Every != 0 {
			if sc.Every < time.Second || sc.Every%time.Second != 0 {
				t.Fatalf("accepted every %s", sc.Every)
			}
			// The answer's every is read back as the same interval.
			if d, err := schedule.ParseEvery(formatEvery(sc.Every)); err != nil || d != sc.Every {
				t.Fatalf("every %s answered %q, read back as %s, %v", sc.Every, formatEvery(sc.Every), d, err)
			}
		}
		if !sc.NextRunAt.After(now) || sc.NextRunAt.Nanosecond() != 0 || sc.NextRunAt.Location() != time.UTC {
			t.Fatalf("next run %s after %s", sc.NextRunAt, now)
		}
		if !json.Valid(sc.Payload) || len(sc.Payload) > 1000 {
			t.Fatalf("accepted payload %q", sc.Payload)
		}
		if again, err := store.CanonicalJSON(sc.Payload); err != nil || !bytes.Equal(again, sc.Payload) {
			t.Fatalf("payload not canonical: %q vs %q", sc.Payload, again)
		}
		if sc.MaxAttempts < 0 || sc.TimeoutSeconds < 0 {
			t.Fatalf("negative settings %+v", sc)
		}
	})
}

func FuzzRateLimitDecode(f *testing.F) {
	f.Add([]byte(`{"rate":10,"per_seconds":60,"burst":5}`), "example.com")
	f.Add([]byte(`{"key":"k","rate":1,"per_seconds":1,"burst":1,"created_at":"2030-01-01T00:00:00Z","updated_at":"2030-01-01T00:00:00Z"}`), "k")
	f.Add([]byte(`{"rate":1000001,"per_seconds":0}`), "k")
	f.Fuzz(func(t *testing.T, body []byte, key string) {
		req := putRateLimitRequest{path: key}
		err := decodeJSON(body, &req, "")
		if err == nil {
			err = req.validate()
		}
		if err != nil {
			checkRefusal(t, err)
			return
		}
		l := req.limit("acme")
		if err := l.Validate(); err != nil {
			t.Fatalf("accepted a limit the store refuses: %v", err)
		}
		if l.Key != key || checkText("key", l.Key, maxKeyFieldLen) != nil {
			t.Fatalf("accepted key %q for path %q", l.Key, key)
		}
		if l.Rate > maxRate || l.Burst > maxBurst || l.Per > maxPerSeconds*time.Second || l.Per%time.Second != 0 {
			t.Fatalf("accepted %+v", l)
		}
	})
}

func FuzzListQuery(f *testing.F) {
	f.Add("status=queued&limit=10&cursor=" + encodeCursor("0193a6e4-7c1e-7b3a-9f1e-2d9c3e8a4b10"))
	f.Add("limit=0&x=1")
	f.Add("cursor=%zz")
	f.Fuzz(func(t *testing.T, rawQuery string) {
		r := httptest.NewRequest("GET", "/api/executions", nil)
		r.URL.RawQuery = rawQuery
		var req listRequest
		if err := req.bind(r); err != nil {
			checkRefusal(t, err)
			return
		}
		p := req.params
		if p.Limit < 1 || p.Limit > store.MaxListLimit || (p.Status != "" && !p.Status.Valid()) {
			t.Fatalf("accepted %+v", p)
		}
		if p.After != "" {
			if back, ok := decodeCursor(encodeCursor(p.After)); !ok || back != p.After {
				t.Fatalf("cursor round trip of %q", p.After)
			}
		}
	})
}

// FuzzScheduleListQuery: GET /api/schedules's page parameters are refused
// as a 400 naming them or accepted within bounds, and an accepted cursor
// survives a round trip.
func FuzzScheduleListQuery(f *testing.F) {
	f.Add("limit=2&cursor=" + encodeNameCursor("acme", "nightly"))
	f.Add("cursor=" + base64.RawURLEncoding.EncodeToString([]byte(`["a",""]`)))
	f.Add("limit=1001&y=2")
	f.Fuzz(func(t *testing.T, rawQuery string) {
		r := httptest.NewRequest("GET", "/api/schedules", nil)
		r.URL.RawQuery = rawQuery
		var req scheduleListRequest
		if err := req.bind(r); err != nil {
			checkRefusal(t, err)
			return
		}
		if req.limit < 1 || req.limit > maxListedSchedules {
			t.Fatalf("accepted limit %d", req.limit)
		}
		if req.after != (store.ScheduleRef{}) {
			tenant, name, ok := decodeNameCursor(encodeNameCursor(req.after.Tenant, req.after.Name))
			if !ok || tenant != req.after.Tenant || name != req.after.Name || tenant == "" || name == "" {
				t.Fatalf("cursor round trip of %+v", req.after)
			}
		}
	})
}
