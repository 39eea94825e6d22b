package enginebench_test

import (
	"context"
	"testing"
	"time"

	"github.com/latch-run/latch/engine/enginebench"
	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/store/sqlite"
	"github.com/latch-run/latch/store/storebench"
)

// The worker workloads on a small SQLite store: they finish, count what
// they should and leave nothing behind unfinished.
func TestWorkerWorkloads(t *testing.T) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, testdb.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tenant, err := storebench.Setup(ctx, s, 1000)
	if err != nil {
		t.Fatal(err)
	}
	r, err := enginebench.WorkerDrain(ctx, s, tenant, 300, 8)
	if err != nil {
		t.Fatal(err)
	}
	if r.Ops != 300 || r.Elapsed <= 0 {
		t.Errorf("worker drain: %d ops in %v", r.Ops, r.Elapsed)
	}
	r, err = enginebench.SubmitToStart(ctx, s, s, tenant, 200, 500*time.Millisecond, 8)
	if err != nil {
		t.Fatal(err)
	}
	if r.Ops != 100 || len(r.Latencies) != 100 || r.Percentile(0.99) <= 0 {
		t.Errorf("submit-to-start: %d ops, %d latencies, p99 %v", r.Ops, len(r.Latencies), r.Percentile(0.99))
	}
	t.Log(r)
}
