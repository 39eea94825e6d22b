package latch_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/latch-run/latch"
	"github.com/latch-run/latch/internal/testdb"
)

// A worker's tenant share holds on every backend: with 4 slots, four
// endless jobs of one tenant hold 3 and another tenant's job starts and
// ends in the fourth while they run; the tenant's fourth job waits in the
// store, never leased and released, and runs once.
func TestWorkerTenantShareOnEveryBackend(t *testing.T) {
	t.Parallel()
	backends := map[string]func(t *testing.T) string{
		"sqlite": func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "share.db") },
		"postgres": func(t *testing.T) string {
			u := testdb.PostgresSchema(t, "latch_share_", "the tenant share on PostgreSQL")
			if _, err := latch.Migrate(t.Context(), u, "up"); err != nil {
				t.Fatal(err)
			}
			return u
		},
		"redis": func(t *testing.T) string {
			return testdb.Redis(t, "latch_share_", "the tenant share on Redis").StoreURL(t)
		},
		"redis-cluster": func(t *testing.T) string {
			return testdb.RedisCluster(t, "latch_share_", "the tenant share on Redis Cluster").StoreURL(t)
		},
	}
	for name, storeURL := range backends {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			c, err := latch.Open(ctx, storeURL(t))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			for _, tn := range []string{"acme", "globex"} {
				if _, err := c.CreateTenant(ctx, tn, latch.TenantOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			started := make(chan string, 10)
			release := make(chan struct{})
			w := c.NewWorker(latch.WorkerOptions{Slots: 4, PollInterval: 50 * time.Millisecond, NoMaintenance: true})
			w.Handle("long", func(ctx context.Context, job *latch.Job) (any, error) {
				started <- job.Tenant
				select {
				case <-release:
				case <-ctx.Done():
				}
				return nil, nil
			})
			w.Handle("echo", func(ctx context.Context, job *latch.Job) (any, error) { return job.Payload, nil })
			var long []string
			for range 4 {
				x, _, err := c.Submit(ctx, "acme", latch.SubmitRequest{Kind: "long"})
				if err != nil {
					t.Fatal(err)
				}
				long = append(long, x.ID)
			}
			if err := w.Start(ctx); err != nil {
				t.Fatal(err)
			}
			defer func() {
				sctx, scancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer scancel()
				if err := w.Stop(sctx); err != nil {
					t.Error(err)
				}
			}()
			defer func() {
				select {
				case <-release:
				default:
					close(release)
				}
			}()
			for range 3 {
				select {
				case <-started:
				case <-ctx.Done():
					t.Fatal("acme's jobs did not start")
				}
			}
			x, _, err := c.Submit(ctx, "globex", latch.SubmitRequest{Kind: "echo"})
			if err != nil {
				t.Fatal(err)
			}
			if got, err := c.Wait(ctx, "globex", x.ID); err != nil || got.Status != latch.StatusSucceeded {
				t.Fatalf("globex's echo: %v %v (acme's jobs hold the slots)", got, err)
			}
			select {
			case tn := <-started:
				t.Fatalf("a fourth long job (of %s) started with acme at its share and one slot borrowed", tn)
			default:
			}
			// Some polls more while acme's fourth job waits: a claim passes
			// acme (at its share) rather than leasing and releasing it.
			time.Sleep(4 * 50 * time.Millisecond)
			close(release)
			for _, id := range long {
				if got, err := c.Wait(ctx, "acme", id); err != nil || got.Status != latch.StatusSucceeded {
					t.Fatalf("acme's job: %v %v", got, err)
				}
				runs, err := c.Attempts(ctx, "acme", id)
				if err != nil {
					t.Fatal(err)
				}
				if len(runs) != 1 || runs[0].Outcome != "succeeded" {
					var outcomes []string
					for _, r := range runs {
						outcomes = append(outcomes, r.Outcome)
					}
					t.Errorf("acme's job %s ran %v, want one run, succeeded (never leased and released while waiting)", id, outcomes)
				}
			}
		})
	}
}
