// Package storewrap wraps a store.Store so that something outside it can
// watch every call (how long it took, what it was asked and what it
// answered) without changing what the store does: the instrumenting store
// of latch serve's metrics and the server's report counts are built on it.
//
// A wrapper must keep the store's optional capabilities, or the code that
// looks for them by type assertion (a worker's wake-ups on
// store.Notifier, the API's per-execution wake-ups on store.ChangeFeed,
// latch serve's warnings on store.Sharer and store.DurabilityChecker)
// would quietly lose them. Wrap returns a value that implements exactly
// the Notifier and ChangeFeed of the store it wraps, and always
// implements Sharer, DurabilityChecker and ClaimRider, answering what the
// wrapped store answers, or, when it lacks the capability, what a caller
// of a store without it concludes: store.SharedAcrossProcesses's true, no
// durability warning, no ride.
package storewrap

import (
	"context"
	"time"

	"github.com/latch-run/latch/store"
)

// Call is one finished call of a wrapped store.
type Call struct {
	Op       string        // the store.Store method: "Claim", "Fail", ...
	Params   any           // the call's params (*store.ClaimParams, ...); nil for Ping
	Result   any           // the answer (*store.ClaimResult, ...); nil for calls answering only an error, and on error
	Err      error         // what the call returned
	Duration time.Duration // the call's time, in real time
}

// Observer is told of every finished call, on the calling goroutine, after
// the wrapped store returned and before the caller gets the answer. It must
// not block and must not change Params or Result.
type Observer func(c *Call)

// Wrap returns st with obs told of every call. Close is passed through
// without a Call. The returned store has st's optional capabilities (see
// the package doc).
func Wrap(st store.Store, obs ...Observer) store.Store {
	w := &wrapped{s: st, obs: obs}
	n, notifies := st.(store.Notifier)
	f, feeds := st.(store.ChangeFeed)
	switch {
	case notifies && feeds:
		return &notifyingFeed{wrapped: w, n: n, f: f}
	case notifies:
		return &notifying{wrapped: w, n: n}
	case feeds: // a feed without a Notifier: not a shape the contract names, kept all the same
		return &feeding{wrapped: w, f: f}
	}
	return w
}

// Unwrap returns the store Wrap wrapped, st itself for any other store.
func Unwrap(st store.Store) store.Store {
	if u, ok := st.(interface{ unwrap() store.Store }); ok {
		return u.unwrap()
	}
	return st
}

type wrapped struct {
	s   store.Store
	obs []Observer
}

func (w *wrapped) unwrap() store.Store { return w.s }

func (w *wrapped) done(op string, start time.Time, p, r any, err error) {
	if err != nil {
		r = nil
	}
	c := &Call{Op: op, Params: p, Result: r, Err: err, Duration: time.Since(start)}
	for _, o := range w.obs {
		o(c)
	}
}

// SharedAcrossProcesses implements store.Sharer as the wrapped store does.
func (w *wrapped) SharedAcrossProcesses() bool { return store.SharedAcrossProcesses(w.s) }

// CheckDurability implements store.DurabilityChecker as the wrapped store
// does; a store without the capability has nothing to warn of.
func (w *wrapped) CheckDurability(ctx context.Context) (string, error) {
	if dc, ok := w.s.(store.DurabilityChecker); ok {
		return dc.CheckDurability(ctx)
	}
	return "", nil
}

type notifying struct {
	*wrapped
	n store.Notifier
}

func (w *notifying) Changed() <-chan struct{} { return w.n.Changed() }

type feeding struct {
	*wrapped
	f store.ChangeFeed
}

func (w *feeding) WatchChanges(fn func(store.Change)) (stop func()) { return w.f.WatchChanges(fn) }

type notifyingFeed struct {
	*wrapped
	n store.Notifier
	f store.ChangeFeed
}

func (w *notifyingFeed) Changed() <-chan struct{} { return w.n.Changed() }
func (w *notifyingFeed) WatchChanges(fn func(store.Change)) (stop func()) {
	return w.f.WatchChanges(fn)
}

