package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	goredis "github.com/redis/go-redis/v9"
)

// The store itself restarted under running servers. Each test starts a
// PostgreSQL or Redis of its own on a free port in its temporary directory
// (never the machine's shared ones, which other packages use at the same
// time), puts two `latch serve` processes on it, submits a steady stream of
// work, and takes the store down for a few seconds, then starts it again on
// the same data: first a clean shutdown, then a crash. Checked: /readyz
// answers 503 while the store is down and 200 again after, without any
// restart of latch; every submit acknowledged before, during or after the
// outage is present and succeeds, no attempt runs twice; a submit that
// failed during the outage can be retried with its dedup key; the tenant's
// inflight returns to 0.

func TestPostgresRestart(t *testing.T) {
	t.Parallel()
	pg := startPrivatePostgres(t)
	store := pg.url + "&pool_max_conns=8"
	if out, err := exec.Command(binary, "migrate", "up", "--store", store).CombinedOutput(); err != nil {
		t.Fatalf("latch migrate up: %v\n%s", err, out)
	}
	// As `pg_ctl restart -m fast`: sessions aborted, a shutdown checkpoint.
	t.Run("FastShutdown", func(t *testing.T) {
		testStoreRestart(t, store, "fast", func() { pg.stop(syscall.SIGINT) }, pg.start)
	})
	// As `pg_ctl stop -m immediate`: no checkpoint, WAL replay at start.
	t.Run("ImmediateShutdown", func(t *testing.T) {
		testStoreRestart(t, store, "immediate", func() { pg.stop(syscall.SIGQUIT) }, pg.start)
	})
}

func TestRedisRestart(t *testing.T) {
	t.Parallel()
	r := startPrivateRedis(t)
	store := r.url + "?prefix=restart"
	// SHUTDOWN: the AOF is flushed and fsynced, the process exits.
	t.Run("Shutdown", func(t *testing.T) {
		testStoreRestart(t, store, "shutdown", r.stop, r.start)
	})
	// SIGKILL: with appendfsync always, nothing acknowledged may be lost
	// (docs/backends.md).
	t.Run("SIGKILL", func(t *testing.T) {
		testStoreRestart(t, store, "sigkill", r.kill, r.start)
	})
}

// missingBackend skips t, saying why, or fails it when CI requires the
// backends.
func missingBackend(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if requireBackends() {
		t.Fatalf("LATCH_REQUIRE_BACKENDS is set but %s", msg)
	}
	t.Skipf("SKIP: store restart test not run: %s", msg)
}

