package store

import "sync"

// ChangeFeed is an optional capability of a Notifier that says which
// executions a change concerned, so that a process watching a thousand
// executions need not re-read all of them for a change of one.
type ChangeFeed interface {
	// WatchChanges calls fn after every committed change of an execution's
	// status or attempt (and every deletion) with what changed. A change
	// made through this Store is reported after its commit, before the
	// call that made it returns. fn runs on the changing goroutine: it
	// must return quickly and must not call the Store. stop ends the
	// calls.
	WatchChanges(fn func(Change)) (stop func())
}

// Change is one report of a ChangeFeed.
type Change struct {
	// IDs are the executions the change concerned; nil when the backend
	// cannot tell which: a change made by another process, a step that
	// changes executions it does not list (rescue, promotion), or
	// notifications that may have been lost.
	IDs []string
	// Claim says the change was a Claim's: it started executions (IDs)
	// and made no other work claimable, so waiting claimers need not
	// look.
	Claim bool
}

// Feed is the subscriber list of a ChangeFeed, for backends to embed. Its
// helpers take a Store method's results as they are returned and report
// what changed, so a method reports by wrapping its return statement.
type Feed struct {
	mu   sync.Mutex
	subs map[int]func(Change)
	next int
}

// WatchChanges implements ChangeFeed.
func (f *Feed) WatchChanges(fn func(Change)) (stop func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.subs == nil {
		f.subs = map[int]func(Change){}
	}
	id := f.next
	f.next++
	f.subs[id] = fn
	return func() {
		f.mu.Lock()
		delete(f.subs, id)
		f.mu.Unlock()
	}
}

// Publish reports a change of the executions ids; none is no change.
func (f *Feed) Publish(ids ...string) {
	if len(ids) > 0 {
		f.send(Change{IDs: ids})
	}
}

// PublishAll reports a change the Store cannot attribute.
func (f *Feed) PublishAll() { f.send(Change{}) }

func (f *Feed) send(c Change) {
	f.mu.Lock()
	fns := make([]func(Change), 0, len(f.subs))
	for _, fn := range f.subs {
		fns = append(fns, fn)
	}
	f.mu.Unlock()
	for _, fn := range fns {
		fn(c)
	}
}

// Execution reports the change of e, the result of a call that changed one
// execution, and passes the call's results on.
func (f *Feed) Execution(e *Execution, err error) (*Execution, error) {
	if err == nil && e != nil {
		f.Publish(e.ID)
	}
	return e, err
}

// Deleted reports the deletion of id when err is nil.
func (f *Feed) Deleted(id string, err error) error {
	if err == nil {
		f.Publish(id)
	}
	return err
}

// Admitted reports the executions an Admit created.
func (f *Feed) Admitted(r *AdmitResult, err error) (*AdmitResult, error) {
	if err == nil && r != nil {
		var ids []string
		for _, it := range r.Items {
			if it.Execution != nil && !it.Deduplicated {
				ids = append(ids, it.Execution.ID)
			}
		}
		f.Publish(ids...)
	}
	return r, err
}

// Claimed reports the executions a Claim started. A claim that deferred
// executions for their rate limit (RetryAt set) changed others it does not
// list: that is reported as unattributed.
func (f *Feed) Claimed(r *ClaimResult, err error) (*ClaimResult, error) {
	if err == nil && r != nil {
		ids := make([]string, 0, len(r.Leases))
		for _, l := range r.Leases {
			ids = append(ids, l.ExecutionID)
		}
		if len(ids) > 0 {
			f.send(Change{IDs: ids, Claim: true})
		}
		if !r.RetryAt.IsZero() {
			f.PublishAll()
		}
	}
	return r, err
}

// Rescued reports a Rescue that changed anything, unattributed.
func (f *Feed) Rescued(r *RescueResult, err error) (*RescueResult, error) {
	if err == nil && r != nil && r.Requeued+r.Failed+r.Cancelled > 0 {
		f.PublishAll()
	}
	return r, err
}

// Promoted reports a Promote that moved anything, unattributed.
func (f *Feed) Promoted(r *PromoteResult, err error) (*PromoteResult, error) {
	if err == nil && r != nil && r.Promoted > 0 {
		f.PublishAll()
	}
	return r, err
}

// Fired reports the execution a FireSchedule admitted or recorded.
func (f *Feed) Fired(r *FireScheduleResult, err error) (*FireScheduleResult, error) {
	if err == nil && r != nil && r.Execution != nil && !r.Deduplicated {
		f.Publish(r.Execution.ID)
	}
	return r, err
}