var (
	_ store.Store             = (*wrapped)(nil)
	_ store.Sharer            = (*wrapped)(nil)
	_ store.DurabilityChecker = (*wrapped)(nil)
	_ store.ClaimRider        = (*wrapped)(nil)
	_ store.Notifier          = (*notifying)(nil)
	_ store.ChangeFeed        = (*feeding)(nil)
	_ store.Notifier          = (*notifyingFeed)(nil)
	_ store.ChangeFeed        = (*notifyingFeed)(nil)
)

// Close closes the wrapped store.
func (w *wrapped) Close() error { return w.s.Close() }

func (w *wrapped) Activity(ctx context.Context, p *store.ActivityParams) ([]*store.ActivityMinute, error) {
	start := time.Now()
	r, err := w.s.Activity(ctx, p)
	w.done("Activity", start, p, r, err)
	return r, err
}

func (w *wrapped) AddAPIKey(ctx context.Context, p *store.AddAPIKeyParams) error {
	start := time.Now()
	err := w.s.AddAPIKey(ctx, p)
	w.done("AddAPIKey", start, p, nil, err)
	return err
}

func (w *wrapped) Admit(ctx context.Context, p *store.AdmitParams) (*store.AdmitResult, error) {
	start := time.Now()
	r, err := w.s.Admit(ctx, p)
	w.done("Admit", start, p, r, err)
	return r, err
}

func (w *wrapped) Cancel(ctx context.Context, p *store.CancelParams) (*store.Execution, error) {
	start := time.Now()
	r, err := w.s.Cancel(ctx, p)
	w.done("Cancel", start, p, r, err)
	return r, err
}

func (w *wrapped) Claim(ctx context.Context, p *store.ClaimParams) (*store.ClaimResult, error) {
	start := time.Now()
	r, err := w.s.Claim(ctx, p)
	w.done("Claim", start, p, r, err)
	return r, err
}

// RideClaim implements store.ClaimRider as the wrapped store does (nil
// when it lacks the capability). A ride that leased something, or failed,
// is told to the observers as the Claim it is, when Stop answers.
func (w *wrapped) RideClaim(p *store.ClaimParams, now func() time.Time) store.Ride {
	cr, ok := w.s.(store.ClaimRider)
	if !ok {
		return nil
	}
	r := cr.RideClaim(p, now)
	if r == nil {
		return nil
	}
	return &ride{Ride: r, w: w, p: p}
}

type ride struct {
	store.Ride
	w *wrapped
	p *store.ClaimParams
}

func (r *ride) Stop(ctx context.Context) (*store.ClaimResult, error) {
	start := time.Now()
	res, err := r.Ride.Stop(ctx)
	if res != nil || err != nil {
		r.w.done("Claim", start, r.p, res, err)
	}
	return res, err
}

func (w *wrapped) Complete(ctx context.Context, p *store.CompleteParams) (*store.Execution, error) {
	start := time.Now()
	r, err := w.s.Complete(ctx, p)
	w.done("Complete", start, p, r, err)
	return r, err
}

func (w *wrapped) ConcurrencyKeys(ctx context.Context, p *store.ConcurrencyKeysParams) ([]*store.ConcurrencyKeyUse, error) {
	start := time.Now()
	r, err := w.s.ConcurrencyKeys(ctx, p)
	w.done("ConcurrencyKeys", start, p, r, err)
	return r, err
}

func (w *wrapped) CreateSession(ctx context.Context, p *store.CreateSessionParams) error {
	start := time.Now()
	err := w.s.CreateSession(ctx, p)
	w.done("CreateSession", start, p, nil, err)
	return err
}

func (w *wrapped) CreateTenant(ctx context.Context, p *store.CreateTenantParams) (*store.Tenant, error) {
	start := time.Now()
	r, err := w.s.CreateTenant(ctx, p)
	w.done("CreateTenant", start, p, r, err)
	return r, err
}

func (w *wrapped) Delete(ctx context.Context, p *store.DeleteParams) error {
	start := time.Now()
	err := w.s.Delete(ctx, p)
	w.done("Delete", start, p, nil, err)
	return err
}

func (w *wrapped) DeleteAPIKey(ctx context.Context, p *store.DeleteAPIKeyParams) error {
	start := time.Now()
	err := w.s.DeleteAPIKey(ctx, p)
	w.done("DeleteAPIKey", start, p, nil, err)
	return err
}

