package redis

import (
	"context"

	"github.com/latch-run/latch/store"
)

// Retry implements store.Store (retry.lua): the status check, the quota
// check and increment and the queueing are one step, and the journal is
// left as it is.
func (s *Store) Retry(ctx context.Context, p *store.RetryParams) (*store.Execution, error) {
	nowUS := us(now(p.Now))
	return s.feed.Execution(s.runExec(ctx, "retry", scriptRetry, p.ID, []string{s.k.exec(p.ID)},
		s.k.ns, p.ID, p.Tenant, itoa(nowUS), timeLex(nowUS)))
}
