package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/latch-run/latch/internal/batch"
)

// Group commit. Every write step goes through one writer (a batch.Batcher
// with one lane: SQLite has one writer at a time), which groups the steps
// waiting at the same moment into one IMMEDIATE transaction with a
// SAVEPOINT around each: each step is still all or nothing and sees the
// steps before it, and the group costs one fsync instead of one per step.
// A step that fails is rolled back to its savepoint without touching the
// others; if the commit fails, every step of the group fails.

// maxGroup bounds how many steps share one transaction.
const maxGroup = 128

// txOp is a write step. ctx is its caller's, without the cancellation.
type txOp struct {
	ctx context.Context
	fn  func(ctx context.Context, tx *sql.Tx) (bool, error)
}

func (s *Store) startWriter() {
	s.steps = batch.New(batch.Config[txOp, struct{}]{Max: maxGroup, Exec: s.runGroup})
}

// inTx runs fn as one atomic step and returns once it is committed (or
// failed).
//
// fn runs with a context that carries ctx's values but not its
// cancellation: a caller that gives up while its step runs must not
// interrupt the connection the other steps share. A caller whose ctx ends
// before its step is taken into a group gets ctx's error and fn never
// runs; once taken, the step runs to its end and inTx returns its outcome
// (package batch).
//
// The executions a step's cascades touched (touch.go) are published on the
// change feed once it is committed.
func (s *Store) inTx(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) (changed bool, err error)) error {
	opCtx, tc := withTouched(context.WithoutCancel(ctx))
	_, err := s.steps.Do(ctx, txOp{ctx: opCtx, fn: fn})
	if errors.Is(err, batch.ErrClosed) {
		err = errClosed
	}
	if err == nil {
		s.feed.Publish(tc.list()...)
	}
	return interpretError(err)
}

// runGroup runs a group of steps in one transaction and answers each.
func (s *Store) runGroup(ctx context.Context, g *batch.Group[txOp, struct{}]) {
	changed, err := s.execGroup(ctx, g)
	if err != nil {
		g.Fail(err)
		return
	}
	if changed {
		s.notify()
	}
}

// execGroup runs the group in one transaction. The returned error fails
// the whole group (nothing was committed); per-step refusals are in g.Out.
func (s *Store) execGroup(ctx context.Context, g *batch.Group[txOp, struct{}]) (changed bool, err error) {
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("sqlite: begin: %w", err)
	}
	single := len(g.Items) == 1
	ran := 0
	for i, op := range g.Items {
		if !single {
			if _, err := tx.ExecContext(ctx, `SAVEPOINT step`); err != nil {
				_ = tx.Rollback()
				return false, fmt.Errorf("sqlite: savepoint: %w", err)
			}
		}
		c, err := op.fn(op.ctx, tx)
		if err != nil {
			g.Out[i].Err = err
			if single {
				_ = tx.Rollback()
				return false, nil
			}
			if _, rerr := tx.ExecContext(ctx, `ROLLBACK TO step`); rerr != nil {
				_ = tx.Rollback()
				return false, fmt.Errorf("sqlite: rollback to savepoint: %w (after %w)", rerr, err)
			}
		} else {
			changed = changed || c
			ran++
		}
		if !single {
			if _, err := tx.ExecContext(ctx, `RELEASE step`); err != nil {
				_ = tx.Rollback()
				return false, fmt.Errorf("sqlite: release savepoint: %w", err)
			}
		}
	}
	if ran == 0 {
		_ = tx.Rollback()
		return false, nil
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("sqlite: commit: %w", err)
	}
	return changed, nil
}
