package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/latch-run/latch/auth"
	"github.com/latch-run/latch/console"
	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/postgres"
	"github.com/latch-run/latch/store/sqlite"
)

// BenchmarkPages measures each page's server time through the console's
// handler (no network) over a store holding LATCH_BENCH_EXECUTIONS
// executions, for the admin and for one tenant, on SQLite and, with
// LATCH_TEST_POSTGRES_URL, on PostgreSQL. It reports each page's median
// as ms/median. With LATCH_BENCH_INFLIGHT=K (K < N) all but K of the
// executions are run to their end first (one in ten failed), as in a
// store that keeps its history; without it every execution stays in
// flight, the worst case for the queue counts. docs/console.md ("Page
// times") has the figures:
//
//	LATCH_BENCH_EXECUTIONS=1000000 go test -run '^$' -bench 'Pages/sqlite' -benchtime 20x ./console/
//	LATCH_BENCH_EXECUTIONS=1000000 LATCH_BENCH_INFLIGHT=10000 go test -run '^$' -bench Pages -benchtime 20x ./console/
//
// LATCH_BENCH_REUSE=NAME keeps the seeded stores for a later run.
func BenchmarkPages(b *testing.B) {
	n, _ := strconv.Atoi(os.Getenv("LATCH_BENCH_EXECUTIONS"))
	if n <= 0 {
		b.Skip("set LATCH_BENCH_EXECUTIONS=N to seed N executions and time the pages")
	}
	inflight := n
	if v := os.Getenv("LATCH_BENCH_INFLIGHT"); v != "" {
		k, err := strconv.Atoi(v)
		if err != nil || k < 0 || k > n {
			b.Fatalf("LATCH_BENCH_INFLIGHT=%q: want a count from 0 to LATCH_BENCH_EXECUTIONS", v)
		}
		inflight = k
	}
	// LATCH_BENCH_REUSE=NAME keeps the seeded store (a SQLite file in the
	// temporary directory, a PostgreSQL schema) under that name, and a
	// later run with the same name times its pages without seeding again.
	reuse := os.Getenv("LATCH_BENCH_REUSE")
	if reuse != "" && (strings.Trim(reuse, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" || len(reuse) > 40) {
		b.Fatalf("LATCH_BENCH_REUSE=%q: want up to 40 of a-z, 0-9 and _", reuse)
	}
	b.Run("sqlite", func(b *testing.B) {
		path := testdb.SQLite(b)
		if reuse != "" {
			path = filepath.Join(os.TempDir(), "latch-bench-"+reuse+".db")
		}
		st, err := sqlite.Open(context.Background(), path)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		benchPages(b, st, n, inflight, nil)
	})
	if os.Getenv(testdb.PostgresEnv) != "" {
		b.Run("postgres", func(b *testing.B) {
			var u string
			if reuse != "" {
				u = keptSchema(b, "latch_bench_"+reuse)
			} else {
				u = testdb.PostgresSchema(b, "latch_console_bench_", "the console's page benchmark")
			}
			if _, err := postgres.Migrate(context.Background(), u, "up"); err != nil {
				b.Fatal(err)
			}
			st, err := postgres.Open(context.Background(), u)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { st.Close() })
			benchPages(b, st, n, inflight, func() { vacuum(b, u) })
		})
	}
}

// vacuum runs VACUUM ANALYZE over the tables the pages read, as autovacuum does
// within minutes of such a change: timed right after a million updates,
// the index-only scans would visit the heap and the planner would work
// from the empty table's statistics.
func vacuum(b *testing.B, dbURL string) {
	start := time.Now()
	pool, err := pgxpool.New(context.Background(), dbURL)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(context.Background(), "VACUUM (ANALYZE) latch_executions, latch_runs, latch_tenants, latch_schedules, latch_activity, latch_workers"); err != nil {
		b.Fatal(err)
	}
	b.Logf("VACUUM ANALYZE took %v", time.Since(start).Round(time.Millisecond))
}

