package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/latch-run/latch/schedule"
	"github.com/latch-run/latch/store"
)

// Defaults and limits of the schedule endpoints.
const (
	defaultTimezone = "UTC"
	maxTimezoneLen  = 128
	// maxListedSchedules bounds a page of GET /api/schedules, by tenant
	// then name; it is also the default page size.
	maxListedSchedules = 1000
)

// scheduleOwner completes the problem of an admin that did not name the
// tenant of a schedule.
const scheduleOwner = "that owns the schedule"

// scheduleName names one schedule by its path value.
type scheduleName struct {
	name string
}

// bind: a name no schedule can have is answered like a missing schedule.
func (r *scheduleName) bind(hr *http.Request) error {
	if _, err := query(hr); err != nil {
		return err
	}
	r.name = hr.PathValue("name")
	if checkScheduleName("name", r.name) != nil {
		return problem(CodeNotFound, "schedule %q not found", r.name)
	}
	return nil
}

// putScheduleRequest is the body of PUT /api/schedules/{name}. Every
// optional field is a pointer: absent and null mean "not given", so its
// default applies. A GET answer may be sent back as it is: "name" is
// accepted but must equal the path's, and the read-only fields are
// accepted (checked for type) and ignored.
type putScheduleRequest struct {
	path string // the name in the path

	Name           *string         `json:"name"`
	Cron           *string         `json:"cron"`
	Every          *string         `json:"every"`
	Timezone       *string         `json:"timezone"`
	Kind           *string         `json:"kind"`
	Payload        json.RawMessage `json:"payload"`
	Queue          *string         `json:"queue"`
	Priority       *int64          `json:"priority"`
	MaxAttempts    *int64          `json:"max_attempts"`
	TimeoutSeconds *int64          `json:"timeout_seconds"`
	RateKey        *string         `json:"rate_key"`
	Overlap        *string         `json:"overlap"`
	Catchup        *string         `json:"catchup"`
	Enabled        *bool           `json:"enabled"`
	scheduleState

	spec *schedule.Spec // the timing, once schedule() checked it
}

// scheduleState holds the read-only fields of a schedule answer: checked
// for type, then ignored. tenant is ignored too: the tenant is the
// caller's (or Latch-Tenant's), never the body's.
type scheduleState struct {
	Tenant          *string `json:"tenant"`
	NextRunAt       *string `json:"next_run_at"`
	LastRunAt       *string `json:"last_run_at"`
	LastExecutionID *string `json:"last_execution_id"`
	Running         *bool   `json:"running"`
	CreatedAt       *string `json:"created_at"`
	UpdatedAt       *string `json:"updated_at"`
}

func (r *putScheduleRequest) bind(hr *http.Request) error {
	if _, err := query(hr); err != nil {
		return err
	}
	r.path = hr.PathValue("name")
	return nil
}

func (r *putScheduleRequest) validate() error {
	if err := checkScheduleName("name", r.path); err != nil {
		return err
	}
	if r.Name != nil && *r.Name != r.path {
		return invalid("name", "must equal the name in the path; a schedule cannot be renamed")
	}
	return nil
}

// schedule checks the settings and turns them into the tenant's
// store.Schedule, its NextRunAt the first tick after now.
func (r *putScheduleRequest) schedule(tenant string, now time.Time, maxPayload int) (store.Schedule, error) {
	sc := store.Schedule{
		Tenant:   tenant,
		Name:     r.path,
		Timezone: defaultTimezone,
		Overlap:  store.OverlapSkip,
		Catchup:  store.CatchupOne,
		Enabled:  true,
	}
	if r.Kind == nil {
		return sc, invalid("kind", "required")
	}
	if err := fieldProblem(store.CheckKind("kind", *r.Kind)); err != nil {
		return sc, err
	}
	sc.Kind = *r.Kind

	payload, err := canonicalPayload("payload", r.Payload, maxPayload)
	if err != nil {
		return sc, err
	}
	sc.Payload = payload

	spec, err := r.timing(&sc)
	if err != nil {
		return sc, err
	}
	r.spec = spec

	if r.Queue != nil {
		if err := fieldProblem(store.CheckQueue("queue", *r.Queue)); err != nil {
			return sc, err
		}
		sc.Queue = *r.Queue
	}
	if r.Priority != nil {
		if err := fieldProblem(store.CheckPriority("priority", *r.Priority)); err != nil {
			return sc, err
		}
		sc.Priority = int(*r.Priority)
	}
	if r.MaxAttempts != nil {
		if err := fieldProblem(store.CheckMaxAttempts("max_attempts", *r.MaxAttempts)); err != nil {
			return sc, err
		}
		sc.MaxAttempts = int(*r.MaxAttempts)
	}
	if r.TimeoutSeconds != nil {
		if err := fieldProblem(store.CheckTimeoutSeconds("timeout_seconds", *r.TimeoutSeconds)); err != nil {
			return sc, err
		}
		sc.TimeoutSeconds = int(*r.TimeoutSeconds)
	}
	if r.RateKey != nil {
		if err := fieldProblem(store.CheckKey("rate_key", *r.RateKey)); err != nil {
			return sc, err
		}
		sc.RateKey = *r.RateKey
	}
	if r.Overlap != nil {
		sc.Overlap = store.Overlap(*r.Overlap)
		if !sc.Overlap.Valid() {
			return sc, invalid("overlap", "must be one of skip, queue, allow")
		}
	}
	if r.Catchup != nil {
		sc.Catchup = store.Catchup(*r.Catchup)
		if !sc.Catchup.Valid() {
			return sc, invalid("catchup", "must be one of none, one")
		}
	}
	if r.Enabled != nil {
		sc.Enabled = *r.Enabled
	}
	// The store needs a next tick even while disabled; it is answered as
	// null then, and computed afresh when the schedule is enabled again.
	sc.NextRunAt = spec.Next(now)
	return sc, nil
}

