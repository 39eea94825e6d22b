package redis

import (
	"context"
	"strings"

	"github.com/latch-run/latch/store"
)

// Calls about one execution go to its tenant's namespace: the one its
// lease token names (router_token.go), else the one the call names, else
// the one holding the id (find: a fan-out over the tenants). After a script that may
// have given its tenant work, the router lowers the tenant's hints
// (router_hints.go).

// afterExec lowers the hints an execution's new state calls for: queued
// (claim now), scheduled (claim and promote at RunAt), suspended with a
// wake time (wake then); an execution with a concurrency key that left a
// running or queued state may have freed a slot for parked work (claim
// now); so may a child that ended, and its end may have queued its parent
// again (a fan-in wait's end: claim now).
func (r *Router) afterExec(ctx context.Context, e *store.Execution) {
	if e == nil || e.Tenant == "" {
		return
	}
	if e.ParentID != "" && e.Status.Terminal() {
		r.lower(ctx, e.Tenant, 0, hintClaim)
		return
	}
	switch e.Status {
	case store.StatusQueued:
		r.lower(ctx, e.Tenant, 0, hintClaim)
	case store.StatusScheduled:
		r.lower(ctx, e.Tenant, us(e.RunAt), hintClaim, hintPromote)
	case store.StatusSuspended:
		if e.WakeAt != nil {
			r.lower(ctx, e.Tenant, us(*e.WakeAt), hintWake)
		}
		if e.ConcurrencyKey != "" {
			r.lower(ctx, e.Tenant, 0, hintClaim)
		}
	default:
		if e.ConcurrencyKey != "" {
			r.lower(ctx, e.Tenant, 0, hintClaim)
		}
	}
}

func (r *Router) Admit(ctx context.Context, p *store.AdmitParams) (*store.AdmitResult, error) {
	res, err := r.view(p.Tenant).Admit(ctx, p)
	if err != nil {
		r.unsure(err)
		return nil, err
	}
	claimAt, promoteAt := int64(-1), int64(-1)
	for _, it := range res.Items {
		e := it.Execution
		if e == nil || it.Deduplicated {
			continue
		}
		switch e.Status {
		case store.StatusQueued:
			claimAt = 0
		case store.StatusScheduled:
			if t := us(e.RunAt); promoteAt < 0 || t < promoteAt {
				promoteAt = t
			}
		}
	}
	if promoteAt >= 0 {
		r.lower(ctx, p.Tenant, promoteAt, hintPromote)
		if claimAt < 0 {
			claimAt = promoteAt
		}
	}
	if claimAt >= 0 {
		r.lower(ctx, p.Tenant, claimAt, hintClaim)
	}
	return res, nil
}

// Heartbeat extends the lease; a lease made shorter than the one claimed
// (a heartbeat's LeaseDuration is its own) lowers the tenant's rescue hint
// to the new expiry, so that Rescue still finds it once it expires.
func (r *Router) Heartbeat(ctx context.Context, p *store.HeartbeatParams) (*store.HeartbeatResult, error) {
	return onLease(ctx, r, p, p.Tenant, p.Token, func(q *store.HeartbeatParams, t string) { q.Token = t },
		func(v *Store, ctx context.Context, q *store.HeartbeatParams) (*store.HeartbeatResult, error) {
			res, shortened, err := v.heartbeat(ctx, q)
			if err == nil && shortened {
				r.lower(ctx, v.route.tenant, us(res.ExpiresAt), hintRescue)
			}
			return res, err
		})
}

func (r *Router) Complete(ctx context.Context, p *store.CompleteParams) (*store.Execution, error) {
	e, err := onLease(ctx, r, p, p.Tenant, p.Token, func(q *store.CompleteParams, t string) { q.Token = t }, (*Store).Complete)
	r.unsure(err)
	if err == nil && e != nil && (e.ConcurrencyKey != "" || e.ParentID != "") {
		r.afterExec(ctx, e)
	}
	return e, err
}

func (r *Router) Fail(ctx context.Context, p *store.FailParams) (*store.Execution, error) {
	return r.ended(ctx)(onLease(ctx, r, p, p.Tenant, p.Token, func(q *store.FailParams, t string) { q.Token = t }, (*Store).Fail))
}

func (r *Router) Release(ctx context.Context, p *store.ReleaseParams) (*store.Execution, error) {
	return r.ended(ctx)(onLease(ctx, r, p, p.Tenant, p.Token, func(q *store.ReleaseParams, t string) { q.Token = t }, (*Store).Release))
}

func (r *Router) Cancel(ctx context.Context, p *store.CancelParams) (*store.Execution, error) {
	v, err := r.find(ctx, p.Tenant, p.ID)
	if err != nil {
		return nil, err
	}
	return r.ended(ctx)(v.Cancel(ctx, p))
}

func (r *Router) Delete(ctx context.Context, p *store.DeleteParams) error {
	v, err := r.find(ctx, p.Tenant, p.ID)
	if err != nil {
		return err
	}
	err = v.Delete(ctx, p)
	r.unsure(err)
	if err == nil && v.route.tenant != "" {
		r.lower(ctx, v.route.tenant, 0, hintClaim) // a force delete may free a key's slot
	}
	return err
}

func (r *Router) RecordStep(ctx context.Context, p *store.RecordStepParams) (*store.RecordStepResult, error) {
	return onLease(ctx, r, p, p.Tenant, p.Token, func(q *store.RecordStepParams, t string) { q.Token = t }, (*Store).RecordStep)
}

