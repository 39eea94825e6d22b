package redis

import (
	"context"
	"fmt"

	"github.com/latch-run/latch/store"
)

// Heartbeat implements store.Store (heartbeat.lua).
func (s *Store) Heartbeat(ctx context.Context, p *store.HeartbeatParams) (*store.HeartbeatResult, error) {
	res, _, err := s.heartbeat(ctx, p)
	return res, err
}

// heartbeat is Heartbeat; shortened says the lease now expires before it
// did (a heartbeat's duration shorter than the one it replaces).
func (s *Store) heartbeat(ctx context.Context, p *store.HeartbeatParams) (res *store.HeartbeatResult, shortened bool, err error) {
	lease := store.LeaseOrDefault(p.LeaseDuration)
	t := now(p.Now)
	expires := us(t.Add(lease))
	arr, err := s.run(ctx, "heartbeat", scriptHeartbeat,
		[]string{s.k.exec(p.ExecutionID), s.k.running()},
		s.k.ns, p.ExecutionID, p.Tenant, p.Token, itoa(expires), itoa(us(t)))
	if err != nil {
		return nil, false, err
	}
	if err := status(arr, "execution "+p.ExecutionID); err != nil {
		return nil, false, err
	}
	return &store.HeartbeatResult{ExpiresAt: fromUS(expires), CancelRequested: asInt(at(arr, 1)) == 1},
		expires < asInt(at(arr, 2)), nil
}

// Complete implements store.Store (complete.lua). Concurrent calls share
// script runs (group commit, group.go), each decided on its own.
func (s *Store) Complete(ctx context.Context, p *store.CompleteParams) (*store.Execution, error) {
	d, err := s.completeG.do(ctx, 1, []string{s.k.exec(p.ExecutionID)},
		p.ExecutionID, p.Tenant, p.Token, itoa(us(now(p.Now))), flag(p.Result != nil), string(p.Result))
	if err != nil {
		return nil, interpretError(err)
	}
	if err := status(d.reply, "execution "+p.ExecutionID); err != nil {
		return nil, err
	}
	s.note.ack(d.version)
	s.publishFamily(at(d.reply, 2))
	return s.feed.Execution(parseExecution(asMap(at(d.reply, 1))), nil)
}

// Fail implements store.Store (fail.lua).
func (s *Store) Fail(ctx context.Context, p *store.FailParams) (*store.Execution, error) {
	t := now(p.Now)
	runAt := us(t.Add(max(p.RetryDelay, 0)))
	return s.feed.Execution(s.afterLease(ctx, "fail", scriptFail, p.ExecutionID,
		s.k.ns, p.ExecutionID, p.Tenant, p.Token, itoa(us(t)), p.StoredError(), flag(p.Retry), itoa(runAt), timeLex(runAt)))
}

// Release implements store.Store (release.lua).
func (s *Store) Release(ctx context.Context, p *store.ReleaseParams) (*store.Execution, error) {
	nowUS := us(now(p.Now))
	return s.feed.Execution(s.afterLease(ctx, "release", scriptRelease, p.ExecutionID,
		s.k.ns, p.ExecutionID, p.Tenant, p.Token, itoa(nowUS), timeLex(nowUS), flag(p.Unstarted)))
}

// afterLease runs a fenced script that answers {'OK', version, HGETALL}.
func (s *Store) afterLease(ctx context.Context, op string, sc *luaScript, id string, args ...any) (*store.Execution, error) {
	return s.runExec(ctx, op, sc, id, []string{s.k.exec(id)}, args...)
}

// runExec runs a script on execution id that answers {'OK', version,
// HGETALL} (and the ids of the other executions of its family it changed,
// which are reported: publishFamily) or a refusal.
func (s *Store) runExec(ctx context.Context, op string, sc *luaScript, id string, keys []string, args ...any) (*store.Execution, error) {
	arr, err := s.run(ctx, op, sc, keys, args...)
	if err != nil {
		return nil, err
	}
	if err := status(arr, "execution "+id); err != nil {
		return nil, err
	}
	s.note.ack(asInt(at(arr, 1)))
	if len(arr) != 3 && len(arr) != 4 {
		return nil, fmt.Errorf("redis: %s: unexpected reply", op)
	}
	s.publishFamily(at(arr, 3))
	return parseExecution(asMap(arr[2])), nil
}
