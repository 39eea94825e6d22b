package engine

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/latch-run/latch/store"
)

// LeaseWatch is what an attempt's heartbeats and cancel checks found of
// its lease, and what they did to its handler: the one set of rules the
// embedded worker (attempt.run) and the remote worker (package latch,
// remoteworker.go) follow. Lost: the lease is gone, the handler is
// cancelled with ErrLeaseLost and nothing it returns is written.
// Cancelled: a cancel was requested and the handler cancelled with
// ErrCancelled.
type LeaseWatch struct {
	Log    *slog.Logger
	Ticker *time.Ticker            // the heartbeats, stopped once the lease is lost
	Cancel context.CancelCauseFunc // cancels the handler's context

	Lost, Cancelled bool
}

// Heartbeat acts on a heartbeat's answer: cancelRequested and err, which
// matches the store's sentinels. expired says the lease's end has passed;
// a failed heartbeat then loses the lease, since it is rescued (or soon
// will be) and may run elsewhere now. Another failure is logged and the
// heartbeats go on.
func (w *LeaseWatch) Heartbeat(cancelRequested bool, err error, expired bool) {
	switch {
	case errors.Is(err, store.ErrLeaseLost), errors.Is(err, store.ErrNotFound):
		w.Lose("lease lost: cancelling the handler")
	case err != nil && expired:
		w.Lose("lease expired while heartbeats failed: cancelling the handler", "err", err)
	case err != nil:
		w.Log.Warn("heartbeat failed", "err", err)
	case cancelRequested && !w.Cancelled:
		w.CancelRequested()
	}
}

// Lose marks the lease lost, stops the heartbeats and cancels the handler
// with ErrLeaseLost, logging msg.
func (w *LeaseWatch) Lose(msg string, args ...any) {
	w.Lost = true
	w.Ticker.Stop()
	w.Log.Warn(msg, args...)
	w.Cancel(ErrLeaseLost)
}

// CancelRequested cancels the handler with ErrCancelled.
func (w *LeaseWatch) CancelRequested() {
	w.Cancelled = true
	w.Log.Info("cancel requested: cancelling the handler")
	w.Cancel(ErrCancelled)
}
