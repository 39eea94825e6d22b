package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/latch-run/latch/store"
)

// Heartbeat, Complete, Fail and Release run set-based statements shared with
// concurrent calls (sql_group.go, group.go). Their fence (I5) is the WHERE
// clause of the UPDATE: running, under this token, unexpired at now, of this
// tenant.

// newFence parses the id and token of a fenced call: neither can name a
// lease unless both are UUIDs.
func newFence(id, token, tenant string, t time.Time) (fence, error) {
	uid, ok1 := parseID(id)
	tok, ok2 := parseID(token)
	if !ok1 || !ok2 {
		return fence{}, fmt.Errorf("execution %s: %w", id, store.ErrLeaseLost)
	}
	return fence{id: uid, token: tok, tenant: tenant, now: t}, nil
}

// Heartbeat implements store.Store.
func (s *Store) Heartbeat(ctx context.Context, p *store.HeartbeatParams) (*store.HeartbeatResult, error) {
	t := now(p.Now)
	lease := store.LeaseOrDefault(p.LeaseDuration)
	f, err := newFence(p.ExecutionID, p.Token, p.Tenant, t)
	if err != nil {
		return nil, err
	}
	op := &heartbeatOp{fence: f, expires: micro(t.Add(lease))}
	if err := s.run(ctx, op); err != nil {
		return nil, fmt.Errorf("postgres: heartbeat: %w", interpretError(err))
	}
	if !op.found {
		return nil, fmt.Errorf("execution %s: %w", p.ExecutionID, store.ErrLeaseLost)
	}
	return &store.HeartbeatResult{ExpiresAt: op.expires, CancelRequested: op.cancel}, nil
}

// Complete implements store.Store.
func (s *Store) Complete(ctx context.Context, p *store.CompleteParams) (*store.Execution, error) {
	f, err := newFence(p.ExecutionID, p.Token, p.Tenant, now(p.Now))
	if err != nil {
		return nil, err
	}
	op := &finishOp{fence: f, op: kindComplete}
	if p.Result != nil {
		r := string(p.Result)
		op.result = &r
	}
	return s.feed.Execution(s.endAttempt(ctx, "complete", op))
}

// Fail implements store.Store.
func (s *Store) Fail(ctx context.Context, p *store.FailParams) (*store.Execution, error) {
	t := now(p.Now)
	f, err := newFence(p.ExecutionID, p.Token, p.Tenant, t)
	if err != nil {
		return nil, err
	}
	op := &finishOp{fence: f, op: kindFail, retry: p.Retry, runAt: micro(t.Add(max(p.RetryDelay, 0))),
		errMsg: strPtr(p.StoredError())}
	return s.feed.Execution(s.endAttempt(ctx, "fail", op))
}

// Release implements store.Store.
func (s *Store) Release(ctx context.Context, p *store.ReleaseParams) (*store.Execution, error) {
	f, err := newFence(p.ExecutionID, p.Token, p.Tenant, now(p.Now))
	if err != nil {
		return nil, err
	}
	return s.feed.Execution(s.endAttempt(ctx, "release", &finishOp{fence: f, op: kindRelease, unstarted: p.Unstarted}))
}

// endAttempt ends a running attempt and returns the execution after it. The
// grouped statement also gives back the quota unit of an execution that
// became terminal; if no quota shard is at hand it aborts, and endAttemptTx
// does the same as a transaction that can wait. An execution of a family,
// which the grouped statement leaves out, and a fence that did not hold
// there, are decided by endAttemptTx too.
func (s *Store) endAttempt(ctx context.Context, name string, op *finishOp) (*store.Execution, error) {
	err := s.run(ctx, op)
	if aborted(err) || err == nil && op.exec == nil {
		err = s.endAttemptTx(ctx, op)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: %s: %w", name, interpretError(err))
	}
	if op.exec == nil {
		return nil, fmt.Errorf("execution %s: %w", op.id, store.ErrLeaseLost)
	}
	s.changes.announce()
	s.feed.Publish(op.family...)
	return op.exec, nil
}

// endAttemptTx ends the attempt as a transaction that can wait, taking
// its locks in the store's order (doc.go, "Lock order"): the family's rows
// — the parent (lockParent), the execution (the probe: the fence, locking
// the row, and whether the change will end the execution), the children
// its end cancels (lockCascade) — then the quota units its end frees,
// waiting for shards if need be (returnQuota), then the change, whose
// trigger moves the tenant's storage count last; and for an execution that
// became terminal its family's part (finishFamily: the cascade, the
// parent's spawn), under the family's locks. Changing the row before giving the
// units back would hold the storage row while waiting for a shard, which
// an admission holding every shard waits for in turn.
func (s *Store) endAttemptTx(ctx context.Context, op *finishOp) error {
	return s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) (bool, error) {
		op.family = nil
		st := buildFinish(op.op, []groupOp{op}, finishInTx) // resets op.exec
		if err := lockParent(ctx, tx, op.id, op.tenant); err != nil {
			return false, err
		}
		var (
			tenant   string
			ends     bool
			children int
		)
		err := tx.QueryRow(ctx, finishStatements[op.op].probe, st.args...).Scan(&tenant, &ends, &children)
		if errors.Is(err, pgx.ErrNoRows) {
			return false, nil // the fence failed: op.exec stays nil, the lease is lost
		}
		if err != nil {
			return false, err
		}
		var fam *cascade
		if ends && children > 0 {
			if fam, err = lockCascade(ctx, tx, op.id); err != nil {
				return false, err
			}
		}
		if ends {
			if err := returnQuota(ctx, tx, tenant, 1+fam.freed()); err != nil {
				return false, err
			}
		}
		rows, err := tx.Query(ctx, st.sql, st.args...)
		if err != nil {
			return false, err
		}
		if err := st.read(rows); err != nil {
			return false, err
		}
		if op.exec == nil || op.exec.Status.Terminal() != ends {
			return false, fmt.Errorf("postgres: execution %s changed under its lock", op.id)
		}
		if !ends {
			return true, nil
		}
		op.family, err = finishFamily(ctx, tx, op.exec, true, fam, op.now)
		return true, err
	})
}