// timing checks cron or every (exactly one) and the timezone, and sets them
// on sc. A refusal names the field and carries the parser's sentence.
func (r *putScheduleRequest) timing(sc *store.Schedule) (*schedule.Spec, error) {
	switch {
	case r.Cron != nil && r.Every != nil:
		return nil, invalid("cron", "give cron or every, not both")
	case r.Cron == nil && r.Every == nil:
		return nil, invalid("cron", `required unless every is given: a cron expression such as "0 * * * *", or an interval in every such as "15m"`)
	}
	if r.Timezone != nil && *r.Timezone != "" {
		if err := checkText("timezone", *r.Timezone, maxTimezoneLen); err != nil {
			return nil, err
		}
		// An interval in range isolates the zone: an error is the zone's.
		if _, err := schedule.Parse("", schedule.MinEvery, *r.Timezone); err != nil {
			return nil, timingProblem("timezone", err)
		}
		sc.Timezone = *r.Timezone
	}
	if r.Every != nil {
		d, err := schedule.ParseEvery(*r.Every)
		if err != nil {
			return nil, timingProblem("every", err)
		}
		spec, err := schedule.Parse("", d, sc.Timezone)
		if err != nil {
			return nil, timingProblem("every", err)
		}
		sc.Every = d
		return spec, nil
	}
	if err := checkText("cron", *r.Cron, schedule.MaxCronLength); err != nil {
		return nil, err
	}
	spec, err := schedule.Parse(*r.Cron, 0, sc.Timezone)
	if err != nil {
		return nil, timingProblem("cron", err)
	}
	sc.Cron = *r.Cron
	return spec, nil
}

// timingProblem is the 400 of a timing the schedule package refused. Its
// sentences quote what they refuse; any invalid UTF-8 is replaced so the
// detail stays valid.
func timingProblem(field string, err error) *Problem {
	return invalid(field, "%s", strings.ToValidUTF8(err.Error(), "\uFFFD"))
}

// checkFrequency refuses (400 schedule_too_frequent) a timing whose
// ticks come closer than Config.MinScheduleInterval.
func (s *Server) checkFrequency(req *putScheduleRequest) error {
	field, gap := "every", req.spec.MinInterval()
	if req.Cron != nil {
		field = "cron"
	}
	if gap >= s.cfg.MinScheduleInterval {
		return nil
	}
	return problem(CodeScheduleTooFrequent, "%s ticks as often as every %v; this server's minimum interval between ticks is %v",
		field, gap, s.cfg.MinScheduleInterval)
}

// putScheduleResponse is a PUT's answer: 201 created, 200 replaced.
type putScheduleResponse struct {
	*scheduleView
	status int
}

func (r *putScheduleResponse) statusCode() int { return r.status }

// putSchedule is PUT /api/schedules/{name}: create or replace, atomically.
// Creating one more than Config.MaxSchedulesPerTenant is refused with 409
// schedule_limit (the store counts and inserts in one step).
// A replace that keeps the timing of an enabled schedule keeps its next
// tick (the store decides, against the row it replaces).
func (s *Server) putSchedule(ctx context.Context, req *putScheduleRequest) (*putScheduleResponse, error) {
	owner, err := principalFrom(ctx).ownerOf(scheduleOwner)
	if err != nil {
		return nil, err
	}
	now := s.cfg.Now()
	sc, err := req.schedule(owner, now, s.cfg.MaxPayloadBytes)
	if err != nil {
		return nil, err
	}
	if err := s.checkFrequency(req); err != nil {
		return nil, err
	}
	res, err := s.cfg.Store.PutSchedule(ctx, &store.PutScheduleParams{Schedule: sc,
		MaxSchedules: max(s.cfg.MaxSchedulesPerTenant, 0), Now: now})
	switch {
	case errors.Is(err, store.ErrScheduleLimit):
		return nil, problem(CodeScheduleLimit, "tenant %q is at its bound of %d schedules; delete one first (replacing one is allowed)",
			owner, s.cfg.MaxSchedulesPerTenant)
	case err != nil:
		return nil, tenantErr(err, owner)
	}
	s.scheduleChanged()
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
	}
	return &putScheduleResponse{toSchedule(res.Schedule), status}, nil
}

