package lincheck

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/latch-run/latch/store"
)

// OpKind names one store operation of the checked vocabulary.
type OpKind uint8

// The operations the model knows. The linearizability workloads use the
// per-tenant ones (Admit to Tenant); Rescue, Promote and Prune act on every
// tenant at once, so only the sequential property test drives them.
const (
	OpAdmit OpKind = iota
	OpGet
	OpCancel
	OpDelete
	OpClaim
	OpHeartbeat
	OpComplete
	OpFail
	OpRelease
	OpTenant // GetTenant: the quota counter
	OpRescue
	OpPromote
	OpPrune
	// The flow operations (flow_ops.go). Wake, like Rescue, acts on every
	// tenant at once: only a workload of one partition drives it.
	OpRecordStep
	OpSuspend
	OpSignal
	OpWake
	OpRetry
	OpSteps
	// Spawn (children_model.go); a fan-in wait is a Suspend with Children.
	OpSpawn
	// The event operation (event_ops.go); a wait for an event is a
	// Suspend with Event set.
	OpPublish
)

var opNames = [...]string{"admit", "get", "cancel", "delete", "claim", "heartbeat", "complete",
	"fail", "release", "tenant", "rescue", "promote", "prune", "record", "suspend", "signal", "wake",
	"retry", "steps", "spawn", "publish"}

func (k OpKind) String() string {
	if int(k) < len(opNames) {
		return opNames[k]
	}
	return fmt.Sprintf("op%d", k)
}

// Sub is one submission of an Admit. Payload is canonical JSON ("" = {}).
type Sub struct {
	Kind        string
	Payload     string
	Key         string
	Priority    int
	RunAt       int64 // unix ns; 0 = now
	MaxAttempts int   // 0 = store default
	CKey        string
	CLimit      int // 0 = store default, with CKey
}

// Input is the invocation of one operation: everything the store is given.
// Times are unix nanoseconds of the fake clock the caller passes as Now.
type Input struct {
	Op     OpKind
	Scope  string // partition key of the linearizability check; unused by the model
	Client int
	Tenant string
	Now    int64

	Items []Sub // Admit

	ID        string // Get, Cancel, Delete, Heartbeat, Complete, Fail, Release and the flow operations
	Token     string // Heartbeat, Complete, Fail, Release, RecordStep, Suspend
	Force     bool   // Delete
	Retry     bool   // Fail
	Delay     int64  // Fail: retry delay in ns
	Unstarted bool   // Release

	Name      string // RecordStep, Suspend: the step; Signal: the signal
	Data      string // RecordStep: the result; Signal: the data (canonical JSON, "" = null)
	StartedAt int64  // RecordStep (0 = not given)
	Until     int64  // Suspend: a sleep's end (0 for a wait)
	Signal    string // Suspend: a wait's signal ("" for a sleep)
	Timeout   int64  // Suspend: a wait's timeout in ns (0 = none)
	IdemKey   string // Signal, Publish
	Event     string // Suspend: a wait's event ("" for none)
	EvKey     string // Suspend: a wait's event key; Publish: the event's key ("" = none)
	Since     int64  // Suspend: a wait's since (0 = the execution's CreatedAt)

	Abandon  bool   // Spawn: OnParentEnd abandon (else cancel); Items are the children
	Children string // Suspend: a fan-in wait on this spawn step
	Count    int    // Suspend: the fan-in wait's count (0 = all)

	Kinds []string // Claim filter (nil = every kind)
	Max   int      // Claim
	Lease int64    // Claim, Heartbeat: lease duration in ns (0 = 30s)
}

// Code is an error reduced to the store sentinel it wraps: "" for nil,
// "other: ..." for anything that is not a business refusal.
type Code string

// The sentinel codes.
const (
	OK                  Code = ""
	CodeNotFound        Code = "not_found"
	CodeQuota           Code = "quota_exceeded"
	CodeReused          Code = "dedup_key_reused"
	CodeLeaseLost       Code = "lease_lost"
	CodeNotTerminal     Code = "not_terminal"
	CodeInvalid         Code = "invalid"
	CodeTenantExists    Code = "tenant_exists"
	CodeNotActive       Code = "not_active"
	CodeNotFailed       Code = "not_failed"
	CodeTooManyChildren Code = "too_many_children"
)

