package api

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// scheduleEpoch is 2030-01-01T00:07:30Z, a Tuesday: the clock of the
// schedule tests.
var scheduleEpoch = time.Date(2030, 1, 1, 0, 7, 30, 0, time.UTC)

// clocked is a test server whose clock stands still until moved.
func clocked(t *testing.T, opts ...func(*Config)) (*testEnv, *fakeClock) {
	t.Helper()
	clock := &fakeClock{t: scheduleEpoch}
	e := newEnv(t, append([]func(*Config){func(c *Config) { c.Now = clock.Now }}, opts...)...)
	return e, clock
}

// getSchedule reads a schedule, checking it is there.
func (e *testEnv) getSchedule(key, name string, headers ...string) *scheduleView {
	e.t.Helper()
	var sc scheduleView
	e.do("GET", "/api/schedules/"+name, key, nil, headers...).want(http.StatusOK).decode(&sc)
	return &sc
}

// putSchedule PUTs body as the schedule name and returns the answer,
// checking status.
func (e *testEnv) putSchedule(key, name, body string, status int, headers ...string) *scheduleView {
	e.t.Helper()
	var sc scheduleView
	e.do("PUT", "/api/schedules/"+name, key, body, headers...).want(status).decode(&sc)
	return &sc
}

func TestSchedulePutCreateReplace(t *testing.T) {
	t.Parallel()
	e, clock := clocked(t)
	key := e.tenant("acme")
	r := e.do("PUT", "/api/schedules/nightly", key, `{"every":"15m","kind":"echo"}`).want(http.StatusCreated)
	var m map[string]json.RawMessage
	r.decode(&m)
	want := []string{"name", "tenant", "cron", "every", "timezone", "kind", "payload", "queue", "priority",
		"max_attempts", "timeout_seconds", "rate_key", "overlap", "catchup", "enabled", "next_run_at",
		"last_run_at", "last_execution_id", "running", "created_at", "updated_at"}
	var got []string
	for k := range m {
		got = append(got, k)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("fields %v\nwant %v", got, want)
	}
	for _, k := range []string{"cron", "rate_key", "last_run_at", "last_execution_id"} {
		if string(m[k]) != "null" {
			t.Errorf("%s = %s, want null", k, m[k])
		}
	}
	var sc scheduleView
	r.decode(&sc)
	// Every default, answered with its effective value.
	if sc.Name != "nightly" || sc.Tenant != "acme" || *sc.Every != "15m" || sc.Timezone != "UTC" ||
		sc.Kind != "echo" || string(sc.Payload) != "{}" || sc.Queue != "default" || sc.Priority != 0 ||
		sc.MaxAttempts != 3 || sc.TimeoutSeconds != 300 || sc.Overlap != store.OverlapSkip ||
		sc.Catchup != store.CatchupOne || !sc.Enabled || sc.Running {
		t.Fatalf("defaults: %s", r.body)
	}
	if want := time.Date(2030, 1, 1, 0, 15, 0, 0, time.UTC); sc.NextRunAt == nil || !sc.NextRunAt.Equal(want) {
		t.Fatalf("next_run_at %v, want %s", sc.NextRunAt, want)
	}
	for _, k := range []string{"next_run_at", "created_at", "updated_at"} {
		var s string
		json.Unmarshal(m[k], &s)
		if _, err := time.Parse(time.RFC3339, s); err != nil || !strings.HasSuffix(s, "Z") {
			t.Errorf("%s = %s, want RFC 3339 UTC", k, s)
		}
	}

	// A replace answers 200, keeps created_at and, the timing unchanged,
	// the next tick.
	clock.add(time.Minute)
	again := e.putSchedule(key, "nightly", `{"every":"15m","kind":"other","payload":{"b":1,"a":2}}`, http.StatusOK)
	if again.Kind != "other" || string(again.Payload) != `{"a":2,"b":1}` || !again.CreatedAt.Equal(sc.CreatedAt) ||
		!again.UpdatedAt.After(sc.UpdatedAt) || !again.NextRunAt.Equal(*sc.NextRunAt) {
		t.Fatalf("replaced: %+v", again)
	}
	// A new timing moves it.
	again = e.putSchedule(key, "nightly", `{"every":"1h","kind":"other"}`, http.StatusOK)
	if want := time.Date(2030, 1, 1, 1, 0, 0, 0, time.UTC); !again.NextRunAt.Equal(want) {
		t.Fatalf("next_run_at after a new timing %s, want %s", again.NextRunAt, want)
	}
	var list scheduleList
	e.do("GET", "/api/schedules", key, nil).want(http.StatusOK).decode(&list)
	if len(list.Items) != 1 || list.Items[0].Kind != "other" {
		t.Fatalf("list: %+v", list.Items)
	}
}

