package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Children (docs/flows.md, "Children"): a running flow spawns child
// executions under a step name (Store.Spawn) and may suspend until some or
// all of them have ended (Store.Suspend with SuspendParams.Children). A
// child is an ordinary execution of its parent's tenant that remembers its
// parent (Execution.ParentID, ParentStep) and what its parent's end does to
// it (Execution.OnParentEnd).
//
// The rules every backend keeps (I13):
//
//   - A spawn admits all its children or none, once per (parent, step): the
//     spawn is recorded as the step, whose result is SpawnStepResult, and a
//     repeat of the step answers the recorded ids and admits nothing.
//   - A child's end — the operation that makes it terminal (Complete, Fail,
//     Cancel, Rescue, a cancelled Suspend or Release, the cascade below) or
//     Delete of it — checks, in that same operation, whether its parent is
//     suspended waiting for that child's spawn (WaitingFor
//     ChildrenWaitPrefix+ParentStep) and the wait's condition now holds;
//     if so it records the wait's step (FanInResult) and queues the parent
//     again (a resume). So a child ending while its parent suspends never
//     loses the wake-up, and a wait ends once.
//   - A parent's end — the operation that makes it terminal, deletes it,
//     or Cancel on it, even on a running one whose cancel is only
//     requested — cancels, in that same operation, every live child it spawned with
//     ParentEndCancel, and theirs in turn: a queued, scheduled or suspended
//     one becomes cancelled at once (its quota slot freed), a running one
//     gets CancelRequested (it ends cancelled when its worker stops or its
//     lease expires). None is claimed after that operation. Children
//     spawned with ParentEndAbandon live on; when their parent is deleted
//     their ParentID becomes "" (no dangling reference).
//   - Retry of a failed child spawned with ParentEndCancel whose parent
//     has ended or has its cancel requested (the child was not live at
//     its parent's end, so the end passed it by) does not queue it: it
//     becomes cancelled at once (FinishedAt Now, its Error and journal
//     kept, no quota slot), stays counted ended in its spawn, and Retry
//     answers it cancelled — as Spawn under such a parent spawns its
//     ParentEndCancel children cancelled. None is ever claimed. A child
//     of a live parent, or spawned with ParentEndAbandon, retries as
//     any execution does, in flight again in its spawn's count.
//   - Deleting a parent (Delete with Force, Prune, DeleteTenant) deletes
//     its children with it, and theirs; an abandoned child still in flight
//     when its parent is deleted is kept, with ParentID "". Prune deletes a
//     child only with its parent: a child whose parent is not being
//     deleted stays until its parent goes (so a spawn step's ids always
//     name executions that exist, or were force-deleted on purpose).

// ParentEnd says what a parent's end does to a child.
type ParentEnd string

const (
	// ParentEndCancel (the default): the parent's end cancels the child.
	ParentEndCancel ParentEnd = "cancel"
	// ParentEndAbandon: the child outlives its parent.
	ParentEndAbandon ParentEnd = "abandon"
)

// Bounds of composition, each refused with ErrTooManyChildren.
const (
	// MaxSpawnItems bounds the children of one spawn.
	MaxSpawnItems = 1000
	// MaxChildren bounds the children one execution spawns over its life.
	MaxChildren = 10000
	// MaxSpawnDepth bounds a family's depth: an execution spawned by no one
	// has depth 0, its children 1, and a spawn that would create children
	// deeper than MaxSpawnDepth is refused.
	MaxSpawnDepth = 16
)

// ErrTooManyChildren refuses a spawn past MaxSpawnItems, MaxChildren or
// MaxSpawnDepth. Nothing was written; the lease is kept.
var ErrTooManyChildren = errors.New("too many children")

// ChildrenWaitPrefix starts the WaitingFor of a fan-in wait: the rest is
// the spawn step's name.
const ChildrenWaitPrefix = "children:"

