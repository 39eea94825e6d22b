package latch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/latch-run/latch/store"
)

// Children (docs/flows.md, "Children"): a flow spawns child executions
// under a step and waits for some or all of them. The common case is one
// call: Map runs one child of a kind per item and answers their outcomes
// in item order; SpawnAndWait does it for children of any kinds; Spawn
// and WaitChildren are the two halves, for a flow that does work between
// them, waits for the first N, or bounds the wait.
//
// Each is recorded in the journal like a step: a run after a crash, a
// retry or a resume gets the ids the first spawn made (nothing is
// admitted twice) and the outcomes its wait recorded.

// ErrChildFailed is wrapped by ChildOutcome.Err for a child that did not
// succeed.
var ErrChildFailed = errors.New("latch: child did not succeed")

// SpawnOptions change Spawn, SpawnAndWait and Map.
type SpawnOptions struct {
	// Abandon lets the children outlive their parent: by default the
	// parent's end (succeeded, failed, cancelled or deleted) cancels its
	// children that are still live, in the same store operation.
	Abandon bool
}

func (o SpawnOptions) ends() store.ParentEnd {
	if o.Abandon {
		return store.ParentEndAbandon
	}
	return store.ParentEndCancel
}

// WaitOptions change WaitChildren.
type WaitOptions struct {
	// Count is how many of the children must have ended (succeeded,
	// failed, cancelled, or been deleted); 0 = all of them.
	Count int
	// Timeout ends the wait after this long, whatever has ended; 0 = none.
	Timeout time.Duration
}

// ChildOutcome is one child as a wait for children saw it.
type ChildOutcome struct {
	ID string
	// Status is the child's status when the wait ended: terminal for the
	// children that ended, another for those a Count or a Timeout did not
	// wait for, and "deleted" for a child deleted before the wait ended.
	Status Status
	// Result is the child's result when it succeeded (nil otherwise, and
	// when the results did not all fit in the journal: FanIn.ResultsOmitted).
	Result json.RawMessage
	// Error is the child's last failure, if any.
	Error string
}

// Succeeded reports whether the child succeeded.
func (o *ChildOutcome) Succeeded() bool { return o.Status == StatusSucceeded }

// Err is nil when the child succeeded, else an error wrapping
// ErrChildFailed that names the child, its status and its error.
func (o *ChildOutcome) Err() error {
	if o.Succeeded() {
		return nil
	}
	if o.Error != "" {
		return fmt.Errorf("%w: %s is %s: %s", ErrChildFailed, o.ID, o.Status, o.Error)
	}
	return fmt.Errorf("%w: %s is %s", ErrChildFailed, o.ID, o.Status)
}

// Decode unmarshals the child's result into v.
func (o *ChildOutcome) Decode(v any) error {
	if o.Result == nil {
		return fmt.Errorf("latch: child %s has no result here (status %s)", o.ID, o.Status)
	}
	return json.Unmarshal(o.Result, v)
}

// FanIn is the outcome of a wait for children: every child of the spawn,
// in spawn order.
type FanIn struct {
	Children []ChildOutcome
	// TimedOut: the wait's Timeout ended it.
	TimedOut bool
	// ResultsOmitted: the children's results did not all fit in the
	// journal; those left out (the last ones) are read with Client.Get.
	ResultsOmitted bool
}

// Spawn admits children of the job's execution under the flow step name,
// all of them or none, and returns their ids in the order given. Each
// child is a SubmitRequest without DedupKey: an ordinary execution of the
// job's tenant, with its own kind, payload, queue, priority and limits,
// that knows its parent (Execution.ParentID). If an earlier run recorded
// name, nothing is admitted and the ids of that first spawn are returned,
// whatever children hold now.
//
// ErrQuotaExceeded when the tenant's quota has no room for them all
// (nothing admitted; return it and the attempt is retried later). A child
// that breaks a rule, more than store.MaxSpawnItems children (or past the
// bounds of an execution's children and of the journal) fail the
// execution for good (Permanent).
func (j *Job) Spawn(ctx context.Context, name string, children []SubmitRequest, opts SpawnOptions) ([]string, error) {
	now := time.Now()
	items := make([]store.Submission, len(children))
	for i := range children {
		if children[i].DedupKey != "" {
			return nil, Permanent(invalid(fmt.Sprintf("children[%d].dedup_key", i), "a child has no dedup key: the spawn step makes it once-only"))
		}
		sub, err := children[i].submission(now)
		if err != nil {
			return nil, Permanent(fmt.Errorf("children[%d]: %w", i, err))
		}
		items[i] = sub
	}
	return j.flow().Spawn(ctx, name, items, opts.ends())
}