func TestScheduleCronAndOptions(t *testing.T) {
	t.Parallel()
	e, _ := clocked(t)
	key := e.tenant("acme")
	sc := e.putSchedule(key, "Report.v2:eu-1", `{"cron":"0 9 * * mon-fri","timezone":"Europe/Berlin","kind":"http",
		"payload":{"url":"https://example.com"},"queue":"reports","priority":-7,"max_attempts":5,"timeout_seconds":60,
		"rate_key":"example.com","overlap":"queue","catchup":"none","enabled":true}`, http.StatusCreated)
	if *sc.Cron != "0 9 * * mon-fri" || sc.Every != nil || sc.Timezone != "Europe/Berlin" || sc.Kind != "http" ||
		string(sc.Payload) != `{"url":"https://example.com"}` || sc.Queue != "reports" || sc.Priority != -7 ||
		sc.MaxAttempts != 5 || sc.TimeoutSeconds != 60 || *sc.RateKey != "example.com" ||
		sc.Overlap != store.OverlapQueue || sc.Catchup != store.CatchupNone || !sc.Enabled {
		t.Fatalf("options: %+v", sc)
	}
	// 09:00 in Berlin (UTC+1 in winter) on Tuesday 2030-01-01.
	if want := time.Date(2030, 1, 1, 8, 0, 0, 0, time.UTC); !sc.NextRunAt.Equal(want) {
		t.Fatalf("next_run_at %s, want %s", sc.NextRunAt, want)
	}
	// Six fields (seconds first) and descriptors are cron too.
	sc = e.putSchedule(key, "secs", `{"cron":"30 */5 * * * *","kind":"echo"}`, http.StatusCreated)
	if want := time.Date(2030, 1, 1, 0, 10, 30, 0, time.UTC); !sc.NextRunAt.Equal(want) {
		t.Fatalf("6-field next_run_at %s, want %s", sc.NextRunAt, want)
	}
	sc = e.putSchedule(key, "daily", `{"cron":"@daily","kind":"echo"}`, http.StatusCreated)
	if want := time.Date(2030, 1, 2, 0, 0, 0, 0, time.UTC); !sc.NextRunAt.Equal(want) {
		t.Fatalf("@daily next_run_at %s, want %s", sc.NextRunAt, want)
	}
	// Disabled: no next run; null fields given are defaults.
	sc = e.putSchedule(key, "paused", `{"every":"1m","kind":"echo","enabled":false,"payload":null,"rate_key":null,"cron":null}`, http.StatusCreated)
	if sc.Enabled || sc.NextRunAt != nil || string(sc.Payload) != "{}" || sc.RateKey != nil {
		t.Fatalf("disabled: %+v", sc)
	}
	// Enabled again, it gets a next run.
	sc = e.putSchedule(key, "paused", `{"every":"1m","kind":"echo"}`, http.StatusOK)
	if want := time.Date(2030, 1, 1, 0, 8, 0, 0, time.UTC); sc.NextRunAt == nil || !sc.NextRunAt.Equal(want) {
		t.Fatalf("re-enabled next_run_at %v, want %s", sc.NextRunAt, want)
	}
	// The overlap policies.
	for _, o := range []string{"skip", "queue", "allow"} {
		sc = e.putSchedule(key, "o-"+o, `{"every":"1m","kind":"echo","overlap":"`+o+`"}`, http.StatusCreated)
		if string(sc.Overlap) != o {
			t.Errorf("overlap %s answered %s", o, sc.Overlap)
		}
	}
	// A name that only a percent-escape can carry in a path is refused,
	// not misrouted.
	e.do("PUT", "/api/schedules/a%2Fb", key, `{"every":"1m","kind":"echo"}`).problem(http.StatusBadRequest, CodeInvalidRequest)
}

// every is answered as a compact Go duration that PUT reads back.
func TestScheduleEveryFormat(t *testing.T) {
	t.Parallel()
	e, _ := clocked(t)
	key := e.tenant("acme")
	i := 0
	for in, want := range map[string]string{
		"1s": "1s", "90s": "1m30s", "15m": "15m", "15m0s": "15m", "1h30m": "1h30m", "2h0m0s": "2h",
		"24h": "24h", "1h0m1s": "1h0m1s", "8784h": "8784h", "3600s": "1h", "61m": "1h1m",
	} {
		i++
		name := "e" + strconv.Itoa(i)
		sc := e.putSchedule(key, name, `{"every":"`+in+`","kind":"echo"}`, http.StatusCreated)
		got := e.getSchedule(key, name)
		if sc.Every == nil || *sc.Every != want || got.Every == nil || *got.Every != want {
			t.Errorf("every %q answered %v and %v, want %q", in, sc.Every, got.Every, want)
			continue
		}
		// What is answered is read back as the same interval.
		if again := e.putSchedule(key, name, string(e.do("GET", "/api/schedules/"+name, key, nil).body), http.StatusOK); *again.Every != want {
			t.Errorf("every %q read back as %q", want, *again.Every)
		}
	}
}

func TestFormatEvery(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		time.Second: "1s", 59 * time.Second: "59s", time.Minute: "1m", 15 * time.Minute: "15m",
		time.Hour: "1h", 90 * time.Minute: "1h30m", time.Hour + time.Second: "1h0m1s",
		25 * time.Hour: "25h", 10*time.Minute + 5*time.Second: "10m5s",
	} {
		if got := formatEvery(d); got != want {
			t.Errorf("formatEvery(%s) = %q, want %q", d, got, want)
		}
	}
}