func (w *wrapped) DeleteRateLimit(ctx context.Context, p *store.DeleteRateLimitParams) error {
	start := time.Now()
	err := w.s.DeleteRateLimit(ctx, p)
	w.done("DeleteRateLimit", start, p, nil, err)
	return err
}

func (w *wrapped) DeleteSchedule(ctx context.Context, p *store.DeleteScheduleParams) error {
	start := time.Now()
	err := w.s.DeleteSchedule(ctx, p)
	w.done("DeleteSchedule", start, p, nil, err)
	return err
}

func (w *wrapped) DeleteSession(ctx context.Context, p *store.DeleteSessionParams) error {
	start := time.Now()
	err := w.s.DeleteSession(ctx, p)
	w.done("DeleteSession", start, p, nil, err)
	return err
}

func (w *wrapped) DeleteTenant(ctx context.Context, p *store.DeleteTenantParams) error {
	start := time.Now()
	err := w.s.DeleteTenant(ctx, p)
	w.done("DeleteTenant", start, p, nil, err)
	return err
}

func (w *wrapped) EnsureAdminKey(ctx context.Context, p *store.EnsureAdminKeyParams) (*store.EnsureAdminKeyResult, error) {
	start := time.Now()
	r, err := w.s.EnsureAdminKey(ctx, p)
	w.done("EnsureAdminKey", start, p, r, err)
	return r, err
}

func (w *wrapped) Fail(ctx context.Context, p *store.FailParams) (*store.Execution, error) {
	start := time.Now()
	r, err := w.s.Fail(ctx, p)
	w.done("Fail", start, p, r, err)
	return r, err
}

func (w *wrapped) FireSchedule(ctx context.Context, p *store.FireScheduleParams) (*store.FireScheduleResult, error) {
	start := time.Now()
	r, err := w.s.FireSchedule(ctx, p)
	w.done("FireSchedule", start, p, r, err)
	return r, err
}

func (w *wrapped) Get(ctx context.Context, p *store.GetParams) (*store.Execution, error) {
	start := time.Now()
	r, err := w.s.Get(ctx, p)
	w.done("Get", start, p, r, err)
	return r, err
}

func (w *wrapped) GetRateLimit(ctx context.Context, p *store.GetRateLimitParams) (*store.RateLimit, error) {
	start := time.Now()
	r, err := w.s.GetRateLimit(ctx, p)
	w.done("GetRateLimit", start, p, r, err)
	return r, err
}

func (w *wrapped) GetSchedule(ctx context.Context, p *store.GetScheduleParams) (*store.Schedule, error) {
	start := time.Now()
	r, err := w.s.GetSchedule(ctx, p)
	w.done("GetSchedule", start, p, r, err)
	return r, err
}

func (w *wrapped) GetSession(ctx context.Context, p *store.GetSessionParams) (*store.Session, error) {
	start := time.Now()
	r, err := w.s.GetSession(ctx, p)
	w.done("GetSession", start, p, r, err)
	return r, err
}

func (w *wrapped) GetTenant(ctx context.Context, p *store.GetTenantParams) (*store.Tenant, error) {
	start := time.Now()
	r, err := w.s.GetTenant(ctx, p)
	w.done("GetTenant", start, p, r, err)
	return r, err
}

func (w *wrapped) Heartbeat(ctx context.Context, p *store.HeartbeatParams) (*store.HeartbeatResult, error) {
	start := time.Now()
	r, err := w.s.Heartbeat(ctx, p)
	w.done("Heartbeat", start, p, r, err)
	return r, err
}

func (w *wrapped) List(ctx context.Context, p *store.ListParams) (*store.ListResult, error) {
	start := time.Now()
	r, err := w.s.List(ctx, p)
	w.done("List", start, p, r, err)
	return r, err
}

func (w *wrapped) ListAPIKeys(ctx context.Context, p *store.ListAPIKeysParams) ([]*store.APIKeyInfo, error) {
	start := time.Now()
	r, err := w.s.ListAPIKeys(ctx, p)
	w.done("ListAPIKeys", start, p, r, err)
	return r, err
}

func (w *wrapped) ListRateLimits(ctx context.Context, p *store.ListRateLimitsParams) ([]*store.RateLimit, error) {
	start := time.Now()
	r, err := w.s.ListRateLimits(ctx, p)
	w.done("ListRateLimits", start, p, r, err)
	return r, err
}

