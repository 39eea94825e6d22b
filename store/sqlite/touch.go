package sqlite

import (
	"context"
	"sync"
)

// An operation changes, besides the executions it answers about, the ones
// its cascades reach (children.go): a parent's end cancels its children, a
// child's end resumes its parent. Each write step carries a touched set in
// its context; the cascades add to it, and inTx publishes it on the change
// feed once the step is committed.

type touchedKey struct{}

// touched collects the ids a write step changed besides its own answer.
type touched struct {
	mu  sync.Mutex
	ids []string
}

// withTouched gives ctx a fresh touched set.
func withTouched(ctx context.Context) (context.Context, *touched) {
	tc := &touched{}
	return context.WithValue(ctx, touchedKey{}, tc), tc
}

// touch adds ids to the step's touched set, if ctx carries one.
func touch(ctx context.Context, ids ...string) {
	tc, ok := ctx.Value(touchedKey{}).(*touched)
	if !ok {
		return
	}
	tc.mu.Lock()
	tc.ids = append(tc.ids, ids...)
	tc.mu.Unlock()
}

// list returns the ids touched so far.
func (tc *touched) list() []string {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return tc.ids
}