// The seeded data: benchTenants tenants share the executions evenly; the
// tenant timed is benchTenant.
const (
	benchTenants = 10
	benchTenant  = "t03"
)

// keptSchema is the database URL of schema in LATCH_TEST_POSTGRES_URL's
// database, created when missing and never dropped.
func keptSchema(b *testing.B, schema string) string {
	base := testdb.URL(b, testdb.PostgresEnv, "the console's page benchmark")
	conn, err := pgx.Connect(context.Background(), base)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
		b.Fatal(err)
	}
	return testdb.WithParams(b, base, map[string]string{"search_path": schema, "pool_max_conns": "10"})
}

// benchPages seeds st (unless a run with LATCH_BENCH_REUSE did), runs
// settle when it is given, then times the store reads and the pages.
func benchPages(b *testing.B, st store.Store, n, inflight int, settle func()) {
	ctx := context.Background()
	start := time.Now()
	var some string
	if l, err := st.List(ctx, &store.ListParams{Tenant: benchTenant, Limit: 1}); err != nil {
		b.Fatal(err)
	} else if len(l.Items) > 0 {
		some = l.Items[0].ID
		b.Logf("timing the store seeded before (LATCH_BENCH_REUSE)")
	} else {
		some = seedPages(b, st, n, inflight)
		b.Logf("seeded %d executions (%d in flight) in %v", n, inflight, time.Since(start).Round(time.Millisecond))
	}
	if settle != nil {
		settle()
	}

	admin := auth.NewKey()
	authn := auth.Authenticator{Store: st, AdminKeyHash: auth.HashKey(admin)}
	tenantKey := auth.NewKey()
	if err := st.AddAPIKey(ctx, &store.AddAPIKeyParams{Tenant: benchTenant, KeyHash: auth.HashKey(tenantKey),
		KeyID: "bench-" + strconv.FormatInt(time.Now().UnixNano(), 36), Now: time.Now()}); err != nil {
		b.Fatal(err)
	}
	c := console.New(console.Config{Store: st, Auth: authn})
	b.Cleanup(c.Close)

	pages := []string{"/overview", "/executions", "/executions?queue=q3", "/executions?status=scheduled", "/executions?status=failed",
		"/executions/" + some, "/schedules", "/schedule?tenant=" + benchTenant + "&name=nightly", "/limits", "/tenants"}
	benchReads(b, st)
	for _, who := range []struct{ name, key string }{{"admin", admin}, {"tenant", tenantKey}} {
		cookie := benchLogin(b, c, who.key)
		for _, path := range pages {
			if who.name == "tenant" && path == "/tenants" {
				continue
			}
			name := strings.Replace(path, some, "{id}", 1)
			b.Run(who.name+name, func(b *testing.B) {
				times := make([]time.Duration, 0, b.N)
				for b.Loop() {
					req := httptest.NewRequest("GET", path, nil)
					req.Header.Set("Cookie", cookie)
					rec := httptest.NewRecorder()
					t0 := time.Now()
					c.ServeHTTP(rec, req)
					times = append(times, time.Since(t0))
					if rec.Code != http.StatusOK {
						b.Fatalf("GET %s as %s: %d %s", path, who.name, rec.Code, rec.Body.String())
					}
				}
				slices.Sort(times)
				b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "ms/median")
			})
		}
	}
}

