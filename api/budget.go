package api

import (
	"context"
	"net/http"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
)

// Large request bodies are read within a server-wide budget of bytes
// (Config.MaxBodyBytesInFlight): a request takes its share before it reads
// its body and gives it back when it is answered, since the body's decoded
// form lives until then. Without it, a few clients sending batches of
// MaxBatchBytes at once could make the server hold several times their
// sum. A request that cannot get its share within bodyWait is refused with
// 503 unavailable and Retry-After, rather than queued without bound.

// smallBody is the size up to which a body is read outside the budget: such
// requests are bounded by their own small limits, and a budget taken by a
// few large batches must not hold up heartbeats and completions.
const smallBody = bodySlack

// bodyWait is how long a request waits for its share of the budget.
const bodyWait = time.Second

// bodyRetryAfter is the Retry-After, in seconds, of a request refused for
// want of budget.
const bodyRetryAfter = 1

// bodyBudget is the server's budget of body bytes being read at once.
type bodyBudget struct {
	size  int64
	sem   *semaphore.Weighted
	inUse atomic.Int64 // bytes taken now, for tests and the refusal's detail
}

func newBodyBudget(size int64) *bodyBudget {
	return &bodyBudget{size: size, sem: semaphore.NewWeighted(size)}
}

// acquire takes the share of a request whose body may hold up to limit
// bytes: its Content-Length, or limit when it declares none (chunked). A
// body declared over limit takes nothing: readBody refuses it unread.
func (b *bodyBudget) acquire(ctx context.Context, r *http.Request, limit int64) (release func(), err error) {
	n := r.ContentLength
	switch {
	case n > limit:
		return func() {}, nil
	case n < 0:
		n = limit
	}
	if n <= smallBody {
		return func() {}, nil
	}
	n = min(n, b.size) // a body the budget cannot hold whole is read alone
	ctx, cancel := context.WithTimeout(ctx, bodyWait)
	defer cancel()
	if err := b.sem.Acquire(ctx, n); err != nil {
		p := problem(CodeUnavailable, "the server is reading as many large request bodies as it may at once; retry shortly")
		p.retryAfter = bodyRetryAfter
		return nil, p
	}
	b.inUse.Add(n)
	var done atomic.Bool
	return func() {
		if done.CompareAndSwap(false, true) {
			b.inUse.Add(-n)
			b.sem.Release(n)
		}
	}, nil
}