func (r *Router) Suspend(ctx context.Context, p *store.SuspendParams) (*store.Execution, error) {
	// Wake answers every suspension due by its Now, so the wake hint is
	// held down across the script (hold): a Wake that starts once the
	// suspension is visible (say, to another client's Get) but before
	// the lowering after the script would otherwise pass the tenant by.
	// A hint is a lower bound, so holding it low costs a Wake at most a
	// look at an index with nothing due.
	t, token := "", ""
	if tn, _, ok := strings.Cut(p.Token, "."); ok && store.ValidTenantName(tn) && (p.Tenant == "" || p.Tenant == tn) {
		switch {
		case !p.Until.IsZero():
			t, token = tn, r.hold(ctx, tn, us(p.Until), hintWake)
		case p.Timeout > 0:
			t, token = tn, r.hold(ctx, tn, us(now(p.Now).Add(p.Timeout)), hintWake)
		}
	}
	e, err := r.ended(ctx)(onLease(ctx, r, p, p.Tenant, p.Token, func(q *store.SuspendParams, t string) { q.Token = t }, (*Store).Suspend))
	r.release(ctx, t, hintWake, token)
	return e, err
}

// ended returns what a call that changed an execution answered, after
// noting a doubtful failure (unsure) or lowering the execution's tenant's
// hints for what the change made due (afterExec).
func (r *Router) ended(ctx context.Context) func(*store.Execution, error) (*store.Execution, error) {
	return func(e *store.Execution, err error) (*store.Execution, error) {
		r.unsure(err)
		if err == nil {
			r.afterExec(ctx, e)
		}
		return e, err
	}
}

func (r *Router) Signal(ctx context.Context, p *store.SignalParams) (*store.SignalResult, error) {
	v, err := r.find(ctx, p.Tenant, p.ExecutionID)
	if err != nil {
		return nil, err
	}
	res, err := v.Signal(ctx, p)
	r.unsure(err)
	if err == nil && res.Delivered && v.route.tenant != "" {
		r.lower(ctx, v.route.tenant, 0, hintClaim)
	}
	return res, err
}

func (r *Router) Retry(ctx context.Context, p *store.RetryParams) (*store.Execution, error) {
	v, err := r.find(ctx, p.Tenant, p.ID)
	if err != nil {
		return nil, err
	}
	e, err := v.Retry(ctx, p)
	r.unsure(err)
	if err == nil {
		r.afterExec(ctx, e)
	}
	return e, err
}

func (r *Router) Steps(ctx context.Context, p *store.StepsParams) (*store.StepsPage, error) {
	v, err := r.find(ctx, p.Tenant, p.ID)
	if err != nil {
		return nil, err
	}
	return v.Steps(ctx, p)
}

func (r *Router) Runs(ctx context.Context, p *store.RunsParams) ([]*store.Run, error) {
	v, err := r.find(ctx, p.Tenant, p.ID)
	if err != nil {
		return nil, err
	}
	return v.Runs(ctx, p)
}

func (r *Router) Get(ctx context.Context, p *store.GetParams) (*store.Execution, error) {
	v, err := r.find(ctx, p.Tenant, p.ID)
	if err != nil {
		return nil, err
	}
	return v.Get(ctx, p)
}

// Schedules and rate limits: the tenant's namespace.

func (r *Router) PutSchedule(ctx context.Context, p *store.PutScheduleParams) (*store.PutScheduleResult, error) {
	res, err := r.view(p.Schedule.Tenant).PutSchedule(ctx, p)
	r.unsure(err)
	if err == nil && res.Schedule != nil && res.Schedule.Enabled {
		r.lower(ctx, p.Schedule.Tenant, us(res.Schedule.NextRunAt), hintFire)
	}
	return res, err
}

func (r *Router) GetSchedule(ctx context.Context, p *store.GetScheduleParams) (*store.Schedule, error) {
	return r.view(p.Tenant).GetSchedule(ctx, p)
}

func (r *Router) SetScheduleEnabled(ctx context.Context, p *store.SetScheduleEnabledParams) (*store.Schedule, error) {
	s, err := r.view(p.Tenant).SetScheduleEnabled(ctx, p)
	r.unsure(err)
	if err == nil && s.Enabled {
		r.lower(ctx, p.Tenant, us(s.NextRunAt), hintFire)
	}
	return s, err
}

func (r *Router) DeleteSchedule(ctx context.Context, p *store.DeleteScheduleParams) error {
	return r.view(p.Tenant).DeleteSchedule(ctx, p)
}

func (r *Router) FireSchedule(ctx context.Context, p *store.FireScheduleParams) (*store.FireScheduleResult, error) {
	res, err := r.view(p.Tenant).FireSchedule(ctx, p)
	r.unsure(err)
	if err == nil && res.Execution != nil && !res.Deduplicated {
		r.afterExec(ctx, res.Execution)
	}
	return res, err
}

func (r *Router) PutRateLimit(ctx context.Context, p *store.PutRateLimitParams) (*store.RateLimit, error) {
	return r.view(p.Limit.Tenant).PutRateLimit(ctx, p)
}

func (r *Router) GetRateLimit(ctx context.Context, p *store.GetRateLimitParams) (*store.RateLimit, error) {
	return r.view(p.Tenant).GetRateLimit(ctx, p)
}

func (r *Router) DeleteRateLimit(ctx context.Context, p *store.DeleteRateLimitParams) error {
	return r.view(p.Tenant).DeleteRateLimit(ctx, p)
}
