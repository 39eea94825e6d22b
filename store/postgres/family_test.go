package postgres_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/postgres"
	"github.com/latch-run/latch/store/storetest"
)

// TestFamilyLockOrder: the operations of one family run at once — the
// children's ends (Complete, Fail, Cancel), their spawns of grandchildren
// and their heartbeats, the parent's heartbeats, its end (Complete,
// Cancel) or its fan-in wait, claims of the grandchildren — and none of
// their transactions meets a deadlock: every one of them takes the
// family's rows ancestors first (doc.go, "Children"). PostgreSQL would
// detect a deadlock and the store would run the operation again, so the
// answers alone do not show one: the store reports each retry.
func TestFamilyLockOrder(t *testing.T) {
	t.Parallel()
	s := newStore(t, 16).(*postgres.Store)
	var deadlocks atomic.Int64
	postgres.OnRetry(s, func(err error) {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "40P01" {
			deadlocks.Add(1)
		}
	})
	ctx := t.Context()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := s.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme", MaxInflight: 100000, Now: base}); err != nil {
		t.Fatal(err)
	}
	claim := func(kind string, max int, now time.Time) []store.Lease {
		t.Helper()
		res, err := s.Claim(ctx, &store.ClaimParams{WorkerID: "w", Tenant: "acme", Kinds: []string{kind}, Max: max,
			LeaseDuration: time.Hour, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		return res.Leases
	}
	const rounds, n = 12, 24
	for round := range rounds {
		now := base.Add(time.Duration(round) * time.Minute)
		flow := fmt.Sprint("flow", round) // a resumed parent of an earlier round is not claimed again
		if _, err := s.Admit(ctx, &store.AdmitParams{Tenant: "acme", Items: []store.Submission{{Kind: flow}}, Now: now}); err != nil {
			t.Fatal(err)
		}
		parent := claim(flow, 1, now)[0]
		items := make([]store.Submission, n)
		for i := range items {
			items[i] = store.Submission{Kind: "child"}
		}
		spawned, err := s.Spawn(ctx, &store.SpawnParams{ExecutionID: parent.ExecutionID, Tenant: "acme", Token: parent.Token,
			Step: "work", Items: items, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		kids := claim("child", n, now)
		if len(kids) != n {
			t.Fatalf("round %d: claimed %d children, want %d", round, len(kids), n)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 4*n)
		ok := func(what string, err error) {
			if err != nil && !errors.Is(err, store.ErrLeaseLost) {
				errs <- fmt.Errorf("round %d: %s: %w", round, what, err)
			}
		}
		gate := make(chan struct{})
		for i, k := range kids {
			wg.Go(func() {
				<-gate
				_, err := s.Heartbeat(ctx, &store.HeartbeatParams{ExecutionID: k.ExecutionID, Tenant: "acme", Token: k.Token,
					LeaseDuration: time.Hour, Now: now})
				ok("child heartbeat", err)
				switch i % 4 {
				case 0:
					_, err = s.Spawn(ctx, &store.SpawnParams{ExecutionID: k.ExecutionID, Tenant: "acme", Token: k.Token,
						Step: "sub", Items: []store.Submission{{Kind: "grandchild"}}, Now: now})
					ok("child spawn", err)
					_, err = s.Complete(ctx, &store.CompleteParams{ExecutionID: k.ExecutionID, Tenant: "acme", Token: k.Token,
						Result: []byte(`"ok"`), Now: now})
					ok("child complete", err)
				case 1:
					_, err = s.Fail(ctx, &store.FailParams{ExecutionID: k.ExecutionID, Tenant: "acme", Token: k.Token,
						Error: "boom", Now: now})
					ok("child fail", err)
				case 2:
					_, err = s.Cancel(ctx, &store.CancelParams{Tenant: "acme", ID: k.ExecutionID, Now: now})
					ok("child cancel", err)
					_, err = s.Complete(ctx, &store.CompleteParams{ExecutionID: k.ExecutionID, Tenant: "acme", Token: k.Token,
						Now: now})
					ok("cancelled child's complete", err)
				default:
					_, err = s.Complete(ctx, &store.CompleteParams{ExecutionID: k.ExecutionID, Tenant: "acme", Token: k.Token,
						Now: now})
					ok("child complete", err)
				}
			})
		}
		wg.Go(func() {
			<-gate
			claim("grandchild", n, now)
		})
		wg.Go(func() {
			<-gate
			_, err := s.Heartbeat(ctx, &store.HeartbeatParams{ExecutionID: parent.ExecutionID, Tenant: "acme",
				Token: parent.Token, LeaseDuration: time.Hour, Now: now})
			ok("parent heartbeat", err)
			switch round % 3 {
			case 0:
				_, err = s.Complete(ctx, &store.CompleteParams{ExecutionID: parent.ExecutionID, Tenant: "acme",
					Token: parent.Token, Result: []byte(`"done"`), Now: now})
				ok("parent complete", err)
			case 1:
				_, err = s.Cancel(ctx, &store.CancelParams{Tenant: "acme", ID: parent.ExecutionID, Now: now})
				ok("parent cancel", err)
			default:
				_, err = s.Suspend(ctx, &store.SuspendParams{ExecutionID: parent.ExecutionID, Tenant: "acme",
					Token: parent.Token, Step: "join", Children: "work", Now: now})
				ok("parent fan-in", err)
			}
		})
		close(gate)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if round%3 == 2 { // the fan-in: every child ended, so the parent was resumed once
			x, err := s.Get(ctx, &store.GetParams{ID: parent.ExecutionID})
			if err != nil {
				t.Fatal(err)
			}
			if x.Status != store.StatusQueued {
				t.Errorf("round %d: parent waiting for %d ended children is %s, want queued", round,
					len(spawned.Children), x.Status)
			}
		}
	}
	if d := deadlocks.Load(); d > 0 {
		t.Errorf("%d deadlocks among the operations of families, want none", d)
	}
	storetest.CheckInflight(t, s, "acme")
}
