package redis_test

import (
	"context"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/redis"
)

// TestRunsKeepAnyWorkerAndError: a run's worker id and error are stored
// whole, colons and all (lib.lua spells a run with ':' between its fields),
// and a lease claimed before the history was kept (its list missing) ends
// without a run, leaving the runs recorded before it as they are.
func TestRunsKeepAnyWorkerAndError(t *testing.T) {
	url := redisURL(t)
	prefix := newPrefix(t, url)
	ctx := context.Background()
	base := time.Date(2031, time.March, 14, 9, 0, 0, 0, time.UTC)
	s := open(t, url, prefix)
	defer s.Close()
	if _, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme", Now: base}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Admit(ctx, &store.AdmitParams{Tenant: "acme", Now: base,
		Items: []store.Submission{{Kind: "echo", MaxAttempts: 5}}})
	if err != nil || res.Items[0].Err != nil {
		t.Fatalf("Admit: %v %v", err, res)
	}
	id := res.Items[0].Execution.ID
	claim := func(worker string, at time.Time) store.Lease {
		t.Helper()
		c, err := s.Claim(ctx, &store.ClaimParams{WorkerID: worker, Max: 1, LeaseDuration: time.Minute, Now: at})
		if err != nil || len(c.Leases) != 1 {
			t.Fatalf("Claim: %v %v", err, c)
		}
		return c.Leases[0]
	}
	const worker, msg = "host:7:ünï", "dial tcp: 10.0.0.1:5432: refused\nretry: 3"
	l := claim(worker, base)
	if _, err := s.Fail(ctx, &store.FailParams{ExecutionID: id, Token: l.Token, Error: msg, Retry: true,
		Now: base.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}

	// The next lease as an older latch would claim it: no run recorded.
	l = claim("w2", base.Add(2*time.Second))
	opt, err := goredis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := goredis.NewClient(opt)
	defer rdb.Close()
	if err := rdb.RPop(ctx, "{"+prefix+"}:runs:"+id).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Complete(ctx, &store.CompleteParams{ExecutionID: id, Token: l.Token,
		Now: base.Add(3 * time.Second)}); err != nil {
		t.Fatal(err)
	}

	runs, err := s.Runs(ctx, &store.RunsParams{Tenant: "acme", ID: id})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 {
		t.Fatalf("%d runs, want the first only", len(runs))
	}
	r := runs[0]
	if r.Attempt != 1 || r.WorkerID != worker || r.Outcome != store.RunFailed || r.Error != msg ||
		!r.ClaimedAt.Equal(base) || r.EndedAt == nil || !r.EndedAt.Equal(base.Add(time.Second)) {
		t.Errorf("run %+v, want attempt 1 of %q failed with %q, claimed at %s, ended a second later",
			r, worker, msg, base)
	}
	redis.CheckConsistency(t, s)
}
