package watch

import "container/list"

// A change wakes a few waiting claims, not all of them: with hundreds of
// workers in a long poll, waking every one at each change had each of them
// run a claim that, for all but a few, found nothing, and the claims
// crowded out the changes. A change of n executions wakes the n claims
// that have waited longest (an admit of n can feed at most n claims; a
// finish of one may free one concurrency slot); a change the store cannot
// attribute wakes one; a claim's own change (store.Change.Claim) wakes
// none. A woken claim that got work calls ClaimGot, which
// wakes one more: while work is left the claims keep waking each other,
// and when it runs out the chain stops. A claim whose filters do not match
// the work it was woken for goes back to waiting; the claim that matches
// finds it at its own poll (the caller polls every PollInterval, as
// before), so a mismatch delays work and never loses it.

// ClaimWait registers a waiting claim. wake is closed when the claim should
// try again; done ends the registration (call it once the claim stops
// waiting, woken or not).
func (h *Hub) ClaimWait() (wake <-chan struct{}, done func()) {
	ch := make(chan struct{})
	h.mu.Lock()
	el := h.claims.push(ch)
	h.startLocked()
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.claims.remove(el) && h.idleLocked() {
			h.kickLocked() // the loop may stop
		}
	}
}

// ClaimGot tells the hub that a woken claim got work: the next waiting
// claim is woken, since there may be more.
func (h *Hub) ClaimGot() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.claims.wake(1)
}

// claimQueue holds the waiting claims, longest waiting first.
type claimQueue struct {
	l list.List // of chan struct{}
}

func (q *claimQueue) len() int { return q.l.Len() }

func (q *claimQueue) push(ch chan struct{}) *list.Element {
	return q.l.PushBack(ch)
}

// remove takes el out of the queue if it is still there (it is not once
// woken) and reports whether it was.
func (q *claimQueue) remove(el *list.Element) bool {
	if el.Value == nil {
		return false
	}
	q.l.Remove(el)
	el.Value = nil
	return true
}

// wake closes the channels of the n longest waiting claims and takes them
// out of the queue.
func (q *claimQueue) wake(n int) {
	for ; n > 0; n-- {
		el := q.l.Front()
		if el == nil {
			return
		}
		close(el.Value.(chan struct{}))
		q.l.Remove(el)
		el.Value = nil
	}
}