// WaitChildren waits, as the flow step name, for the children of the spawn
// step spawn: until opts.Count of them (0: all) have ended, or
// opts.Timeout passed. It returns every child of the spawn as it was when
// the wait ended; when the timeout ended it, the children and
// ErrWaitTimedOut. Until then the execution is suspended, holding no
// worker, and WaitChildren returns ErrSuspended: return it from the
// handler at once. Children that ended before the wait count: when enough
// have, it does not suspend. A child that failed does not fail the wait:
// its outcome says so, and the flow decides.
func (j *Job) WaitChildren(ctx context.Context, name, spawn string, opts WaitOptions) (*FanIn, error) {
	res, err := j.flow().WaitChildren(ctx, name, spawn, opts.Count, opts.Timeout)
	if res == nil {
		return nil, err
	}
	out := &FanIn{Children: make([]ChildOutcome, len(res.Children)), TimedOut: res.TimedOut, ResultsOmitted: res.ResultsOmitted}
	for i, c := range res.Children {
		out.Children[i] = ChildOutcome{ID: c.ExecutionID, Status: Status(c.Status), Result: c.Result, Error: c.Error}
	}
	return out, err
}

// SpawnAndWait spawns children under the flow step name and waits for all
// of them under the step name+"/wait", and returns their outcomes in the
// order given: Spawn then WaitChildren in one call. Until they have all
// ended it returns ErrSuspended: return it from the handler at once.
func (j *Job) SpawnAndWait(ctx context.Context, name string, children []SubmitRequest, opts SpawnOptions) ([]ChildOutcome, error) {
	if _, err := j.Spawn(ctx, name, children, opts); err != nil {
		return nil, err
	}
	res, err := j.WaitChildren(ctx, name+"/wait", name, WaitOptions{})
	if err != nil {
		return nil, err
	}
	return res.Children, nil
}

// Map runs one child execution of kind per item, its payload the item, in
// parallel, and returns their outcomes in item order, once all have
// ended: SpawnAndWait under the step name. Until then it returns
// ErrSuspended: return it from the handler at once.
//
//	outs, err := latch.Map(ctx, job, "ship", "ship-parcel", parcels)
func Map[T any](ctx context.Context, j *Job, name, kind string, items []T) ([]ChildOutcome, error) {
	children := make([]SubmitRequest, len(items))
	for i, it := range items {
		children[i] = SubmitRequest{Kind: kind, Payload: it}
	}
	return j.SpawnAndWait(ctx, name, children, SpawnOptions{})
}

// Results decodes the result of each outcome into an R, in order. It
// takes what Map and SpawnAndWait return, so that the two read as one
// call; their error (ErrSuspended among them) is returned as it is. A
// child that did not succeed is its Err, and a result left out of the
// journal (FanIn.ResultsOmitted) an error too, both Permanent: a later
// run reads the same recorded outcomes.
//
//	receipts, err := latch.Results[Receipt](latch.Map(ctx, job, "ship", "ship-parcel", parcels))
func Results[R any](outs []ChildOutcome, err error) ([]R, error) {
	if err != nil {
		return nil, err
	}
	rs := make([]R, len(outs))
	for i := range outs {
		if err := outs[i].Err(); err != nil {
			return nil, Permanent(err)
		}
		if err := outs[i].Decode(&rs[i]); err != nil {
			return nil, Permanent(fmt.Errorf("child %s: decoding its result: %w", outs[i].ID, err))
		}
	}
	return rs, nil
}

// Children reads the children of an execution, in spawn order, each as it
// is now: every page of List with ListOptions.ParentID. An execution has
// at most store.MaxChildren children. Another tenant's execution has none.
func (c *Client) Children(ctx context.Context, tenant, id string) ([]*Execution, error) {
	var out []*Execution
	opts := ListOptions{ParentID: id, Limit: store.MaxListLimit}
	for {
		page, err := c.List(ctx, tenant, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Items...)
		if page.NextCursor == "" {
			return out, nil
		}
		opts.Cursor = page.NextCursor
	}
}