// SpawnParams are the arguments of Store.Spawn.
type SpawnParams struct {
	ExecutionID string
	Tenant      string // "" = any tenant
	Token       string
	// Step names the spawn in the parent's journal.
	Step string
	// Items are the children, each admitted as Admit would admit it
	// (CheckSubmission; no DedupKey, no Schedule) in the parent's tenant.
	Items []Submission
	// OnParentEnd applies to every child of this spawn; "" = cancel.
	OnParentEnd ParentEnd
	// MaxItems, MaxChildren, MaxDepth, MaxSteps and MaxJournalBytes
	// override the bounds when above 0. They are for tests, which reach
	// the bounds in a few calls: the engine and the API never set them.
	MaxItems        int
	MaxChildren     int
	MaxDepth        int
	MaxSteps        int
	MaxJournalBytes int
	Now             time.Time
}

// ItemBound is the bound of one spawn's children this call enforces.
func (p *SpawnParams) ItemBound() int { return bound(p.MaxItems, MaxSpawnItems) }

// ChildBound is the bound of an execution's children this call enforces.
func (p *SpawnParams) ChildBound() int { return bound(p.MaxChildren, MaxChildren) }

// DepthBound is the bound of depth this call enforces.
func (p *SpawnParams) DepthBound() int { return bound(p.MaxDepth, MaxSpawnDepth) }

// StepBound is the journal's bound of steps this call enforces.
func (p *SpawnParams) StepBound() int { return bound(p.MaxSteps, MaxSteps) }

// ByteBound is the journal's bound of bytes this call enforces.
func (p *SpawnParams) ByteBound() int { return bound(p.MaxJournalBytes, MaxJournalBytes) }

// Check reports whether p is a valid spawn on its own: a step name, 1 or
// more items, each a valid submission without a dedup key or a schedule,
// and a known OnParentEnd. The bound of items is the store's to check
// (ErrTooManyChildren, a 409, not a 400).
func (p *SpawnParams) Check(now time.Time, maxPayload int) error {
	if err := CheckStepName(p.Step); err != nil {
		return err
	}
	switch p.OnParentEnd {
	case "", ParentEndCancel, ParentEndAbandon:
	default:
		return fieldError("on_parent_end", "must be %q or %q", ParentEndCancel, ParentEndAbandon)
	}
	if len(p.Items) == 0 {
		return fieldError("items", "a spawn needs at least one child")
	}
	for i := range p.Items {
		it := &p.Items[i]
		field := fmt.Sprintf("items[%d]", i)
		if it.DedupKey != "" {
			return fieldError(field+".dedup_key", "a child has no dedup key: the spawn step makes it once-only")
		}
		if it.Schedule != "" {
			return fieldError(field+".schedule", "a child is not a schedule's tick")
		}
		if err := CheckSubmission(it, now, maxPayload); err != nil {
			var fe *FieldError
			if errors.As(err, &fe) {
				return &FieldError{Field: field + "." + fe.Field, Rule: fe.Rule, TooLarge: fe.TooLarge}
			}
			return err
		}
	}
	return nil
}

// Ends returns OnParentEnd with its default.
func (p *SpawnParams) Ends() ParentEnd {
	if p.OnParentEnd == "" {
		return ParentEndCancel
	}
	return p.OnParentEnd
}

// SpawnResult is the spawn as recorded: the children of this call
// (Recorded) or of the first spawn of that step, which wins. Children are in
// spawn order, each with its status now.
type SpawnResult struct {
	Step     Step
	Recorded bool
	Children []ChildRef
}

// ChildRef is one child in a spawn's answer.
type ChildRef struct {
	ID     string
	Status Status
}

// SpawnStepResult is the journal entry of a spawn: {"children": [ids]}.
type SpawnStepResult struct {
	Children []string `json:"children"`
}

// SpawnStep encodes the step result of a spawn of ids, canonical JSON.
func SpawnStep(ids []string) json.RawMessage {
	b, _ := json.Marshal(SpawnStepResult{Children: ids})
	return b
}

// ParseSpawnStep reads a spawn step's result; ok is false when result is
// not a spawn's (a step of that name recorded by something else).
func ParseSpawnStep(result json.RawMessage) (ids []string, ok bool) {
	var r struct {
		Children *[]string `json:"children"`
	}
	if err := json.Unmarshal(result, &r); err != nil || r.Children == nil {
		return nil, false
	}
	return *r.Children, true
}