// A GET answer sent back as a PUT body is accepted as it is and changes
// nothing but updated_at; name must not change, and the read-only fields
// still need their types.
func TestScheduleRoundTrip(t *testing.T) {
	t.Parallel()
	e, clock := clocked(t)
	key := e.tenant("acme")
	first := e.putSchedule(key, "sync", `{"cron":"*/10 * * * *","timezone":"America/New_York","kind":"echo",
		"payload":{"x":[1,2]},"rate_key":"r","overlap":"allow"}`, http.StatusCreated)
	// Fire it, so that every read-only field is set.
	e.do("POST", "/api/schedules/sync/trigger", key, nil).want(http.StatusCreated)
	got := e.do("GET", "/api/schedules/sync", key, nil).want(http.StatusOK)
	if !strings.Contains(string(got.body), `"last_execution_id":"`) {
		t.Fatalf("GET after a trigger: %s", got.body)
	}
	clock.add(time.Second)
	var back scheduleView
	e.do("PUT", "/api/schedules/sync", key, got.body).want(http.StatusOK).decode(&back)
	var before scheduleView
	got.decode(&before)
	before.UpdatedAt, back.UpdatedAt = time.Time{}, time.Time{}
	bb, _ := json.Marshal(before)
	ab, _ := json.Marshal(back)
	if string(bb) != string(ab) {
		t.Fatalf("PUT of a GET answer changed the schedule:\n%s\n%s", bb, ab)
	}
	if !back.CreatedAt.Equal(first.CreatedAt) {
		t.Fatal("created_at changed")
	}
	// An interval schedule round-trips too (every "1h30m", cron null).
	e.putSchedule(key, "iv", `{"every":"90m","kind":"echo"}`, http.StatusCreated)
	got = e.do("GET", "/api/schedules/iv", key, nil).want(http.StatusOK)
	e.do("PUT", "/api/schedules/iv", key, got.body).want(http.StatusOK)
	// A GET answer with edits applies the edits.
	edited := strings.Replace(string(got.body), `"kind":"echo"`, `"kind":"echo2"`, 1)
	if sc := e.putSchedule(key, "iv", edited, http.StatusOK); sc.Kind != "echo2" || *sc.Every != "1h30m" {
		t.Fatalf("edited: %+v", sc)
	}
	// Read-only fields are ignored, whatever they say.
	sc := e.putSchedule(key, "iv", `{"every":"90m","kind":"echo","tenant":"other","running":true,
		"next_run_at":"2001-01-01T00:00:00Z","last_run_at":null,"last_execution_id":"x",
		"created_at":"2001-01-01T00:00:00Z","updated_at":"2001-01-01T00:00:00Z"}`, http.StatusOK)
	if sc.Tenant != "acme" || sc.Running || sc.CreatedAt.Year() != 2030 || sc.NextRunAt.Year() != 2030 {
		t.Fatalf("read-only fields taken: %+v", sc)
	}
	for _, c := range []struct{ body, field string }{
		{`{"name":"other","every":"1m","kind":"echo"}`, "name"},
		{`{"every":"1m","kind":"echo","running":"no"}`, "running"},
		{`{"every":"1m","kind":"echo","next_run_at":5}`, "next_run_at"},
		{`{"every":"1m","kind":"echo","last_execution_id":{}}`, "last_execution_id"},
		{`{"every":"1m","kind":"echo","tenant":1}`, "tenant"},
		{`{"every":"1m","kind":"echo","created_at":true}`, "created_at"},
	} {
		p := e.do("PUT", "/api/schedules/iv", key, c.body).problem(http.StatusBadRequest, CodeInvalidRequest)
		detailHas(t, p, c.field)
	}
	// The detail names the JSON field, never the Go struct it lands in.
	p := e.do("PUT", "/api/schedules/iv", key, `{"every":"1m","kind":"echo","running":"no"}`).problem(http.StatusBadRequest, CodeInvalidRequest)
	if p.Detail != "running: expected a boolean, got a string" {
		t.Fatalf("detail %q", p.Detail)
	}
}