func (w *wrapped) ListSchedules(ctx context.Context, p *store.ListSchedulesParams) ([]*store.Schedule, error) {
	start := time.Now()
	r, err := w.s.ListSchedules(ctx, p)
	w.done("ListSchedules", start, p, r, err)
	return r, err
}

func (w *wrapped) LookupAPIKey(ctx context.Context, p *store.LookupAPIKeyParams) (*store.APIKey, error) {
	start := time.Now()
	r, err := w.s.LookupAPIKey(ctx, p)
	w.done("LookupAPIKey", start, p, r, err)
	return r, err
}

func (w *wrapped) Ping(ctx context.Context) error {
	start := time.Now()
	err := w.s.Ping(ctx)
	w.done("Ping", start, nil, nil, err)
	return err
}

func (w *wrapped) Presence(ctx context.Context, p *store.PresenceParams) (*store.Presence, error) {
	start := time.Now()
	r, err := w.s.Presence(ctx, p)
	w.done("Presence", start, p, r, err)
	return r, err
}

func (w *wrapped) Promote(ctx context.Context, p *store.PromoteParams) (*store.PromoteResult, error) {
	start := time.Now()
	r, err := w.s.Promote(ctx, p)
	w.done("Promote", start, p, r, err)
	return r, err
}

func (w *wrapped) Prune(ctx context.Context, p *store.PruneParams) (*store.PruneResult, error) {
	start := time.Now()
	r, err := w.s.Prune(ctx, p)
	w.done("Prune", start, p, r, err)
	return r, err
}

func (w *wrapped) PutRateLimit(ctx context.Context, p *store.PutRateLimitParams) (*store.RateLimit, error) {
	start := time.Now()
	r, err := w.s.PutRateLimit(ctx, p)
	w.done("PutRateLimit", start, p, r, err)
	return r, err
}

func (w *wrapped) PutSchedule(ctx context.Context, p *store.PutScheduleParams) (*store.PutScheduleResult, error) {
	start := time.Now()
	r, err := w.s.PutSchedule(ctx, p)
	w.done("PutSchedule", start, p, r, err)
	return r, err
}

func (w *wrapped) QueueStats(ctx context.Context, p *store.QueueStatsParams) ([]*store.QueueStats, error) {
	start := time.Now()
	r, err := w.s.QueueStats(ctx, p)
	w.done("QueueStats", start, p, r, err)
	return r, err
}

func (w *wrapped) RecordStep(ctx context.Context, p *store.RecordStepParams) (*store.RecordStepResult, error) {
	start := time.Now()
	r, err := w.s.RecordStep(ctx, p)
	w.done("RecordStep", start, p, r, err)
	return r, err
}

func (w *wrapped) Release(ctx context.Context, p *store.ReleaseParams) (*store.Execution, error) {
	start := time.Now()
	r, err := w.s.Release(ctx, p)
	w.done("Release", start, p, r, err)
	return r, err
}

func (w *wrapped) ReportServer(ctx context.Context, p *store.ServerReport) error {
	start := time.Now()
	err := w.s.ReportServer(ctx, p)
	w.done("ReportServer", start, p, nil, err)
	return err
}

func (w *wrapped) Rescue(ctx context.Context, p *store.RescueParams) (*store.RescueResult, error) {
	start := time.Now()
	r, err := w.s.Rescue(ctx, p)
	w.done("Rescue", start, p, r, err)
	return r, err
}

func (w *wrapped) Retry(ctx context.Context, p *store.RetryParams) (*store.Execution, error) {
	start := time.Now()
	r, err := w.s.Retry(ctx, p)
	w.done("Retry", start, p, r, err)
	return r, err
}

func (w *wrapped) Explain(ctx context.Context, p *store.ExplainParams) (*store.Explanation, error) {
	start := time.Now()
	r, err := w.s.Explain(ctx, p)
	w.done("Explain", start, p, r, err)
	return r, err
}

func (w *wrapped) ReadyKinds(ctx context.Context, p *store.ReadyKindsParams) ([]*store.ReadyKind, error) {
	start := time.Now()
	r, err := w.s.ReadyKinds(ctx, p)
	w.done("ReadyKinds", start, p, r, err)
	return r, err
}