// benchReads times the store reads behind the pages on their own, for
// every tenant ("all") and for one: which read a slow page waits on.
func benchReads(b *testing.B, st store.Store) {
	ctx := context.Background()
	now := time.Now()
	for _, tenant := range []string{"", benchTenant} {
		who := "all"
		if tenant != "" {
			who = "tenant"
		}
		reads := []struct {
			name string
			read func() error
		}{
			{"QueueStats", func() error {
				_, err := st.QueueStats(ctx, &store.QueueStatsParams{Tenant: tenant, Now: now})
				return err
			}},
			{"Activity", func() error {
				_, err := st.Activity(ctx, &store.ActivityParams{Tenant: tenant, Since: now.Add(-time.Hour)})
				return err
			}},
			{"Presence", func() error {
				_, err := st.Presence(ctx, &store.PresenceParams{Tenant: tenant, Since: now.Add(-time.Minute)})
				return err
			}},
			{"ListRateLimits", func() error {
				_, err := st.ListRateLimits(ctx, &store.ListRateLimitsParams{Tenant: tenant})
				return err
			}},
			{"ConcurrencyKeys", func() error {
				_, err := st.ConcurrencyKeys(ctx, &store.ConcurrencyKeysParams{Tenant: tenant})
				return err
			}},
			{"List", func() error {
				_, err := st.List(ctx, &store.ListParams{Tenant: tenant, Limit: 50})
				return err
			}},
			{"ListSchedule", func() error {
				_, err := st.List(ctx, &store.ListParams{Tenant: benchTenant, Schedule: "nightly", Limit: 50})
				return err
			}},
		}
		for _, r := range reads {
			b.Run("store/"+who+"/"+r.name, func(b *testing.B) {
				times := make([]time.Duration, 0, b.N)
				for b.Loop() {
					t0 := time.Now()
					if err := r.read(); err != nil {
						b.Fatal(err)
					}
					times = append(times, time.Since(t0))
				}
				slices.Sort(times)
				b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "ms/median")
			})
		}
	}
}