// TestScheduleInvalidChangesNothing sends every kind of bad PUT and checks
// each is refused with the right code, naming the field, and that nothing
// was written.
func TestScheduleInvalidChangesNothing(t *testing.T) {
	t.Parallel()
	var changes atomic.Int64
	e, _ := clocked(t, func(c *Config) {
		c.MaxPayloadBytes = 1000
		c.OnScheduleChange = func() { changes.Add(1) }
	})
	key := e.tenant("acme")
	long := func(n int) string { return strings.Repeat("x", n) }
	ok := `"every":"1m","kind":"echo"`
	for _, tc := range []struct {
		name    string
		path    string // "" = /api/schedules/s
		body    string
		status  int
		code    Code
		mention string
	}{
		{"malformed", "", `{"kind":"echo"`, 400, CodeInvalidRequest, "malformed JSON"},
		{"not an object", "", `["echo"]`, 400, CodeInvalidRequest, "object"},
		{"empty body", "", ``, 400, CodeInvalidRequest, "body"},
		{"unknown field", "", `{` + ok + `,"cronn":"x"}`, 400, CodeInvalidRequest, "cronn"},
		{"wrong case", "", `{"Every":"1m","kind":"echo"}`, 400, CodeInvalidRequest, "Every"},
		{"duplicate field", "", `{` + ok + `,"kind":"other"}`, 400, CodeInvalidRequest, "kind"},
		{"submit-only field", "", `{` + ok + `,"dedup_key":"k"}`, 400, CodeInvalidRequest, "dedup_key"},
		{"name in path", "/api/schedules/a%20b", `{` + ok + `}`, 400, CodeInvalidRequest, "name"},
		{"long name in path", "/api/schedules/" + long(129), `{` + ok + `}`, 400, CodeInvalidRequest, "name"},
		{"name differs", "", `{` + ok + `,"name":"t"}`, 400, CodeInvalidRequest, "name"},
		{"name number", "", `{` + ok + `,"name":1}`, 400, CodeInvalidRequest, "name"},
		{"missing kind", "", `{"every":"1m"}`, 400, CodeInvalidRequest, "kind"},
		{"empty kind", "", `{"every":"1m","kind":""}`, 400, CodeInvalidRequest, "kind"},
		{"long kind", "", `{"every":"1m","kind":"` + long(129) + `"}`, 400, CodeInvalidRequest, "kind"},
		{"kind with newline", "", `{"every":"1m","kind":"a\nb"}`, 400, CodeInvalidRequest, "kind"},
		{"payload not json", "", `{` + ok + `,"payload":}`, 400, CodeInvalidRequest, "payload"},
		{"payload too large", "", `{` + ok + `,"payload":"` + long(1000) + `"}`, 413, CodePayloadTooLarge, "payload"},
		{"no timing", "", `{"kind":"echo"}`, 400, CodeInvalidRequest, "cron"},
		{"both timings", "", `{"kind":"echo","every":"1m","cron":"* * * * *"}`, 400, CodeInvalidRequest, "cron"},
		{"empty cron", "", `{"kind":"echo","cron":""}`, 400, CodeInvalidRequest, "cron"},
		{"blank cron", "", `{"kind":"echo","cron":"   "}`, 400, CodeInvalidRequest, "cron"},
		{"bad cron", "", `{"kind":"echo","cron":"61 * * * *"}`, 400, CodeInvalidRequest, "cron"},
		{"cron 4 fields", "", `{"kind":"echo","cron":"* * * *"}`, 400, CodeInvalidRequest, "cron"},
		{"cron never", "", `{"kind":"echo","cron":"0 0 30 2 *"}`, 400, CodeInvalidRequest, "cron"},
		{"cron control", "", `{"kind":"echo","cron":"0\t* * * *"}`, 400, CodeInvalidRequest, "cron"},
		{"cron long", "", `{"kind":"echo","cron":"` + long(257) + `"}`, 400, CodeInvalidRequest, "cron"},
		{"cron number", "", `{"kind":"echo","cron":5}`, 400, CodeInvalidRequest, "cron"},
		{"every zero", "", `{"kind":"echo","every":"0s"}`, 400, CodeInvalidRequest, "every"},
		{"every fraction", "", `{"kind":"echo","every":"1.5s"}`, 400, CodeInvalidRequest, "every"},
		{"every short", "", `{"kind":"echo","every":"500ms"}`, 400, CodeInvalidRequest, "every"},
		{"every long", "", `{"kind":"echo","every":"8785h"}`, 400, CodeInvalidRequest, "every"},
		{"every negative", "", `{"kind":"echo","every":"-1m"}`, 400, CodeInvalidRequest, "every"},
		{"every word", "", `{"kind":"echo","every":"daily"}`, 400, CodeInvalidRequest, "every"},
		{"every empty", "", `{"kind":"echo","every":""}`, 400, CodeInvalidRequest, "every"},
		{"every number", "", `{"kind":"echo","every":60}`, 400, CodeInvalidRequest, "every"},
		{"timezone unknown", "", `{` + ok + `,"timezone":"Mars/Olympus"}`, 400, CodeInvalidRequest, "timezone"},
		{"timezone local", "", `{` + ok + `,"timezone":"Local"}`, 400, CodeInvalidRequest, "timezone"},
		{"timezone long", "", `{` + ok + `,"timezone":"` + long(129) + `"}`, 400, CodeInvalidRequest, "timezone"},
		{"timezone control", "", `{` + ok + `,"timezone":"Europe/\u0000"}`, 400, CodeInvalidRequest, "timezone"},
		{"timezone number", "", `{` + ok + `,"timezone":1}`, 400, CodeInvalidRequest, "timezone"},
		{"queue empty", "", `{` + ok + `,"queue":""}`, 400, CodeInvalidRequest, "queue"},
		{"queue charset", "", `{` + ok + `,"queue":"a b"}`, 400, CodeInvalidRequest, "queue"},
		{"queue long", "", `{` + ok + `,"queue":"` + long(129) + `"}`, 400, CodeInvalidRequest, "queue"},
		{"priority fraction", "", `{` + ok + `,"priority":1.5}`, 400, CodeInvalidRequest, "priority"},
		{"priority huge", "", `{` + ok + `,"priority":99999999999}`, 400, CodeInvalidRequest, "priority"},
		{"max_attempts zero", "", `{` + ok + `,"max_attempts":0}`, 400, CodeInvalidRequest, "max_attempts"},
		{"max_attempts huge", "", `{` + ok + `,"max_attempts":1001}`, 400, CodeInvalidRequest, "max_attempts"},
		{"timeout zero", "", `{` + ok + `,"timeout_seconds":0}`, 400, CodeInvalidRequest, "timeout_seconds"},
		{"timeout huge", "", `{` + ok + `,"timeout_seconds":604801}`, 400, CodeInvalidRequest, "timeout_seconds"},
		{"rate_key empty", "", `{` + ok + `,"rate_key":""}`, 400, CodeInvalidRequest, "rate_key"},
		{"rate_key long", "", `{` + ok + `,"rate_key":"` + long(257) + `"}`, 400, CodeInvalidRequest, "rate_key"},
		{"overlap unknown", "", `{` + ok + `,"overlap":"never"}`, 400, CodeInvalidRequest, "overlap"},
		{"overlap case", "", `{` + ok + `,"overlap":"Skip"}`, 400, CodeInvalidRequest, "overlap"},
		{"catchup unknown", "", `{` + ok + `,"catchup":"all"}`, 400, CodeInvalidRequest, "catchup"},
		{"enabled string", "", `{` + ok + `,"enabled":"yes"}`, 400, CodeInvalidRequest, "enabled"},
		{"unknown query", "/api/schedules/s?x=1", `{` + ok + `}`, 400, CodeInvalidRequest, "x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := cmp.Or(tc.path, "/api/schedules/s")
			p := e.do("PUT", path, key, tc.body).problem(tc.status, tc.code)
			detailHas(t, p, tc.mention)
		})
	}
	e.do("PUT", "/api/schedules/s", key, `{`+ok+`}`, "Content-Type", "text/plain").
		problem(http.StatusUnsupportedMediaType, CodeUnsupportedMediaType)
	var list scheduleList
	e.do("GET", "/api/schedules", key, nil).want(http.StatusOK).decode(&list)
	if len(list.Items) != 0 || changes.Load() != 0 {
		t.Fatalf("refused PUTs wrote %d schedules, signalled %d changes", len(list.Items), changes.Load())
	}
	// The parser's sentence is the detail.
	p := e.do("PUT", "/api/schedules/s", key, `{"kind":"echo","timezone":"Mars/Olympus","every":"1m"}`).
		problem(http.StatusBadRequest, CodeInvalidRequest)
	if !strings.HasPrefix(p.Detail, "timezone: ") || !strings.Contains(p.Detail, "Mars/Olympus") {
		t.Fatalf("timezone detail %q", p.Detail)
	}
	// An empty timezone is UTC, as its absence is.
	if sc := e.putSchedule(key, "s", `{`+ok+`,"timezone":""}`, http.StatusCreated); sc.Timezone != "UTC" {
		t.Fatalf("timezone %q", sc.Timezone)
	}
}