func (w *wrapped) Runs(ctx context.Context, p *store.RunsParams) ([]*store.Run, error) {
	start := time.Now()
	r, err := w.s.Runs(ctx, p)
	w.done("Runs", start, p, r, err)
	return r, err
}

func (w *wrapped) Signal(ctx context.Context, p *store.SignalParams) (*store.SignalResult, error) {
	start := time.Now()
	r, err := w.s.Signal(ctx, p)
	w.done("Signal", start, p, r, err)
	return r, err
}

func (w *wrapped) Spawn(ctx context.Context, p *store.SpawnParams) (*store.SpawnResult, error) {
	start := time.Now()
	r, err := w.s.Spawn(ctx, p)
	w.done("Spawn", start, p, r, err)
	return r, err
}

func (w *wrapped) Publish(ctx context.Context, p *store.PublishParams) (*store.PublishResult, error) {
	start := time.Now()
	r, err := w.s.Publish(ctx, p)
	w.done("Publish", start, p, r, err)
	return r, err
}

func (w *wrapped) PutSubscription(ctx context.Context, p *store.PutSubscriptionParams) (*store.PutSubscriptionResult, error) {
	start := time.Now()
	r, err := w.s.PutSubscription(ctx, p)
	w.done("PutSubscription", start, p, r, err)
	return r, err
}

func (w *wrapped) GetSubscription(ctx context.Context, p *store.GetSubscriptionParams) (*store.Subscription, error) {
	start := time.Now()
	r, err := w.s.GetSubscription(ctx, p)
	w.done("GetSubscription", start, p, r, err)
	return r, err
}

func (w *wrapped) ListSubscriptions(ctx context.Context, p *store.ListSubscriptionsParams) ([]*store.Subscription, error) {
	start := time.Now()
	r, err := w.s.ListSubscriptions(ctx, p)
	w.done("ListSubscriptions", start, p, r, err)
	return r, err
}

func (w *wrapped) DeleteSubscription(ctx context.Context, p *store.DeleteSubscriptionParams) error {
	start := time.Now()
	err := w.s.DeleteSubscription(ctx, p)
	w.done("DeleteSubscription", start, p, nil, err)
	return err
}

func (w *wrapped) Steps(ctx context.Context, p *store.StepsParams) (*store.StepsPage, error) {
	start := time.Now()
	r, err := w.s.Steps(ctx, p)
	w.done("Steps", start, p, r, err)
	return r, err
}

func (w *wrapped) Suspend(ctx context.Context, p *store.SuspendParams) (*store.Execution, error) {
	start := time.Now()
	r, err := w.s.Suspend(ctx, p)
	w.done("Suspend", start, p, r, err)
	return r, err
}

func (w *wrapped) TouchAPIKey(ctx context.Context, p *store.TouchAPIKeyParams) error {
	start := time.Now()
	err := w.s.TouchAPIKey(ctx, p)
	w.done("TouchAPIKey", start, p, nil, err)
	return err
}

func (w *wrapped) UpdateTenant(ctx context.Context, p *store.UpdateTenantParams) (*store.Tenant, error) {
	start := time.Now()
	r, err := w.s.UpdateTenant(ctx, p)
	w.done("UpdateTenant", start, p, r, err)
	return r, err
}

func (w *wrapped) Wake(ctx context.Context, p *store.WakeParams) (*store.WakeResult, error) {
	start := time.Now()
	r, err := w.s.Wake(ctx, p)
	w.done("Wake", start, p, r, err)
	return r, err
}

func (w *wrapped) ListTenants(ctx context.Context, p *store.ListTenantsParams) ([]*store.Tenant, error) {
	start := time.Now()
	r, err := w.s.ListTenants(ctx, p)
	w.done("ListTenants", start, p, r, err)
	return r, err
}

func (w *wrapped) SetScheduleEnabled(ctx context.Context, p *store.SetScheduleEnabledParams) (*store.Schedule, error) {
	start := time.Now()
	r, err := w.s.SetScheduleEnabled(ctx, p)
	w.done("SetScheduleEnabled", start, p, r, err)
	return r, err
}