type scheduleList struct {
	Items      []*scheduleView `json:"items"`
	NextCursor *string         `json:"next_cursor"`
}

// scheduleListRequest is GET /api/schedules with its page.
type scheduleListRequest struct {
	limit int
	after store.ScheduleRef
}

func (r *scheduleListRequest) bind(hr *http.Request) (err error) {
	r.limit, r.after.Tenant, r.after.Name, err = bindNamePage(hr, maxListedSchedules, maxListedSchedules)
	return err
}

// listSchedules is GET /api/schedules: a page of the caller's tenant's
// schedules, or for the admin without Latch-Tenant every tenant's, by
// tenant then name; next_cursor continues after its last.
func (s *Server) listSchedules(ctx context.Context, req *scheduleListRequest) (*scheduleList, error) {
	list, err := s.cfg.Store.ListSchedules(ctx, &store.ListSchedulesParams{
		Tenant: principalFrom(ctx).scope(), Limit: req.limit + 1, After: req.after,
	})
	if err != nil {
		return nil, err
	}
	page, next := namePage(list, req.limit, func(sc *store.Schedule) (string, string) { return sc.Tenant, sc.Name })
	out := &scheduleList{Items: make([]*scheduleView, len(page)), NextCursor: next}
	for i, sc := range page {
		out.Items[i] = toSchedule(sc)
	}
	return out, nil
}

// getSchedule is GET /api/schedules/{name}.
func (s *Server) getSchedule(ctx context.Context, req *scheduleName) (*scheduleView, error) {
	owner, err := principalFrom(ctx).ownerOf(scheduleOwner)
	if err != nil {
		return nil, err
	}
	sc, err := s.cfg.Store.GetSchedule(ctx, &store.GetScheduleParams{Tenant: owner, Name: req.name})
	if err != nil {
		return nil, scheduleErr(err, req.name)
	}
	return toSchedule(sc), nil
}

// triggerRequest is POST /api/schedules/{name}/trigger: the schedule, and
// the Idempotency-Key header when sent.
type triggerRequest struct {
	scheduleName
	idempotencyKey string
}

func (r *triggerRequest) bind(hr *http.Request) error {
	if err := r.scheduleName.bind(hr); err != nil {
		return err
	}
	if k, ok := headerValue(hr, idempotencyHeader); ok {
		if err := fieldProblem(store.CheckKey(idempotencyHeader, k)); err != nil {
			return err
		}
		r.idempotencyKey = k
	}
	return nil
}

// triggerSchedule is POST /api/schedules/{name}/trigger: an off-cycle tick
// at now, to the second, enabled or not, leaving the next tick as it is,
// fired under the overlap policy and the tenant's quota. Each request is a
// tick of its own (201): a second "run now" while the first runs is not
// merged into it, and under overlap skip is recorded as skipped. With
// Idempotency-Key the tick takes the dedup key
// store.ScheduleTriggerDedupKey(name, key), so a repeat of the request
// while that key lives answers 200 with the first one's execution, as a
// repeated submit does.
func (s *Server) triggerSchedule(ctx context.Context, req *triggerRequest) (*submitResponse, error) {
	owner, err := principalFrom(ctx).ownerOf(scheduleOwner)
	if err != nil {
		return nil, err
	}
	now := s.cfg.Now()
	res, err := s.cfg.Store.FireSchedule(ctx, &store.FireScheduleParams{
		Tenant:         owner,
		Name:           req.name,
		Tick:           now.UTC().Truncate(time.Second),
		Trigger:        true,
		IdempotencyKey: req.idempotencyKey,
		Now:            now,
	})
	if err != nil {
		return nil, scheduleErr(err, req.name)
	}
	if res.Execution == nil {
		return nil, errors.New("api: store.FireSchedule answered a trigger without an execution")
	}
	status := http.StatusCreated
	if res.Deduplicated {
		status = http.StatusOK
	}
	return &submitResponse{submitted(res.Execution, res.Deduplicated), status}, nil
}

// deleteSchedule is DELETE /api/schedules/{name}. The executions it fired
// stay.
func (s *Server) deleteSchedule(ctx context.Context, req *scheduleName) (*noContent, error) {
	owner, err := principalFrom(ctx).ownerOf(scheduleOwner)
	if err != nil {
		return nil, err
	}
	err = s.cfg.Store.DeleteSchedule(ctx, &store.DeleteScheduleParams{Tenant: owner, Name: req.name})
	if err != nil {
		return nil, scheduleErr(err, req.name)
	}
	s.scheduleChanged()
	return &noContent{}, nil
}

// scheduleChanged tells Config.OnScheduleChange.
func (s *Server) scheduleChanged() {
	if s.cfg.OnScheduleChange != nil {
		s.cfg.OnScheduleChange()
	}
}

// scheduleErr gives a missing schedule a detail that names it.
func scheduleErr(err error, name string) error {
	if errors.Is(err, store.ErrNotFound) {
		return problem(CodeNotFound, "schedule %q not found", name)
	}
	return err
}