// The list comes a page at a time: limit bounds it, next_cursor continues
// after its last schedule, across tenants for the admin; a bad page
// parameter is a 400 naming it.
func TestScheduleListPages(t *testing.T) {
	t.Parallel()
	e, _ := clocked(t)
	a := e.tenant("acme")
	b := e.tenant("bolt")
	for _, name := range []string{"c", "a", "b"} {
		e.putSchedule(a, name, `{"every":"1h","kind":"k"}`, http.StatusCreated)
	}
	e.putSchedule(b, "a", `{"every":"1h","kind":"k"}`, http.StatusCreated)

	pages := func(key, path string) (got []string, cursors int) {
		t.Helper()
		for {
			var list scheduleList
			e.do("GET", path, key, nil).want(http.StatusOK).decode(&list)
			for _, sc := range list.Items {
				got = append(got, sc.Tenant+"/"+sc.Name)
			}
			if list.NextCursor == nil {
				return got, cursors
			}
			if cursors++; cursors > 4 {
				t.Fatalf("%s: still paging after %d pages: %v", path, cursors, got)
			}
			path = "/api/schedules?limit=2&cursor=" + *list.NextCursor
		}
	}
	if got, n := pages(a, "/api/schedules?limit=2"); strings.Join(got, ",") != "acme/a,acme/b,acme/c" || n != 1 {
		t.Fatalf("acme's schedules by 2: %v in %d pages after the first", got, n)
	}
	if got, n := pages(e.admin, "/api/schedules?limit=2"); strings.Join(got, ",") != "acme/a,acme/b,acme/c,bolt/a" || n != 1 {
		t.Fatalf("every tenant's by 2: %v in %d pages after the first", got, n)
	}
	// A page that ends exactly at the last schedule has no next_cursor.
	if got, n := pages(a, "/api/schedules?limit=3"); len(got) != 3 || n != 0 {
		t.Fatalf("acme's schedules by 3: %v in %d pages after the first", got, n)
	}
	for _, tc := range []struct{ query, mention string }{
		{"limit=0", "limit"},
		{"limit=1001", "limit"},
		{"limit=x", "limit"},
		{"cursor=abc", "cursor"},
		{"cursor=" + base64.RawURLEncoding.EncodeToString([]byte(`["acme"]`)), "cursor"},
		{"page=2", "page"},
	} {
		p := e.do("GET", "/api/schedules?"+tc.query, a, nil).problem(http.StatusBadRequest, CodeInvalidRequest)
		detailHas(t, p, tc.mention)
	}
}

