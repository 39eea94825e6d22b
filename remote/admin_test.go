package remote_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/latch-run/latch/api"
	"github.com/latch-run/latch/remote"
)

func TestSchedules(t *testing.T) {
	ctx := context.Background()
	s := newServer(t, func(c *api.Config) { c.MaxSchedulesPerTenant = 2; c.MinScheduleInterval = time.Minute })
	c := s.tenant(t, remote.TenantSpec{Name: "acme"})
	spec := remote.ScheduleSpec{Every: ptr("1h"), Kind: "report", Payload: map[string]string{"to": "ops"}, Overlap: "queue"}
	sc, created := must2(c.PutSchedule(ctx, "hourly", spec))(t)
	if !created || sc.Name != "hourly" || sc.Tenant != "acme" || *sc.Every != "1h" || sc.Queue != "default" ||
		sc.Overlap != "queue" || !sc.Enabled || sc.NextRunAt == nil {
		t.Fatalf("put: created %v, %+v", created, sc)
	}
	if _, created := must2(c.PutSchedule(ctx, "hourly", spec))(t); created {
		t.Fatal("a replace said created")
	}
	_, _, err := c.PutSchedule(ctx, "fast", remote.ScheduleSpec{Every: ptr("1s"), Kind: "report"})
	wantCode(t, err, remote.ErrScheduleTooFrequent, http.StatusBadRequest)
	must2(c.PutSchedule(ctx, "daily", remote.ScheduleSpec{Cron: ptr("0 9 * * *"), Timezone: "Europe/Paris", Kind: "report", Enabled: ptr(false)}))(t)
	_, _, err = c.PutSchedule(ctx, "third", remote.ScheduleSpec{Every: ptr("1h"), Kind: "report"})
	wantCode(t, err, remote.ErrScheduleLimit, http.StatusConflict)

	if got := must(c.GetSchedule(ctx, "daily"))(t); got.Enabled || got.NextRunAt != nil || *got.Cron != "0 9 * * *" {
		t.Fatalf("get: %+v", got)
	}
	var names []string
	for sc, err := range c.Schedules(ctx, remote.PageOptions{Limit: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, sc.Name)
	}
	if len(names) != 2 || names[0] != "daily" || names[1] != "hourly" {
		t.Fatalf("schedules %v", names)
	}
	if p := must(c.SchedulesPage(ctx, remote.PageOptions{}))(t); len(p.Items) != 2 || p.NextCursor != nil {
		t.Fatalf("page %+v", p)
	}

	fired := must(c.TriggerSchedule(ctx, "daily", remote.TriggerOptions{IdempotencyKey: "t1"}))(t)
	if fired.Schedule == nil || *fired.Schedule != "daily" || *fired.Deduplicated {
		t.Fatalf("trigger %+v", fired)
	}
	if again := must(c.TriggerSchedule(ctx, "daily", remote.TriggerOptions{IdempotencyKey: "t1"}))(t); again.ExecutionID != fired.ExecutionID || !*again.Deduplicated {
		t.Fatalf("a repeated trigger: %+v", again)
	}
	if other := must(c.TriggerSchedule(ctx, "hourly", remote.TriggerOptions{}))(t); other.ExecutionID == fired.ExecutionID {
		t.Fatal("a trigger without a key answered another's execution")
	}
	if p := must(c.PauseSchedule(ctx, "hourly"))(t); p.Enabled || p.NextRunAt != nil {
		t.Fatalf("pause %+v", p)
	}
	if r := must(c.ResumeSchedule(ctx, "hourly"))(t); !r.Enabled || r.NextRunAt == nil {
		t.Fatalf("resume %+v", r)
	}
	if err := c.DeleteSchedule(ctx, "hourly"); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetSchedule(ctx, "hourly")
	wantCode(t, err, remote.ErrNotFound, http.StatusNotFound)
	// The admin key names the tenant of one schedule.
	_, err = s.admin.GetSchedule(ctx, "daily")
	wantCode(t, err, remote.ErrInvalidRequest, http.StatusBadRequest)
	if got := must(s.admin.ForTenant("acme").GetSchedule(ctx, "daily"))(t); got.Tenant != "acme" {
		t.Fatalf("admin read %+v", got)
	}
}

func TestRateLimits(t *testing.T) {
	ctx := context.Background()
	s := newServer(t)
	c := s.tenant(t, remote.TenantSpec{Name: "acme"})
	rl := must(c.PutRateLimit(ctx, "stripe", remote.RateLimitSpec{Rate: 10, PerSeconds: 60, Burst: 2}))(t)
	if rl.Key != "stripe" || rl.Rate != 10 || rl.PerSeconds != 60 || rl.Burst != 2 {
		t.Fatalf("put %+v", rl)
	}
	if got := must(c.GetRateLimit(ctx, "stripe"))(t); got.Rate != 10 || got.CreatedAt.IsZero() {
		t.Fatalf("get %+v", got)
	}
	// A concurrency key and a rate key ride on a submit.
	e := must(c.Submit(ctx, remote.SubmitRequest{Kind: "charge", ConcurrencyKey: "acct-1", ConcurrencyLimit: 2, RateKey: "stripe"}))(t)
	if *e.ConcurrencyKey != "acct-1" || *e.ConcurrencyLimit != 2 || *e.RateKey != "stripe" {
		t.Fatalf("submit %+v", e)
	}
	if del := must(c.DeleteRateLimit(ctx, "stripe"))(t); del.Rate != 10 {
		t.Fatalf("delete %+v", del)
	}
	_, err := c.GetRateLimit(ctx, "stripe")
	wantCode(t, err, remote.ErrNotFound, http.StatusNotFound)
	_, err = c.PutRateLimit(ctx, "bad", remote.RateLimitSpec{Rate: 0, PerSeconds: 1})
	wantCode(t, err, remote.ErrInvalidRequest, http.StatusBadRequest)
}

