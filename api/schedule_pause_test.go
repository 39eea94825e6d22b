package api

import (
	"net/http"
	"reflect"
	"testing"
	"time"
)

// TestSchedulePauseResume: POST .../pause and .../resume answer the
// schedule as GET does, change enabled (and a resume's next tick) and
// nothing else, and a repeat is 200 with the schedule unchanged.
func TestSchedulePauseResume(t *testing.T) {
	t.Parallel()
	e, clock := clocked(t)
	key := e.tenant("acme")
	put := e.putSchedule(key, "s", `{"cron":"0 * * * *","kind":"echo","payload":{"a":1},"priority":3,"overlap":"queue"}`,
		http.StatusCreated)

	clock.add(time.Minute)
	var paused scheduleView
	e.do("POST", "/api/schedules/s/pause", key, nil).want(http.StatusOK).decode(&paused)
	if paused.Enabled || paused.NextRunAt != nil || !paused.UpdatedAt.Equal(clock.Now()) {
		t.Fatalf("paused: enabled %v next_run_at %v updated_at %v", paused.Enabled, paused.NextRunAt, paused.UpdatedAt)
	}
	want := *put
	want.Enabled, want.NextRunAt, want.UpdatedAt = false, nil, paused.UpdatedAt
	if !reflect.DeepEqual(paused, want) {
		t.Fatalf("a pause changed more than enabled:\n got %+v\nwant %+v", paused, want)
	}
	if got := e.getSchedule(key, "s"); !reflect.DeepEqual(*got, paused) {
		t.Fatalf("GET after pause %+v, the pause answered %+v", got, paused)
	}

	// Pausing a paused schedule is 200 and changes nothing.
	clock.add(time.Minute)
	var again scheduleView
	e.do("POST", "/api/schedules/s/pause", key, nil).want(http.StatusOK).decode(&again)
	if !reflect.DeepEqual(again, paused) {
		t.Fatalf("second pause answered %+v, want the schedule unchanged %+v", again, paused)
	}

	// A resume's next tick is the first after now; missed ticks are not run.
	clock.add(2 * time.Hour)
	var resumed scheduleView
	e.do("POST", "/api/schedules/s/resume", key, nil).want(http.StatusOK).decode(&resumed)
	next := clock.Now().Truncate(time.Hour).Add(time.Hour)
	if !resumed.Enabled || resumed.NextRunAt == nil || !resumed.NextRunAt.Equal(next) || !resumed.UpdatedAt.Equal(clock.Now()) {
		t.Fatalf("resumed: enabled %v next_run_at %v (want %s) updated_at %v", resumed.Enabled, resumed.NextRunAt, next, resumed.UpdatedAt)
	}
	want.Enabled, want.NextRunAt, want.UpdatedAt = true, resumed.NextRunAt, resumed.UpdatedAt
	if !reflect.DeepEqual(resumed, want) {
		t.Fatalf("a resume changed more than enabled and next_run_at:\n got %+v\nwant %+v", resumed, want)
	}
	clock.add(time.Minute)
	e.do("POST", "/api/schedules/s/resume", key, nil).want(http.StatusOK).decode(&again)
	if !reflect.DeepEqual(again, resumed) {
		t.Fatalf("second resume answered %+v, want the schedule unchanged %+v", again, resumed)
	}
}

// TestSchedulePauseNotFound: an unknown schedule, or another tenant's, is
// 404 not_found and changes nothing; the admin names the tenant.
func TestSchedulePauseNotFound(t *testing.T) {
	t.Parallel()
	e, _ := clocked(t)
	acme, globex := e.tenant("acme"), e.tenant("globex")
	e.putSchedule(acme, "s", `{"every":"1h","kind":"echo"}`, http.StatusCreated)
	for _, op := range []string{"pause", "resume"} {
		p := e.do("POST", "/api/schedules/missing/"+op, acme, nil).problem(http.StatusNotFound, CodeNotFound)
		detailHas(t, p, `"missing"`)
		e.do("POST", "/api/schedules/s/"+op, globex, nil).problem(http.StatusNotFound, CodeNotFound)
		e.do("POST", "/api/schedules/s/"+op, e.admin, nil).problem(http.StatusBadRequest, CodeInvalidRequest)
	}
	if sc := e.getSchedule(acme, "s"); !sc.Enabled {
		t.Fatal("a refused pause paused the schedule")
	}
	var sc scheduleView
	e.do("POST", "/api/schedules/s/pause", e.admin, nil, "Latch-Tenant", "acme").want(http.StatusOK).decode(&sc)
	if sc.Enabled || sc.Tenant != "acme" {
		t.Fatalf("admin pause: %+v", sc)
	}
	e.do("POST", "/api/schedules/s/resume", e.admin, nil, "Latch-Tenant", "acme").want(http.StatusOK).decode(&sc)
	if !sc.Enabled {
		t.Fatalf("admin resume: %+v", sc)
	}
}