// Schedules belong to their tenant: another tenant's is answered like a
// missing one; the admin names the tenant, except to list them all.
func TestScheduleTenants(t *testing.T) {
	t.Parallel()
	e, _ := clocked(t)
	a := e.tenant("acme")
	b := e.tenant("bolt")
	e.putSchedule(a, "nightly", `{"every":"1h","kind":"a"}`, http.StatusCreated)

	// bolt sees nothing of acme's schedule and can have its own by the
	// same name.
	e.do("GET", "/api/schedules/nightly", b, nil).problem(http.StatusNotFound, CodeNotFound)
	e.do("POST", "/api/schedules/nightly/trigger", b, nil).problem(http.StatusNotFound, CodeNotFound)
	e.do("DELETE", "/api/schedules/nightly", b, nil).problem(http.StatusNotFound, CodeNotFound)
	var list scheduleList
	e.do("GET", "/api/schedules", b, nil).want(http.StatusOK).decode(&list)
	if len(list.Items) != 0 {
		t.Fatalf("bolt lists %+v", list.Items)
	}
	if sc := e.putSchedule(b, "nightly", `{"every":"1h","kind":"b"}`, http.StatusCreated); sc.Tenant != "bolt" {
		t.Fatalf("bolt's schedule: %+v", sc)
	}
	if sc := e.putSchedule(a, "nightly", `{"every":"1h","kind":"a"}`, http.StatusOK); sc.Kind != "a" {
		t.Fatalf("acme's schedule changed: %+v", sc)
	}
	// A tenant key may name its own tenant, not another.
	e.do("GET", "/api/schedules/nightly", a, nil, "Latch-Tenant", "acme").want(http.StatusOK)
	e.do("GET", "/api/schedules", a, nil, "Latch-Tenant", "bolt").problem(http.StatusForbidden, CodeForbidden)

	// The admin lists every tenant's without Latch-Tenant, one tenant's
	// with it.
	e.do("GET", "/api/schedules", e.admin, nil).want(http.StatusOK).decode(&list)
	if len(list.Items) != 2 || list.Items[0].Tenant != "acme" || list.Items[1].Tenant != "bolt" {
		t.Fatalf("admin lists %+v", list.Items)
	}
	e.do("GET", "/api/schedules", e.admin, nil, "Latch-Tenant", "bolt").want(http.StatusOK).decode(&list)
	if len(list.Items) != 1 || list.Items[0].Kind != "b" {
		t.Fatalf("admin lists bolt's %+v", list.Items)
	}
	// Anything else needs the tenant named.
	for _, c := range []struct{ method, path, body string }{
		{"PUT", "/api/schedules/nightly", `{"every":"1h","kind":"x"}`},
		{"GET", "/api/schedules/nightly", ""},
		{"POST", "/api/schedules/nightly/trigger", ""},
		{"DELETE", "/api/schedules/nightly", ""},
	} {
		var body any
		if c.body != "" {
			body = c.body
		}
		p := e.do(c.method, c.path, e.admin, body).problem(http.StatusBadRequest, CodeInvalidRequest)
		detailHas(t, p, "Latch-Tenant")
	}
	if sc := e.putSchedule(e.admin, "nightly", `{"every":"1h","kind":"by-admin"}`, http.StatusOK, "Latch-Tenant", "bolt"); sc.Tenant != "bolt" {
		t.Fatalf("admin PUT: %+v", sc)
	}
	if sc := e.getSchedule(e.admin, "nightly", "Latch-Tenant", "acme"); sc.Kind != "a" {
		t.Fatalf("admin GET acme's: %+v", sc)
	}
	x := e.do("POST", "/api/schedules/nightly/trigger", e.admin, nil, "Latch-Tenant", "bolt").want(http.StatusCreated).exec()
	if x.Tenant != "bolt" || x.Kind != "by-admin" {
		t.Fatalf("admin trigger: %+v", x)
	}
	e.do("DELETE", "/api/schedules/nightly", e.admin, nil, "Latch-Tenant", "bolt").want(http.StatusNoContent)
	e.do("GET", "/api/schedules/nightly", b, nil).problem(http.StatusNotFound, CodeNotFound)
	e.do("GET", "/api/schedules/nightly", a, nil).want(http.StatusOK)
	// A tenant that does not exist.
	e.do("PUT", "/api/schedules/nightly", e.admin, `{"every":"1h","kind":"x"}`, "Latch-Tenant", "ghost").
		problem(http.StatusNotFound, CodeNotFound)
	e.do("GET", "/api/schedules/nightly", e.admin, nil, "Latch-Tenant", "ghost").problem(http.StatusNotFound, CodeNotFound)
	// Names no schedule can have are not found.
	e.do("GET", "/api/schedules/a%20b", a, nil).problem(http.StatusNotFound, CodeNotFound)
	e.do("DELETE", "/api/schedules/"+strings.Repeat("n", 129), a, nil).problem(http.StatusNotFound, CodeNotFound)
	e.do("GET", "/api/schedules?tenant=bolt", e.admin, nil).problem(http.StatusBadRequest, CodeInvalidRequest)
}