// benchLogin opens a session with key and returns its cookie.
func benchLogin(b *testing.B, c *console.Console, key string) string {
	req := httptest.NewRequest("POST", "/login", strings.NewReader(url.Values{"key": {key}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	c.ServeHTTP(rec, req)
	if rec.Code != http.StatusSeeOther {
		b.Fatalf("login: %d %s", rec.Code, rec.Body.String())
	}
	ck := rec.Result().Cookies()
	if len(ck) == 0 {
		b.Fatal("login set no cookie")
	}
	return ck[0].Name + "=" + ck[0].Value
}

// seedPages admits n executions over benchTenants tenants, 5 queues and 8
// kinds. The first n-inflight are plain ones that are then run to their
// end (the history); of the rest, a tenth is scheduled an hour ahead, one
// in twenty has one of 50 concurrency keys, one in a hundred is fired by
// schedule "nightly". Then a thousand are claimed (running); everything
// else stays queued. Each tenant also gets the schedule and three rate
// limits, and a server reports an hour of activity. It returns one
// execution's id.
func seedPages(b *testing.B, st store.Store, n, inflight int) string {
	ctx := context.Background()
	now := time.Now()
	for t := range benchTenants {
		name := fmt.Sprintf("t%02d", t)
		if _, err := st.CreateTenant(ctx, &store.CreateTenantParams{Name: name, MaxInflight: n, Now: now}); err != nil {
			b.Fatal(err)
		}
		if _, err := st.PutSchedule(ctx, &store.PutScheduleParams{Now: now, Schedule: store.Schedule{Tenant: name,
			Name: "nightly", Cron: "0 3 * * *", Timezone: "UTC", Kind: "report", Payload: []byte(`{}`),
			Overlap: store.OverlapAllow, Catchup: store.CatchupOne, Enabled: true, NextRunAt: now.Add(time.Hour)}}); err != nil {
			b.Fatal(err)
		}
		for k := range 3 {
			if _, err := st.PutRateLimit(ctx, &store.PutRateLimitParams{Now: now, Limit: store.RateLimit{Tenant: name,
				Key: fmt.Sprintf("api-%d", k), Rate: 10, Per: time.Second, Burst: 5}}); err != nil {
				b.Fatal(err)
			}
		}
	}
	const batch, clients = 500, 4
	var (
		mu   sync.Mutex
		next int
		some string
		wg   sync.WaitGroup
		fail error
	)
	for range clients {
		wg.Go(func() {
			for {
				mu.Lock()
				lo := next
				next += batch
				mu.Unlock()
				if lo >= n || fail != nil {
					return
				}
				tenant := fmt.Sprintf("t%02d", (lo/batch)%benchTenants)
				items := make([]store.Submission, 0, batch)
				for i := lo; i < min(lo+batch, n); i++ {
					sub := store.Submission{Kind: fmt.Sprintf("kind-%d", i%8), Queue: fmt.Sprintf("q%d", i%5),
						Payload: []byte(`{"n":` + strconv.Itoa(i) + `}`)}
					if i < n-inflight {
						items = append(items, sub)
						continue
					}
					if i%10 == 1 {
						sub.RunAt = now.Add(time.Hour)
					}
					if i%20 == 2 {
						sub.ConcurrencyKey, sub.ConcurrencyLimit = fmt.Sprintf("acct-%d", i%50), 1000
					}
					if i%100 == 3 {
						sub.Schedule = "nightly"
					}
					items = append(items, sub)
				}
				res, err := st.Admit(ctx, &store.AdmitParams{Tenant: tenant, Items: items, Now: time.Now()})
				if err == nil {
					for _, it := range res.Items {
						if it.Err != nil {
							err = it.Err
							break
						}
					}
				}
				mu.Lock()
				if err != nil && fail == nil {
					fail = err
				}
				if some == "" && err == nil && tenant == benchTenant {
					some = res.Items[0].Execution.ID
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if fail != nil {
		b.Fatal(fail)
	}
	if n > inflight {
		finishPages(b, st, n-inflight)
	}
	for claimed := 0; claimed < min(1000, inflight/2); {
		res, err := st.Claim(ctx, &store.ClaimParams{WorkerID: "bench-worker", Max: 100, LeaseDuration: time.Hour, Now: time.Now()})
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Leases) == 0 {
			break
		}
		claimed += len(res.Leases)
	}
	m := store.MinuteOf(now)
	var counts []store.ActivityCount
	for i := range 60 {
		for t := range benchTenants {
			counts = append(counts, store.ActivityCount{Tenant: fmt.Sprintf("t%02d", t), Minute: m.Add(-time.Duration(i) * time.Minute),
				Starts: 100 + i, Failures: i % 7})
		}
	}
	if err := st.ReportServer(ctx, &store.ServerReport{ID: "bench:1", Host: "bench", Version: "bench", StartedAt: now,
		Workers: []store.WorkerSeen{{ID: "bench-worker", LastSeenAt: now}}, Activity: counts, Now: now}); err != nil {
		b.Fatal(err)
	}
	if some == "" {
		b.Fatal("no execution of the timed tenant was seeded")
	}
	return some
}

// finishPages runs count queued executions to their end, 4 workers at once:
// one in ten fails, the others succeed.
func finishPages(b *testing.B, st store.Store, count int) {
	ctx := context.Background()
	start := time.Now()
	var (
		mu   sync.Mutex
		left = count
		fail error
		wg   sync.WaitGroup
	)
	for w := range 4 {
		wg.Go(func() {
			for {
				mu.Lock()
				want := min(100, left)
				left -= want
				stop := want == 0 || fail != nil
				mu.Unlock()
				if stop {
					return
				}
				res, err := st.Claim(ctx, &store.ClaimParams{WorkerID: fmt.Sprintf("seed-%d", w), Max: want,
					LeaseDuration: time.Hour, Now: time.Now()})
				if err == nil && len(res.Leases) < want {
					err = fmt.Errorf("claimed %d of %d", len(res.Leases), want)
				}
				for i, l := range res.Leases {
					if err != nil {
						break
					}
					if i%10 == 0 {
						_, err = st.Fail(ctx, &store.FailParams{ExecutionID: l.ExecutionID, Tenant: l.Tenant, Token: l.Token,
							Error: "seeded failure", Now: time.Now()})
					} else {
						_, err = st.Complete(ctx, &store.CompleteParams{ExecutionID: l.ExecutionID, Tenant: l.Tenant, Token: l.Token,
							Result: []byte(`{"ok":true}`), Now: time.Now()})
					}
				}
				if err != nil {
					mu.Lock()
					if fail == nil {
						fail = err
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if fail != nil {
		b.Fatal(fail)
	}
	b.Logf("ran %d executions to their end in %v", count, time.Since(start).Round(time.Millisecond))
}