func codeOf(err error) Code {
	switch {
	case err == nil:
		return OK
	case errors.Is(err, store.ErrNotFound):
		return CodeNotFound
	case errors.Is(err, store.ErrQuotaExceeded):
		return CodeQuota
	case errors.Is(err, store.ErrDedupKeyReused):
		return CodeReused
	case errors.Is(err, store.ErrLeaseLost):
		return CodeLeaseLost
	case errors.Is(err, store.ErrNotTerminal):
		return CodeNotTerminal
	case errors.Is(err, store.ErrInvalid):
		return CodeInvalid
	case errors.Is(err, store.ErrTenantExists):
		return CodeTenantExists
	case errors.Is(err, store.ErrNotActive):
		return CodeNotActive
	case errors.Is(err, store.ErrNotFailed):
		return CodeNotFailed
	case errors.Is(err, store.ErrTooManyChildren):
		return CodeTooManyChildren
	}
	return Code("other: " + err.Error())
}

// unexpected reports a code that is no business refusal: a backend failure.
func (c Code) unexpected() bool { return strings.HasPrefix(string(c), "other:") }

// View is the observable part of an execution that the model predicts
// exactly. Times are unix ns, 0 for none.
type View struct {
	ID              string
	Tenant          string
	Kind            string
	Key             string
	Payload         string
	Priority        int
	CKey            string
	CLimit          int
	Status          store.Status
	Attempt         int
	MaxAttempts     int
	CancelRequested bool
	RunAt           int64
	FinishedAt      int64
	LeaseExpires    int64
	// A suspended execution's wait (all empty in every other status).
	WakeAt      int64
	WaitingFor  string
	SuspendStep string
	// A child's parent and spawn step ("" for none).
	ParentID   string
	ParentStep string
	// The submits its dedup key answered with it, the latest at
	// LastDedupHit (State.Hits says whether the backend counts them).
	DedupHits    int
	LastDedupHit int64
}

func viewOf(x *store.Execution) View {
	if x == nil {
		return View{}
	}
	v := View{
		ID: x.ID, Tenant: x.Tenant, Kind: x.Kind, Key: x.DedupKey, Payload: string(x.Payload),
		Priority: x.Priority, CKey: x.ConcurrencyKey, CLimit: x.ConcurrencyLimit, Status: x.Status, Attempt: x.Attempt, MaxAttempts: x.MaxAttempts,
		CancelRequested: x.CancelRequested, RunAt: x.RunAt.UnixNano(),
	}
	if x.FinishedAt != nil {
		v.FinishedAt = x.FinishedAt.UnixNano()
	}
	if x.LeaseExpiresAt != nil {
		v.LeaseExpires = x.LeaseExpiresAt.UnixNano()
	}
	if x.WakeAt != nil {
		v.WakeAt = x.WakeAt.UnixNano()
	}
	v.WaitingFor, v.SuspendStep = x.WaitingFor, x.SuspendStep
	v.ParentID, v.ParentStep = x.ParentID, x.ParentStep
	v.DedupHits = x.DedupHits
	if x.LastDedupHitAt != nil {
		v.LastDedupHit = x.LastDedupHitAt.UnixNano()
	}
	return v
}

// Item is the outcome of one submission.
type Item struct {
	Err   Code
	Dedup bool
	X     View
}

// LeaseOut is one lease a Claim handed out.
type LeaseOut struct {
	ID          string
	Tenant      string
	Token       string
	Kind        string
	Payload     string
	Attempt     int
	MaxAttempts int
	Expires     int64
	Steps       string // the journal it carries (journalString)
	Partial     bool   // it carries the journal's first steps only (store.Lease.StepsPartial)
}

// Output is what the store answered.
type Output struct {
	Err    Code // the call's own error
	Items  []Item
	X      View // Get, Cancel, Complete, Fail, Release
	Leases []LeaseOut

	CancelRequested bool  // Heartbeat
	Expires         int64 // Heartbeat

	Counts [3]int // Rescue: requeued, failed, cancelled; Promote: promoted; Prune: executions

	Inflight, MaxInflight int // Tenant

	Step      StepOut    // RecordStep
	Recorded  bool       // RecordStep
	Delivered bool       // Signal
	Steps     []StepOut  // Steps
	Spawned   []ChildOut // Spawn, with Step and Recorded

	Published PublishOut // Publish
}