func TestScheduleTrigger(t *testing.T) {
	t.Parallel()
	e, clock := clocked(t)
	key := e.tenant("acme")
	before := e.putSchedule(key, "nightly", `{"every":"1h","kind":"echo","payload":{"n":1},"queue":"q","priority":4,
		"max_attempts":2,"timeout_seconds":30,"rate_key":"r"}`, http.StatusCreated)

	tick := scheduleEpoch.Truncate(time.Second)
	r := e.do("POST", "/api/schedules/nightly/trigger", key, nil).want(http.StatusCreated)
	x := r.exec()
	// A trigger without Idempotency-Key is a tick of its own: no dedup key.
	if x.Schedule == nil || *x.Schedule != "nightly" || x.DedupKey != nil ||
		x.Tenant != "acme" || x.Kind != "echo" || string(x.Payload) != `{"n":1}` || x.Queue != "q" ||
		x.Priority != 4 || x.MaxAttempts != 2 || x.TimeoutSeconds != 30 || *x.RateKey != "r" ||
		x.Status != store.StatusQueued || x.Deduplicated == nil || *x.Deduplicated {
		t.Fatalf("triggered: %s", r.body)
	}
	// The answer is the execution as GET answers it, plus deduplicated.
	g := e.do("GET", "/api/executions/"+x.ExecutionID, key, nil).want(http.StatusOK)
	var gm, tm map[string]json.RawMessage
	g.decode(&gm)
	r.decode(&tm)
	if string(tm["deduplicated"]) != "false" {
		t.Fatalf("deduplicated %s", tm["deduplicated"])
	}
	delete(tm, "deduplicated")
	gb, _ := json.Marshal(gm)
	tb, _ := json.Marshal(tm)
	if string(gb) != string(tb) {
		t.Fatalf("trigger answer differs from GET:\n%s\n%s", tb, gb)
	}
	// The schedule records the tick and keeps its next run.
	sc := e.getSchedule(key, "nightly")
	if sc.LastRunAt == nil || !sc.LastRunAt.Equal(tick) || sc.LastExecutionID == nil ||
		*sc.LastExecutionID != x.ExecutionID || !sc.NextRunAt.Equal(*before.NextRunAt) {
		t.Fatalf("after trigger: %+v", sc)
	}

	// Again within the same second, with the first still queued: a tick of
	// its own, which overlap skip records as skipped.
	s := e.do("POST", "/api/schedules/nightly/trigger", key, nil).want(http.StatusCreated).exec()
	if s.Status != store.StatusSkipped || s.ExecutionID == x.ExecutionID || *s.Deduplicated || s.FinishedAt == nil ||
		s.DedupKey != nil || *s.Schedule != "nightly" {
		t.Fatalf("second trigger of the same second: %+v", s)
	}
	if n := e.inflight("acme"); n != 1 {
		t.Fatalf("inflight %d: a skipped tick took quota", n)
	}
	var page listResponse
	e.do("GET", "/api/executions?schedule=nightly", key, nil).want(http.StatusOK).decode(&page)
	if len(page.Items) != 2 {
		t.Fatalf("%d executions of the schedule, want 2", len(page.Items))
	}

	// Overlap allow runs anyway; a disabled schedule can be triggered.
	e.putSchedule(key, "free", `{"every":"1h","kind":"echo","overlap":"allow","enabled":false}`, http.StatusCreated)
	f1 := e.do("POST", "/api/schedules/free/trigger", key, nil).want(http.StatusCreated).exec()
	clock.add(time.Second)
	f2 := e.do("POST", "/api/schedules/free/trigger", key, nil).want(http.StatusCreated).exec()
	if f1.Status != store.StatusQueued || f2.Status != store.StatusQueued || f1.ExecutionID == f2.ExecutionID ||
		f1.ConcurrencyKey != nil {
		t.Fatalf("overlap allow: %+v %+v", f1, f2)
	}
	// Overlap skip and queue run one at a time: the schedule's
	// concurrency key, limit 1.
	if x.ConcurrencyKey == nil || *x.ConcurrencyKey != "schedule:nightly" || *x.ConcurrencyLimit != 1 {
		t.Fatalf("overlap skip concurrency: %v %v", x.ConcurrencyKey, x.ConcurrencyLimit)
	}

	e.do("POST", "/api/schedules/ghost/trigger", key, nil).problem(http.StatusNotFound, CodeNotFound)
	e.do("POST", "/api/schedules/ghost/trigger", key, nil, "Idempotency-Key", "k").problem(http.StatusNotFound, CodeNotFound)
	// A trigger takes no body and no query.
	e.do("POST", "/api/schedules/nightly/trigger?at=1", key, nil).problem(http.StatusBadRequest, CodeInvalidRequest)
}