// FanInChild is one child in a fan-in wait's step. Its JSON always holds
// the four keys of the HTTP contract, result and error null when the child
// has none: {"execution_id", "status", "result", "error"}.
type FanInChild struct {
	ExecutionID string          `json:"execution_id"`
	Status      Status          `json:"status"`
	Result      json.RawMessage `json:"result"`
	Error       string          `json:"error"`
}

// MarshalJSON writes c with null for a missing result or error.
func (c FanInChild) MarshalJSON() ([]byte, error) {
	out := struct {
		ExecutionID string          `json:"execution_id"`
		Status      Status          `json:"status"`
		Result      json.RawMessage `json:"result"`
		Error       *string         `json:"error"`
	}{ExecutionID: c.ExecutionID, Status: c.Status, Result: c.Result}
	if len(out.Result) == 0 {
		out.Result = json.RawMessage("null")
	}
	if c.Error != "" {
		out.Error = &c.Error
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads c, a null result as none.
func (c *FanInChild) UnmarshalJSON(b []byte) error {
	var in struct {
		ExecutionID string          `json:"execution_id"`
		Status      Status          `json:"status"`
		Result      json.RawMessage `json:"result"`
		Error       *string         `json:"error"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	*c = FanInChild{ExecutionID: in.ExecutionID, Status: in.Status}
	if len(in.Result) > 0 && string(in.Result) != "null" {
		c.Result = in.Result
	}
	if in.Error != nil {
		c.Error = *in.Error
	}
	return nil
}

// FanInResult is the step a fan-in wait records: every child of the spawn,
// in spawn order, as it is at that moment, and whether the wait's timeout
// ended it. A child deleted before the wait ended shows status "deleted".
// ResultsOmitted is set when the children's results did not all fit in the
// journal's bound of bytes: results are kept in spawn order while they fit
// and left out after (read them with Get).
type FanInResult struct {
	Children       []FanInChild `json:"children"`
	TimedOut       bool         `json:"timed_out"`
	ResultsOmitted bool         `json:"results_omitted,omitempty"`
}

// StatusDeleted is the status a FanInResult gives a child that no longer
// exists. It is never an execution's status.
const StatusDeleted Status = "deleted"

// FanInStep encodes a fan-in wait's step within room bytes for the whole
// step (StepSize of name and result): results are dropped from the first
// that does not fit, and ResultsOmitted set. The record is never refused:
// with room too small even for the children without results, it is
// recorded without them all the same (a wait's outcome always lands).
func FanInStep(name string, children []FanInChild, timedOut bool, room int) json.RawMessage {
	r := FanInResult{Children: make([]FanInChild, len(children)), TimedOut: timedOut}
	copy(r.Children, children)
	full, _ := json.Marshal(r)
	if StepSize(name, full) <= room {
		return full
	}
	// Without any result first; then put results back in spawn order
	// while they fit.
	r.ResultsOmitted = true
	for i := range r.Children {
		r.Children[i].Result = nil
	}
	bare, _ := json.Marshal(r)
	used := StepSize(name, bare)
	for i, c := range children {
		if c.Result == nil {
			continue
		}
		// "result":null becomes "result":<json>
		extra := len(c.Result) - len("null")
		if used+extra > room {
			break
		}
		r.Children[i].Result = c.Result
		used += extra
	}
	out, _ := json.Marshal(r)
	return out
}

// ChildrenWaitHolds is the condition of a fan-in wait: count of the
// spawn's total children ended (terminal or deleted); count 0 = all.
func ChildrenWaitHolds(ended, total, count int) bool {
	if count <= 0 || count > total {
		count = total
	}
	return ended >= count
}

// ChildrenWaitFor is the WaitingFor of a fan-in wait on spawn step.
func ChildrenWaitFor(step string) string { return ChildrenWaitPrefix + step }

// ChildrenWaitStep reports the spawn step a WaitingFor waits on, if it is a
// fan-in wait.
func ChildrenWaitStep(waitingFor string) (string, bool) {
	return strings.CutPrefix(waitingFor, ChildrenWaitPrefix)
}