func timeOf(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

// Do runs in against s and records the answer.
func Do(ctx context.Context, s store.Store, in Input) Output {
	var out Output
	now := timeOf(in.Now)
	switch in.Op {
	case OpAdmit:
		subs := make([]store.Submission, len(in.Items))
		for i, it := range in.Items {
			subs[i] = store.Submission{Kind: it.Kind, DedupKey: it.Key, Priority: it.Priority,
				RunAt: timeOf(it.RunAt), MaxAttempts: it.MaxAttempts, ConcurrencyKey: it.CKey, ConcurrencyLimit: it.CLimit}
			if it.Payload != "" {
				subs[i].Payload = json.RawMessage(it.Payload)
			}
		}
		res, err := s.Admit(ctx, &store.AdmitParams{Tenant: in.Tenant, Items: subs, Now: now})
		out.Err = codeOf(err)
		if err == nil && res != nil {
			out.Items = make([]Item, len(res.Items))
			for i, it := range res.Items {
				out.Items[i] = Item{Err: codeOf(it.Err), Dedup: it.Deduplicated, X: viewOf(it.Execution)}
			}
		}
	case OpGet:
		x, err := s.Get(ctx, &store.GetParams{Tenant: in.Tenant, ID: in.ID})
		out.Err, out.X = codeOf(err), viewOf(x)
	case OpCancel:
		x, err := s.Cancel(ctx, &store.CancelParams{Tenant: in.Tenant, ID: in.ID, Now: now})
		out.Err, out.X = codeOf(err), viewOf(x)
	case OpDelete:
		err := s.Delete(ctx, &store.DeleteParams{Tenant: in.Tenant, ID: in.ID, Force: in.Force, Now: now})
		out.Err = codeOf(err)
	case OpClaim:
		res, err := s.Claim(ctx, &store.ClaimParams{WorkerID: fmt.Sprintf("client-%d", in.Client),
			Tenant: in.Tenant, Kinds: in.Kinds, Max: in.Max, LeaseDuration: time.Duration(in.Lease), Now: now})
		out.Err = codeOf(err)
		if err == nil && res != nil {
			for _, l := range res.Leases {
				out.Leases = append(out.Leases, LeaseOut{ID: l.ExecutionID, Tenant: l.Tenant, Token: l.Token,
					Kind: l.Kind, Payload: string(l.Payload), Attempt: l.Attempt, MaxAttempts: l.MaxAttempts,
					Expires: l.ExpiresAt.UnixNano(), Steps: journalString(l.Steps), Partial: l.StepsPartial})
			}
		}
	case OpHeartbeat:
		res, err := s.Heartbeat(ctx, &store.HeartbeatParams{ExecutionID: in.ID, Tenant: in.Tenant,
			Token: in.Token, LeaseDuration: time.Duration(in.Lease), Now: now})
		out.Err = codeOf(err)
		if err == nil && res != nil {
			out.CancelRequested, out.Expires = res.CancelRequested, res.ExpiresAt.UnixNano()
		}
	case OpComplete:
		x, err := s.Complete(ctx, &store.CompleteParams{ExecutionID: in.ID, Tenant: in.Tenant,
			Token: in.Token, Result: json.RawMessage(`{"ok":true}`), Now: now})
		out.Err, out.X = codeOf(err), viewOf(x)
	case OpFail:
		x, err := s.Fail(ctx, &store.FailParams{ExecutionID: in.ID, Tenant: in.Tenant, Token: in.Token,
			Error: "boom", Retry: in.Retry, RetryDelay: time.Duration(in.Delay), Now: now})
		out.Err, out.X = codeOf(err), viewOf(x)
	case OpRelease:
		x, err := s.Release(ctx, &store.ReleaseParams{ExecutionID: in.ID, Tenant: in.Tenant, Token: in.Token,
			Unstarted: in.Unstarted, Now: now})
		out.Err, out.X = codeOf(err), viewOf(x)
	case OpTenant:
		tn, err := s.GetTenant(ctx, &store.GetTenantParams{Name: in.Tenant})
		out.Err = codeOf(err)
		if err == nil && tn != nil {
			out.Inflight, out.MaxInflight = tn.Inflight, tn.MaxInflight
		}
	case OpRescue:
		res, err := s.Rescue(ctx, &store.RescueParams{Now: now})
		out.Err = codeOf(err)
		if err == nil && res != nil {
			out.Counts = [3]int{res.Requeued, res.Failed, res.Cancelled}
		}
	case OpPromote:
		res, err := s.Promote(ctx, &store.PromoteParams{Now: now})
		out.Err = codeOf(err)
		if err == nil && res != nil {
			out.Counts[0] = res.Promoted
		}
	case OpPrune:
		res, err := s.Prune(ctx, &store.PruneParams{Now: now})
		out.Err = codeOf(err)
		if err == nil && res != nil {
			out.Counts[0] = res.Executions
		}
	case OpRecordStep, OpSuspend, OpSignal, OpWake, OpRetry, OpSteps, OpSpawn:
		out = doFlow(ctx, s, in)
	case OpPublish:
		out = doPublish(ctx, s, in)
	default:
		out.Err = Code(fmt.Sprintf("other: unknown op %v", in.Op))
	}
	return out
}
