package latch

import (
	"context"
	"encoding/json"
	"time"

	"github.com/latch-run/latch/engine"
	"github.com/latch-run/latch/store"
)

// flowEngine runs a Job's flow calls for the worker that claimed it: the
// engine's own Job when the worker is embedded (Client.NewWorker, on the
// store), remoteFlow when it works over the HTTP API (NewRemoteWorker,
// under the lease's token). Job's methods are written once against it, so
// a handler runs the same either way. A new flow call of Job is one method
// here and one in each implementation.
type flowEngine interface {
	Step(ctx context.Context, name string, fn func(ctx context.Context) (json.RawMessage, error)) (json.RawMessage, error)
	Sleep(ctx context.Context, name string, d time.Duration) error
	WaitSignal(ctx context.Context, name, signal string, timeout time.Duration) (json.RawMessage, error)
	Spawn(ctx context.Context, name string, items []store.Submission, ends store.ParentEnd) ([]string, error)
	WaitChildren(ctx context.Context, name, spawn string, count int, timeout time.Duration) (*store.FanInResult, error)
	WaitEvent(ctx context.Context, name, event, key string, since time.Time, timeout time.Duration) (json.RawMessage, error)
}

var (
	_ flowEngine = (*engine.Job)(nil)
	_ flowEngine = (*remoteFlow)(nil)
)

// flow is the job's flowEngine. A Job not made by a worker (a test's) has
// none: its flow calls answer the engine's error for a job without a
// flow, as a nil *engine.Job does.
func (j *Job) flow() flowEngine {
	if j.engine == nil {
		return (*engine.Job)(nil)
	}
	return j.engine
}