// With Idempotency-Key, a repeated trigger answers 200 with the first
// one's execution, whatever became of it; the key is the schedule's own.
func TestScheduleTriggerIdempotencyKey(t *testing.T) {
	t.Parallel()
	e, clock := clocked(t)
	key := e.tenant("acme")
	e.putSchedule(key, "nightly", `{"every":"1h","kind":"echo"}`, http.StatusCreated)
	e.putSchedule(key, "other", `{"every":"1h","kind":"echo","overlap":"allow"}`, http.StatusCreated)

	x := e.do("POST", "/api/schedules/nightly/trigger", key, nil, "Idempotency-Key", "deploy-42").
		want(http.StatusCreated).exec()
	if x.Status != store.StatusQueued || *x.Deduplicated || x.DedupKey == nil ||
		*x.DedupKey != store.ScheduleTriggerDedupKey("nightly", "deploy-42") {
		t.Fatalf("keyed trigger: %+v", x)
	}
	clock.add(time.Minute)
	for range 2 {
		d := e.do("POST", "/api/schedules/nightly/trigger", key, nil, "Idempotency-Key", "deploy-42").
			want(http.StatusOK).exec()
		if d.ExecutionID != x.ExecutionID || !*d.Deduplicated {
			t.Fatalf("repeated keyed trigger: %+v", d)
		}
	}
	// Another key is another tick (skipped: the first is still queued);
	// the same key on another schedule is that schedule's own.
	s := e.do("POST", "/api/schedules/nightly/trigger", key, nil, "Idempotency-Key", "deploy-43").
		want(http.StatusCreated).exec()
	o := e.do("POST", "/api/schedules/other/trigger", key, nil, "Idempotency-Key", "deploy-42").
		want(http.StatusCreated).exec()
	if s.ExecutionID == x.ExecutionID || s.Status != store.StatusSkipped || o.ExecutionID == x.ExecutionID {
		t.Fatalf("other key %+v, other schedule %+v", s, o)
	}
	// The key is checked like a dedup key.
	for _, bad := range []string{strings.Repeat("k", 257), "tab\there"} {
		e.do("POST", "/api/schedules/nightly/trigger", key, nil, "Idempotency-Key", bad).
			problem(http.StatusBadRequest, CodeInvalidRequest)
	}
}

// A trigger is admitted under the tenant's quota, like a submit.
func TestScheduleTriggerQuota(t *testing.T) {
	t.Parallel()
	e, _ := clocked(t)
	key := e.tenant("acme", `,"max_inflight":1`)
	e.putSchedule(key, "s", `{"every":"1h","kind":"echo","overlap":"allow"}`, http.StatusCreated)
	e.submit(key, `{"kind":"echo"}`, http.StatusCreated)
	r := e.do("POST", "/api/schedules/s/trigger", key, nil)
	r.problem(http.StatusTooManyRequests, CodeQuotaExceeded)
	if ra := r.header.Get("Retry-After"); ra == "" || ra == "0" {
		t.Fatalf("Retry-After %q", ra)
	}
	if e.count() != 1 {
		t.Fatalf("%d executions after a refused trigger", e.count())
	}
	if sc := e.getSchedule(key, "s"); sc.LastRunAt != nil {
		t.Fatalf("a refused trigger was recorded: %+v", sc)
	}
}

func TestScheduleDelete(t *testing.T) {
	t.Parallel()
	var changes atomic.Int64
	e, _ := clocked(t, func(c *Config) { c.OnScheduleChange = func() { changes.Add(1) } })
	key := e.tenant("acme")
	e.putSchedule(key, "s", `{"every":"1h","kind":"echo"}`, http.StatusCreated)
	e.putSchedule(key, "s", `{"every":"2h","kind":"echo"}`, http.StatusOK)
	x := e.do("POST", "/api/schedules/s/trigger", key, nil).want(http.StatusCreated).exec()
	if n := changes.Load(); n != 2 {
		t.Fatalf("OnScheduleChange called %d times for two PUTs and a trigger", n)
	}
	e.do("DELETE", "/api/schedules/s", key, nil).want(http.StatusNoContent)
	if n := changes.Load(); n != 3 {
		t.Fatalf("OnScheduleChange called %d times after DELETE", n)
	}
	e.do("GET", "/api/schedules/s", key, nil).problem(http.StatusNotFound, CodeNotFound)
	e.do("DELETE", "/api/schedules/s", key, nil).problem(http.StatusNotFound, CodeNotFound)
	e.do("POST", "/api/schedules/s/trigger", key, nil).problem(http.StatusNotFound, CodeNotFound)
	if n := changes.Load(); n != 3 {
		t.Fatalf("OnScheduleChange called %d times after refused calls", n)
	}
	// The executions it fired stay.
	e.do("GET", "/api/executions/"+x.ExecutionID, key, nil).want(http.StatusOK)
	var list map[string]json.RawMessage
	e.do("GET", "/api/schedules", key, nil).want(http.StatusOK).decode(&list)
	if len(list) != 2 || string(list["items"]) != "[]" || string(list["next_cursor"]) != "null" {
		t.Fatalf("empty list: %v", list)
	}
	// Created again, it starts afresh.
	if sc := e.putSchedule(key, "s", `{"every":"1h","kind":"echo"}`, http.StatusCreated); sc.LastRunAt != nil {
		t.Fatalf("recreated: %+v", sc)
	}
}

// Without Config.Now, the trigger's tick is the real time to the second.
func TestScheduleTriggerRealClock(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.tenant("acme")
	e.putSchedule(key, "s", `{"cron":"0 0 1 1 *","kind":"echo"}`, http.StatusCreated)
	before := time.Now().Truncate(time.Second)
	e.do("POST", "/api/schedules/s/trigger", key, nil).want(http.StatusCreated)
	after := time.Now()
	sc := e.getSchedule(key, "s")
	if sc.LastRunAt == nil || sc.LastRunAt.Before(before) || sc.LastRunAt.After(after) ||
		!sc.LastRunAt.Equal(sc.LastRunAt.Truncate(time.Second)) {
		t.Fatalf("last_run_at %v for a trigger between %s and %s", sc.LastRunAt, before, after)
	}
}
