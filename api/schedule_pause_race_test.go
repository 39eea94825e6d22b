package api

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/postgres"
	"github.com/latch-run/latch/store/redis"
	"github.com/latch-run/latch/store/sqlite"
)

// raceBackends opens a store of each backend whose test variable is set
// (SQLite always), for tests that race requests through one server.
var raceBackends = []struct {
	name string
	open func(t *testing.T) store.Store
}{
	{"sqlite", func(t *testing.T) store.Store {
		st, err := sqlite.Open(context.Background(), testdb.SQLite(t))
		if err != nil {
			t.Fatal(err)
		}
		return st
	}},
	{"postgres", func(t *testing.T) store.Store {
		u := testdb.PostgresSchema(t, "latch_api_pause_", "the API's pause race")
		if _, err := postgres.Migrate(context.Background(), u, "up"); err != nil {
			t.Fatal(err)
		}
		st, err := postgres.Open(context.Background(), u)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}},
	{"redis", func(t *testing.T) store.Store {
		st, err := redis.OpenStore(context.Background(), testdb.Redis(t, "latch_api_pause_", "the API's pause race").StoreURL(t))
		if err != nil {
			t.Fatal(err)
		}
		return st
	}},
	{"redis-cluster", func(t *testing.T) store.Store {
		ns := testdb.RedisCluster(t, "latch_api_pause_", "the API's pause race")
		st, err := redis.OpenStore(context.Background(), ns.StoreURL(t))
		if err != nil {
			t.Fatal(err)
		}
		return st
	}},
}

// TestSchedulePauseRacesPut races pauses and resumes of a schedule against
// PUTs that change its timing (cron "M * * * *", M growing) and alternate
// enabled, on every backend. A pause or resume writes only enabled (and a
// resume the next tick), so: the final cron is the last PUT's, never an
// older one brought back; and every answer that is enabled has its next
// tick on its own cron's minute, never one computed from a timing a PUT
// replaced meanwhile.
func TestSchedulePauseRacesPut(t *testing.T) {
	t.Parallel()
	const puts, togglers = 40, 6
	for _, b := range raceBackends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			st := b.open(t)
			t.Cleanup(func() { st.Close() })
			admin := NewKey()
			srv := httptest.NewServer(New(Config{Store: st, AdminKeyHash: HashKey(admin)}))
			t.Cleanup(srv.Close)
			e := &testEnv{t: t, srv: srv, admin: admin}
			key := e.tenant("acme")
			e.putSchedule(key, "s", `{"cron":"0 * * * *","kind":"echo"}`, http.StatusCreated)

			var done atomic.Bool
			var wg sync.WaitGroup
			errs := make(chan error, togglers+1)
			// checkTick reports an enabled answer whose next tick is not a
			// tick of its cron.
			checkTick := func(what string, sc *scheduleView) error {
				if !sc.Enabled {
					return nil
				}
				if sc.Cron == nil || sc.NextRunAt == nil {
					return fmt.Errorf("%s answered %+v", what, sc)
				}
				var minute int
				if _, err := fmt.Sscanf(*sc.Cron, "%d", &minute); err != nil {
					return err
				}
				if sc.NextRunAt.Minute() != minute || sc.NextRunAt.Second() != 0 {
					return fmt.Errorf("%s answered cron %q with next_run_at %s: a tick of another timing", what, *sc.Cron, sc.NextRunAt)
				}
				return nil
			}
			for i := range togglers {
				op := "pause"
				if i%2 == 1 {
					op = "resume"
				}
				wg.Go(func() {
					for !done.Load() {
						var sc scheduleView
						r := e.do("POST", "/api/schedules/s/"+op, key, nil)
						if r.status != http.StatusOK {
							errs <- fmt.Errorf("%s: status %d: %s", op, r.status, r.body)
							return
						}
						r.decode(&sc)
						if err := checkTick(op, &sc); err != nil {
							errs <- err
							return
						}
					}
				})
			}
			last := ""
			wg.Go(func() {
				defer done.Store(true)
				for i := range puts {
					last = strconv.Itoa(1 + i%59)
					body := fmt.Sprintf(`{"cron":"%s * * * *","kind":"echo","enabled":%v}`, last, i%2 == 0)
					var sc scheduleView
					r := e.do("PUT", "/api/schedules/s", key, body)
					if r.status != http.StatusOK {
						errs <- fmt.Errorf("PUT: status %d: %s", r.status, r.body)
						return
					}
					r.decode(&sc)
					if err := checkTick("PUT", &sc); err != nil {
						errs <- err
						return
					}
				}
			})
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			final := e.getSchedule(key, "s")
			if want := last + " * * * *"; final.Cron == nil || *final.Cron != want {
				t.Errorf("final cron %v, want the last PUT's %q", final.Cron, want)
			}
			if err := checkTick("final GET", final); err != nil {
				t.Error(err)
			}
		})
	}
}