func TestTenantsAndKeys(t *testing.T) {
	ctx := context.Background()
	s := newServer(t)
	created := must(s.admin.CreateTenant(ctx, remote.TenantSpec{Name: "acme", MaxInflight: ptr(1), RetentionSeconds: ptr(int64(3600))}))(t)
	if created.Name != "acme" || created.APIKey == "" || created.KeyID == "" || created.MaxInflight != 1 || created.RetentionSeconds != 3600 {
		t.Fatalf("create %+v", created)
	}
	_, err := s.admin.CreateTenant(ctx, remote.TenantSpec{Name: "acme"})
	wantCode(t, err, remote.ErrTenantExists, http.StatusConflict)
	c := remote.New(s.url, created.APIKey)
	if got := must(c.GetTenant(ctx, "acme"))(t); got.MaxInflight != 1 || got.Inflight != 0 {
		t.Fatalf("a tenant reads itself: %+v", got)
	}
	_, err = c.CreateTenant(ctx, remote.TenantSpec{Name: "other"})
	wantCode(t, err, remote.ErrForbidden, http.StatusForbidden)

	// Quota: the second in flight is refused, with Retry-After; the
	// client's retries wait it, and give up at their bound.
	must(c.Submit(ctx, remote.SubmitRequest{Kind: "echo"}))(t)
	quick := remote.New(s.url, created.APIKey, remote.WithRetry(remote.RetryPolicy{MaxRetries: 1, MaxRetryAfter: 10 * time.Second}))
	start := time.Now()
	_, err = quick.Submit(ctx, remote.SubmitRequest{Kind: "echo"})
	e := wantCode(t, err, remote.ErrQuotaExceeded, http.StatusTooManyRequests)
	if e.RetryAfter != 5*time.Second || time.Since(start) < 5*time.Second {
		t.Fatalf("RetryAfter %v, gave up after %s", e.RetryAfter, time.Since(start))
	}

	up := must(s.admin.UpdateTenant(ctx, "acme", remote.TenantPatch{MaxInflight: ptr(5), MaxStoredBytes: ptr(int64(300))}))(t)
	if up.MaxInflight != 5 || up.Inflight != 1 || up.MaxStoredBytes != 300 {
		t.Fatalf("update %+v", up)
	}
	_, err = c.Submit(ctx, remote.SubmitRequest{Kind: "echo", Payload: string(make([]byte, 400))})
	wantCode(t, err, remote.ErrStorageExceeded, http.StatusConflict)

	k := must(s.admin.AddKey(ctx, "acme"))(t)
	keys := must(s.admin.Keys(ctx, "acme"))(t)
	if len(keys.Items) != 2 || k.APIKey == "" {
		t.Fatalf("keys %+v", keys.Items)
	}
	second := remote.New(s.url, k.APIKey)
	must(second.GetTenant(ctx, "acme"))(t)
	if err := s.admin.DeleteKey(ctx, "acme", k.KeyID); err != nil {
		t.Fatal(err)
	}
	_, err = second.GetTenant(ctx, "acme")
	wantCode(t, err, remote.ErrUnauthorized, http.StatusUnauthorized)
	err = s.admin.DeleteKey(ctx, "acme", k.KeyID)
	wantCode(t, err, remote.ErrNotFound, http.StatusNotFound)

	must(s.admin.UpdateTenant(ctx, "acme", remote.TenantPatch{Disabled: ptr(true)}))(t)
	_, err = c.ListPage(ctx, remote.ListOptions{})
	wantCode(t, err, remote.ErrTenantDisabled, http.StatusForbidden)
	must(s.admin.UpdateTenant(ctx, "acme", remote.TenantPatch{Disabled: ptr(false)}))(t)

	err = s.admin.DeleteTenant(ctx, "acme", remote.DeleteOptions{})
	wantCode(t, err, remote.ErrNotTerminal, http.StatusConflict)
	if err := s.admin.DeleteTenant(ctx, "acme", remote.DeleteOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	_, err = s.admin.GetTenant(ctx, "acme")
	wantCode(t, err, remote.ErrNotFound, http.StatusNotFound)
}

func TestServerInfo(t *testing.T) {
	ctx := context.Background()
	s := newServer(t)
	anon := remote.New(s.url, "")
	if h := must(anon.Health(ctx))(t); h.Status != "ok" {
		t.Fatalf("health %+v", h)
	}
	if h := must(anon.Ready(ctx))(t); h.Status != "ready" {
		t.Fatalf("ready %+v", h)
	}
	doc := must(anon.OpenAPI(ctx))(t)
	var d struct {
		OpenAPI string `json:"openapi"`
	}
	if err := json.Unmarshal(doc, &d); err != nil || d.OpenAPI == "" {
		t.Fatalf("openapi: %v", err)
	}
	_, err := anon.ListPage(ctx, remote.ListOptions{})
	wantCode(t, err, remote.ErrUnauthorized, http.StatusUnauthorized)
	// The store gone, the server is not ready.
	s.store.Close()
	_, err = remote.New(s.url, "", remote.WithRetry(remote.RetryPolicy{})).Ready(ctx)
	if e := wantCode(t, err, remote.ErrUnavailable, http.StatusServiceUnavailable); e.Title == "" {
		t.Fatalf("no title: %+v", e)
	}
}

// must2 is must for two answers.
func must2[A, B any](a A, b B, err error) func(*testing.T) (A, B) {
	return func(t *testing.T) (A, B) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return a, b
	}
}