// testStoreRestart runs the scenario on store, taking the store down with
// stop and up again with start.
func testStoreRestart(t *testing.T, store, tenantName string, stop, start func()) {
	ctx, cancel := context.WithTimeout(context.Background(), 28*time.Second)
	defer cancel()
	// Each job's call takes a while, so that executions are running when
	// the store goes away.
	w := newDelayedWitness(t, 50*time.Millisecond)
	servers := []*server{
		startServer(t, serverOpts{store: store, workers: 4}),
		startServer(t, serverOpts{store: store, workers: 4}),
	}
	key := createTenant(t, servers[0].url, tenantName)
	clients := make([]*client, len(servers))
	for i, s := range servers {
		clients[i] = newClient(s.url, key)
		clients[i].hc.Timeout = 5 * time.Second
	}
	before := wakeLatency(ctx, t, clients, w, "probe-before", 10)
	submit := func(c *client, k string) (*execution, int, error) {
		var e execution
		code, err := c.call(ctx, "POST", "/api/executions", map[string]any{
			"kind": "http", "dedup_key": k,
			"payload": map[string]any{"url": w.url + "/hit/" + k, "method": "POST"},
		}, &e)
		if err == nil && code != 200 && code != 201 {
			err = fmt.Errorf("submit answered %d", code)
		}
		return &e, code, err
	}

	// A steady stream of submits over both servers, bounded in count and
	// time; one that is not acknowledged is remembered for a retry.
	type acked struct {
		id, key string
		server  int
		sent    time.Time
	}
	type failure struct {
		key  string
		sent time.Time
		code int
		err  error
	}
	var (
		mu       sync.Mutex
		ackd     []acked
		failed   []failure
		lastErr  error
		wg       sync.WaitGroup
		stopSubs = make(chan struct{})
	)
	for g := range 6 {
		wg.Go(func() {
			for i := range 1500 {
				select {
				case <-stopSubs:
					return
				case <-ctx.Done():
					return
				default:
				}
				k := fmt.Sprintf("s-%d-%d", g, i)
				sent, srv := time.Now(), (g+i)%len(clients)
				e, code, err := submit(clients[srv], k)
				mu.Lock()
				if err != nil {
					failed = append(failed, failure{k, sent, code, err})
					lastErr = err
				} else {
					ackd = append(ackd, acked{e.ID, k, srv, sent})
				}
				mu.Unlock()
				if err != nil {
					time.Sleep(50 * time.Millisecond)
				} else {
					time.Sleep(5 * time.Millisecond)
				}
			}
		})
	}
	counts := func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		return len(ackd), len(failed)
	}
	waitAcked := func(n int, within time.Duration) bool {
		for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if a, _ := counts(); a >= n {
				return true
			}
		}
		return false
	}
	stopSubmitters := func() {
		close(stopSubs)
		wg.Wait()
	}

	if !waitAcked(100, 10*time.Second) {
		stopSubmitters()
		a, f := counts()
		t.Fatalf("before the outage: %d submits acknowledged, %d failed (last: %v)", a, f, lastErr)
	}

	// The outage: /readyz of every server must say 503 while it lasts.
	stop()
	downAt := time.Now()
	a0, f0 := counts()
	answers := make([]map[string]int, len(servers))
	outageOver := make(chan struct{})
	var polls sync.WaitGroup
	var amu sync.Mutex
	for i, s := range servers {
		answers[i] = map[string]int{}
		polls.Go(func() {
			for {
				select {
				case <-outageOver:
					return
				default:
				}
				a := readyz(s.url)
				amu.Lock()
				answers[i][a]++
				amu.Unlock()
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
	seen503 := func() bool {
		amu.Lock()
		defer amu.Unlock()
		for _, m := range answers {
			if m["503"] == 0 {
				return false
			}
		}
		return true
	}
	for time.Since(downAt) < 2*time.Second || !seen503() && time.Since(downAt) < 8*time.Second {
		time.Sleep(50 * time.Millisecond)
	}
	close(outageOver)
	polls.Wait() // no /readyz of the outage may be answered after the start
	start()
	a1, f1 := counts()
	t.Logf("outage of %v: /readyz answered %v; %d submits acknowledged and %d failed during it",
		time.Since(downAt).Round(time.Millisecond), answers, a1-a0, f1-f0)
	for i, m := range answers {
		if m["503"] == 0 || len(m) != 1 {
			t.Errorf("/readyz of server %d while the store was down: %v, want only 503", i, m)
		}
	}

	// latch reconnects by itself: /readyz is 200 again, submits are
	// acknowledged again by both servers.
	upAt := time.Now()
	for i, s := range servers {
		for readyz(s.url) != "200" {
			if time.Since(upAt) > 10*time.Second {
				stopSubmitters()
				t.Fatalf("server %d: /readyz not 200 within 10s of the store's restart (it answers %s)", i, readyz(s.url))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	readyAt := time.Now()
	t.Logf("both servers ready %v after the store's restart", readyAt.Sub(upAt).Round(time.Millisecond))
	reconnected := waitAcked(a1+100, 10*time.Second)
	stopSubmitters()
	a2, f2 := counts()
	codes := map[int]int{}
	var late []failure // sent when both servers said they were ready again
	for _, f := range failed {
		codes[f.code]++
		if f.sent.After(readyAt) {
			late = append(late, f)
		}
	}
	t.Logf("%d submits acknowledged, %d failed in all (status codes %v; 0 is no answer; last: %v)", a2, f2, codes, lastErr)
	for i, f := range late {
		if i == 5 {
			t.Logf("... and %d more", len(late)-5)
			break
		}
		t.Logf("failed %v after /readyz said ready again: %s: %v", f.sent.Sub(readyAt).Round(time.Millisecond), f.key, f.err)
	}
	if !reconnected {
		t.Fatalf("after the store's restart: only %d more submits acknowledged in 10s", a2-a1)
	}
	ackedAfter := make([]int, len(servers))
	for _, a := range ackd {
		if a.sent.After(readyAt) {
			ackedAfter[a.server]++
		}
	}
	for i, n := range ackedAfter {
		if n < 20 {
			t.Errorf("server %d acknowledged only %d submits after the store's restart (per server: %v)", i, n, ackedAfter)
		}
	}
	for i, s := range servers {
		select {
		case <-s.done:
			t.Fatalf("server %d exited", i)
		default:
		}
	}

	// A submit that was not acknowledged left either a whole execution or
	// nothing: its retry is acknowledged (I9, dedup contract point 3).
	found := 0
	for i, f := range failed {
		e, code, err := submit(clients[i%len(clients)], f.key)
		if err != nil {
			t.Errorf("retry of %s after the restart: %v", f.key, err)
			continue
		}
		if code == 200 {
			found++ // committed, but the answer was lost
		}
		ackd = append(ackd, acked{e.ID, f.key, i % len(clients), time.Now()})
	}
	// Dedup mappings survived the restart: a submit acknowledged before the
	// outage maps to its execution still (I1, I8).
	for i, a := range ackd[:min(50, a0)] {
		e, code, err := submit(clients[i%len(clients)], a.key)
		if err != nil || code != 200 || e.ID != a.id || !e.Deduplicated {
			t.Errorf("I1: resubmit of %s (execution %s) after the restart: %d %s deduplicated=%v, %v",
				a.key, a.id, code, e.ID, e.Deduplicated, err)
		}
	}

	// Every acknowledged execution is there and runs once per attempt.
	verify := newClient(servers[1].url, key)
	verify.hc.Timeout = 15 * time.Second
	rerun := 0
	defer func() {
		t.Logf("%d failed submits retried (%d had been committed); %d executions took more than one attempt",
			len(failed), found, rerun)
	}()
	for _, a := range ackd {
		e, err := waitTerminal(ctx, verify, a.id)
		if err != nil {
			t.Fatalf("I8: acknowledged execution %s (key %s): %v", a.id, a.key, err)
		}
		if e.Attempt > 1 {
			rerun++
		}
		if e.Status != "succeeded" {
			t.Errorf("acknowledged execution %s (key %s) ended %s after %d attempts", a.id, a.key, e.Status, e.Attempt)
		}
		if hits := w.count("/hit/" + a.key); hits < 1 || hits > e.Attempt {
			t.Errorf("I2: execution %s ran %d times in %d attempts", a.id, hits, e.Attempt)
		}
	}
	// Executions whose submit committed but was not answered run too; then
	// no quota slot is left taken.
	for {
		var ten tenant
		if _, err := verify.call(ctx, "GET", "/api/tenants/"+tenantName, nil, &ten); err != nil {
			t.Fatal(err)
		}
		if ten.Inflight == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("I3: tenant inflight stuck at %d", ten.Inflight)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Wake-ups work again: idle workers start a new submit at once rather
	// than at their next poll.
	after := wakeLatency(ctx, t, clients, w, "probe-after", 10)
	t.Logf("submit-to-start of an idle cluster: median %v before the outage, %v after", before, after)
	if after > 250*time.Millisecond {
		// Polling alone (every second) gives a median of some 300-500ms.
		t.Errorf("after the store's restart a submit takes %v (median) to start on an idle cluster, %v before: "+
			"wake-ups (LISTEN/NOTIFY, pub/sub) did not come back", after, before)
	}
}

// wakeLatency submits n executions one at a time, each once the previous
// one has started (its call reached w), and returns the median time from a
// submit to the start.
func wakeLatency(ctx context.Context, t *testing.T, clients []*client, w *witness, prefix string, n int) time.Duration {
	t.Helper()
	var lat []time.Duration
	for i := range n {
		k := fmt.Sprintf("%s-%d", prefix, i)
		start := time.Now()
		var e execution
		if _, err := clients[i%len(clients)].call(ctx, "POST", "/api/executions", map[string]any{
			"kind": "http", "dedup_key": k,
			"payload": map[string]any{"url": w.url + "/hit/" + k, "method": "POST"},
		}, &e); err != nil {
			t.Fatalf("probe submit: %v", err)
		}
		for w.count("/hit/"+k) == 0 {
			if time.Since(start) > 5*time.Second {
				t.Fatalf("probe %s (execution %s) not started within 5s", k, e.ID)
			}
			time.Sleep(2 * time.Millisecond)
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	return lat[len(lat)/2]
}

// newDelayedWitness is a witness whose answers take d: the hit is counted
// when the call arrives.
func newDelayedWitness(t *testing.T, d time.Duration) *witness {
	t.Helper()
	w := &witness{hits: map[string]int{}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w.url = "http://" + l.Addr().String()
	w.srv = &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.mu.Lock()
		w.hits[r.URL.Path]++
		w.mu.Unlock()
		time.Sleep(d)
		rw.WriteHeader(http.StatusNoContent)
	})}
	go w.srv.Serve(l)
	t.Cleanup(func() { w.srv.Close() })
	return w
}

// readyz returns the status code of GET /readyz as a string, or the error.
func readyz(base string) string {
	hc := http.Client{Timeout: 4 * time.Second}
	resp, err := hc.Get(base + "/readyz")
	if err != nil {
		return "error: " + err.Error()
	}
	resp.Body.Close()
	return strconv.Itoa(resp.StatusCode)
}

// proc is a store server process the test owns. It dies with the test
// binary (Pdeathsig) and is killed in t.Cleanup.
type proc struct {
	name string
	cmd  *exec.Cmd
	logs *lockedWriter
	done chan struct{}
}

func startProc(t *testing.T, name string, cred *syscall.Credential, logs *lockedWriter, bin string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Credential: cred}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	p := &proc{name: name, cmd: cmd, logs: logs, done: make(chan struct{})}
	go func() { cmd.Wait(); close(p.done) }()
	return p
}

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// waitExit waits up to d for the process to end, then kills it.
func (p *proc) waitExit(d time.Duration) bool {
	select {
	case <-p.done:
		return true
	case <-time.After(d):
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
		return false
	}
}

// storeLogs keeps a private store's output and shows it if t fails.
func storeLogs(t *testing.T, name string) *lockedWriter {
	l := &lockedWriter{w: new(bytes.Buffer)}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs of the private %s:\n%s", name, l.String())
		}
	})
	return l
}

func freePort(t *testing.T) int {
	t.Helper()
	_, port, err := net.SplitHostPort(freeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// privatePostgres is a PostgreSQL cluster of the test's own, with fsync on.
type privatePostgres struct {
	t    *testing.T
	bin  string // the directory of initdb and postgres
	data string
	sock string
	port int
	cred *syscall.Credential // the postgres OS user's, when the test runs as root
	logs *lockedWriter
	url  string
	mu   sync.Mutex
	p    *proc
}

// postgresBin finds the directory holding initdb and postgres.
func postgresBin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { // newest major version first
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return vb - va
	})
	for _, d := range dirs {
		if isExecutable(filepath.Join(d, "initdb")) && isExecutable(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		d := filepath.Dir(p)
		if isExecutable(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", errors.New("no initdb and postgres in /usr/lib/postgresql/*/bin or on PATH")
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

func startPrivatePostgres(t *testing.T) *privatePostgres {
	t.Helper()
	bin, err := postgresBin()
	if err != nil {
		missingBackend(t, "%v", err)
	}
	pg := &privatePostgres{t: t, bin: bin, port: freePort(t), logs: storeLogs(t, "PostgreSQL")}
	dir := t.TempDir()
	if os.Geteuid() == 0 {
		// PostgreSQL refuses to run as root: run it as the postgres user,
		// in a directory of its own that it can reach.
		u, err := user.Lookup("postgres")
		if err != nil {
			missingBackend(t, "running as root and there is no postgres OS user to run PostgreSQL as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		pg.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
		for _, d := range []string{filepath.Dir(dir), dir} {
			if err := os.Chmod(d, 0o711); err != nil {
				t.Fatal(err)
			}
		}
		dir = filepath.Join(dir, "pg")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	pg.data, pg.sock = filepath.Join(dir, "data"), filepath.Join(dir, "sock")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", pg.data, "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Credential: pg.cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	if err := os.Mkdir(pg.sock, 0o700); err != nil {
		t.Fatal(err)
	}
	if pg.cred != nil {
		if err := os.Chown(pg.sock, int(pg.cred.Uid), int(pg.cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	pg.url = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", pg.port)
	t.Cleanup(func() {
		if p := pg.current(); p != nil && !p.exited() {
			_ = p.cmd.Process.Signal(syscall.SIGQUIT) // immediate shutdown
			p.waitExit(10 * time.Second)
		}
	})
	pg.start()
	return pg
}

func (pg *privatePostgres) current() *proc {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	return pg.p
}

// start starts the postmaster and waits until it accepts connections.
func (pg *privatePostgres) start() {
	t := pg.t
	t.Helper()
	p := startProc(t, "postgres", pg.cred, pg.logs, filepath.Join(pg.bin, "postgres"),
		"-D", pg.data, "-p", strconv.Itoa(pg.port), "-k", pg.sock,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=on", "-c", "synchronous_commit=on",
		"-c", "max_connections=100")
	pg.mu.Lock()
	pg.p = p
	pg.mu.Unlock()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, pg.url)
		if err == nil {
			conn.Close(ctx)
			cancel()
			return
		}
		cancel()
		if p.exited() {
			t.Fatalf("PostgreSQL exited during start-up: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("PostgreSQL does not accept connections after 20s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop sends sig to the postmaster, as pg_ctl stop does (SIGINT: -m fast,
// sessions aborted and a shutdown checkpoint; SIGQUIT: -m immediate, no
// checkpoint and crash recovery at the next start), and waits for it to
// exit.
func (pg *privatePostgres) stop(sig syscall.Signal) {
	p := pg.current()
	_ = p.cmd.Process.Signal(sig)
	if !p.waitExit(15 * time.Second) {
		pg.t.Errorf("PostgreSQL did not stop within 15s of %v; killed", sig)
	}
}

// privateRedis is a redis-server of the test's own, with every write in
// the AOF fsynced before it is answered.
type privateRedis struct {
	t    *testing.T
	bin  string
	dir  string
	port int
	logs *lockedWriter
	url  string
	mu   sync.Mutex
	p    *proc
}

func startPrivateRedis(t *testing.T) *privateRedis {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		missingBackend(t, "no redis-server on PATH")
	}
	r := &privateRedis{t: t, bin: bin, dir: t.TempDir(), port: freePort(t), logs: storeLogs(t, "Redis")}
	r.url = fmt.Sprintf("redis://127.0.0.1:%d/0", r.port)
	t.Cleanup(func() {
		if p := r.current(); p != nil && !p.exited() {
			_ = p.cmd.Process.Signal(syscall.SIGKILL)
			<-p.done
		}
	})
	r.start()
	return r
}

func (r *privateRedis) current() *proc {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.p
}

// start starts redis-server on the same directory (so it reloads its AOF)
// and waits until it answers PING.
func (r *privateRedis) start() {
	t := r.t
	t.Helper()
	p := startProc(t, "redis-server", nil, r.logs, r.bin,
		"--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--dir", r.dir,
		"--appendonly", "yes", "--appendfsync", "always", "--save", "",
		"--daemonize", "no")
	r.mu.Lock()
	r.p = p
	r.mu.Unlock()
	rdb := goredis.NewClient(&goredis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", r.port), MaxRetries: -1})
	defer rdb.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := rdb.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		if p.exited() {
			t.Fatalf("redis-server exited during start-up: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server does not answer PING after 20s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop sends SHUTDOWN (the AOF is flushed) and waits for the process to end.
func (r *privateRedis) stop() {
	rdb := goredis.NewClient(&goredis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", r.port), MaxRetries: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	_ = rdb.Shutdown(ctx).Err() // the connection closes: no answer
	cancel()
	rdb.Close()
	if !r.current().waitExit(15 * time.Second) {
		r.t.Errorf("redis-server did not exit within 15s of SHUTDOWN; killed")
	}
}

// kill ends redis-server with SIGKILL: a crash.
func (r *privateRedis) kill() {
	p := r.current()
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}
