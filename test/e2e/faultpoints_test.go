package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/latch-run/latch/internal/fault"
)

// Crash points: `latch serve` built with -tags faults
// (faultsBinary) and started with LATCH_FAULTS naming one crash point of
// internal/fault dies by SIGKILL when that point is hit: after Store.Admit
// committed and before the answer of a submit or of a batch is written,
// after Store.Complete committed and before the answer of a complete, when
// an in-process handler has started, when it has returned and its outcome
// is not yet written, after a heartbeat's store call returned and before
// the worker acts on it. A supervisor restarts the process on the same
// store each time it dies, as a process manager would, giving each life
// the next rule of a plan that arms every point in turn (twice on SQLite,
// once on PostgreSQL and Redis), then lives without faults.
//
// Meanwhile a client submits jobs with dedup keys, one at a time, and
// another batches of them, one at a time, each sending a request that got
// no answer again, unchanged, to the life that is up by then; `http` jobs
// call an outside witness, which records the execution id and attempt the
// http kind sends (Latch-Execution-Id, Latch-Attempt); jobs of the kind
// "fp-remote" are run by an HTTP worker of the test, one at a time, which
// calls the witness the same way and completes over the API, sending a
// complete that got no answer again. Some http jobs hold the witness's
// answer longer than a heartbeat interval, so that heartbeats happen. Each
// life listens on an address of its own: a request that got no answer is
// known to have been left by that life, and with one request of a kind in
// flight at a time, a life that died at an API point left exactly one
// request of that point's kind unanswered: the one that hit it.
//
// Checked at the end, from the API's answers, the store's records (the
// execution list) and the witness:
//   - every life of the plan died by SIGKILL at its own point (the line
//     internal/fault writes names it);
//   - I8, I9: every acknowledged execution exists and succeeded;
//   - I1: one execution per dedup key, the id every answer gave; every key
//     submitted once more at the end answers 200 deduplicated with that id;
//     a batch sent again after a lost answer is all new or all deduplicated;
//   - the API points: for each life that died at api.submit.committed, the
//     submit it left unanswered, sent again to the next life, came back 200
//     deduplicated (with the one id the store has for the key); likewise a
//     batch at api.batch.committed came back all deduplicated; and a
//     complete at api.complete.committed came back 409 lease_lost, the
//     execution succeeded at that very attempt and never ran again;
//   - I2, I5: no (execution, attempt) has two effects at the witness, no
//     effect has an attempt beyond the execution's last or an execution id
//     other than its key's, and the attempt that succeeded had exactly one
//     effect; a crash mid-handler may repeat an effect with a new attempt
//     number: each death at a worker point leaves at least one attempt that
//     did not succeed (at the heartbeat, of a held job), and each at
//     worker.handler.returned one effect beyond one per execution;
//   - I3: the tenant's inflight returns to 0.

func TestFaultPointsSQLite(t *testing.T) {
	t.Parallel()
	fpScenario(t, "sqlite:"+filepath.Join(t.TempDir(), "latch.db"), 2)
}

func TestFaultPointsPostgres(t *testing.T) {
	t.Parallel()
	fpScenario(t, postgresStore(t), 1)
}

func TestFaultPointsRedis(t *testing.T) {
	t.Parallel()
	fpScenario(t, redisStore(t), 1)
}

const (
	fpTenant     = "faultpoints"
	fpRemoteKind = "fp-remote"
	fpHold       = time.Second // > the heartbeat interval (lease 2s / 3)
)

// fpRule returns a LATCH_FAULTS rule for point: a hit number from a range
// that suits how often the point is hit, and half the time a probability
// of 1/2 from that hit on.
func fpRule(rng *rand.Rand, point string) string {
	lo, hi := 1, 3
	switch point {
	case fault.APISubmitCommitted, fault.WorkerHandlerStarted, fault.WorkerHandlerReturned:
		lo, hi = 2, 8
	case fault.APICompleteCommitted:
		lo, hi = 1, 4
	}
	n := lo + rng.IntN(hi-lo+1)
	if rng.IntN(2) == 0 {
		return fmt.Sprintf("%s=@%d", point, n)
	}
	return fmt.Sprintf("%s=0.5@%d", point, n)
}

// fpScenario runs the scenario on store with rounds lives per point.
func fpScenario(t *testing.T, store string, rounds int) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("LATCH_TEST_FAULTPOINTS_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("LATCH_TEST_FAULTPOINTS_SEED: %v", err)
		}
	}
	rng := rand.New(rand.NewPCG(seed, seed))
	var plan []*fpLife
	for range rounds {
		points := fault.Points()
		rng.Shuffle(len(points), func(i, j int) { points[i], points[j] = points[j], points[i] })
		for _, p := range points {
			plan = append(plan, &fpLife{point: p, faults: fpRule(rng, p)})
		}
	}
	rules := make([]string, len(plan))
	for i, l := range plan {
		rules[i] = l.faults
	}
	t.Logf("seed %d (LATCH_TEST_FAULTPOINTS_SEED repeats the plan); lives: %s", seed, strings.Join(rules, " | "))

	// Generous bounds, only reached when something is stuck: on a busy
	// machine a life takes 1-3s, start-up included.
	livesDeadline := time.Duration(len(plan)) * 15 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), livesDeadline+60*time.Second)
	defer cancel()
	w := newFPWitness(t)
	sup := startFPSupervisor(t, store, plan)
	if err := sup.waitUp(ctx); err != nil {
		t.Fatal(err)
	}
	key := createTenant(t, sup.url(), fpTenant)
	tr := &fpTraffic{t: t, sup: sup, w: w, key: key,
		hc:   &http.Client{Timeout: 15 * time.Second},
		stop: make(chan struct{}), stopWorkers: make(chan struct{}), acks: map[string]*fpAck{}}

	// The traffic runs until every life of the plan has died, then
	// submitting stops; the remote worker goes on until everything ran.
	var submitters, workers sync.WaitGroup
	submitters.Go(func() { tr.singles(ctx) })
	submitters.Go(func() { tr.batchSubmits(ctx) })
	workers.Go(func() { tr.remoteWorker(ctx) })
	select {
	case <-sup.clean:
	case <-time.After(livesDeadline):
		t.Errorf("the plan's lives did not all die within %v: %s", livesDeadline, sup.summary())
	case <-ctx.Done():
	}
	close(tr.stop)
	submitters.Wait()
	if t.Failed() {
		close(tr.stopWorkers)
		workers.Wait()
		return
	}
	tr.resubmitAll(ctx)
	inflight := tr.drain(ctx)
	close(tr.stopWorkers)
	workers.Wait()
	if inflight != 0 {
		t.Errorf("I3, I9: tenant inflight stuck at %d", inflight)
	}
	// The checks have time of their own, even when the drain took all.
	cctx, ccancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer ccancel()
	tr.check(cctx, plan)
}

// fpLife is one life of the supervised process.
type fpLife struct {
	point  string // the point LATCH_FAULTS arms; "" for a life without faults
	faults string // LATCH_FAULTS

	logs   *lockedWriter
	times  [3]time.Time // started, ready, ended
	ended  bool
	killed bool   // it ended by SIGKILL
	fired  string // the point its crash line names
	err    error  // how it ended
}

var fpCrashLine = regexp.MustCompile(`latch: fault point (\S+) fired at hit \d+`)

// errFPQuit is start's answer when the supervisor is told to quit.
var errFPQuit = errors.New("supervisor stopped")

// fpSupervisor keeps one `latch serve` (faultsBinary) running on a store,
// restarting it whenever it dies: the lives of the plan first, in order,
// then lives without faults.
type fpSupervisor struct {
	t     *testing.T
	store string
	plan  []*fpLife

	mu    sync.Mutex
	base  string    // the URL of the last life that became ready
	life  int       // its index in lives
	lives []*fpLife // every life started

	up    chan struct{} // closed when the first life is ready
	clean chan struct{} // closed when a life after the plan is ready
	quit  chan struct{}
	done  chan struct{}
}

func startFPSupervisor(t *testing.T, store string, plan []*fpLife) *fpSupervisor {
	s := &fpSupervisor{t: t, store: store, plan: plan, up: make(chan struct{}), clean: make(chan struct{}),
		quit: make(chan struct{}), done: make(chan struct{})}
	go s.run()
	t.Cleanup(func() {
		close(s.quit)
		<-s.done
		if t.Failed() {
			s.mu.Lock()
			defer s.mu.Unlock()
			for i, l := range s.lives {
				logs := l.logs.String()
				if len(logs) > 6000 {
					logs = "...\n" + logs[len(logs)-6000:]
				}
				t.Logf("life %d (LATCH_FAULTS=%q, ended %v: %v), the end of its logs:\n%s", i, l.faults, l.ended, l.err, logs)
			}
		}
	})
	return s
}

func (s *fpSupervisor) url() string {
	u, _ := s.current()
	return u
}

// current returns the URL of the last life that became ready, and its
// index. Each life listens on an address of its own, so a request sent to
// the URL reaches that life or nothing.
func (s *fpSupervisor) current() (string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.base, s.life
}

// waitUp waits until the first life is ready.
func (s *fpSupervisor) waitUp(ctx context.Context) error {
	select {
	case <-s.up:
		return nil
	case <-s.done:
		return errors.New("the supervisor gave up")
	case <-ctx.Done():
		return fmt.Errorf("latch serve not up: %w", ctx.Err())
	}
}

func (s *fpSupervisor) summary() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for i, l := range s.lives {
		fmt.Fprintf(&b, "\n  life %d LATCH_FAULTS=%q ended=%v fired=%q", i, l.faults, l.ended, l.fired)
		if l.ended {
			fmt.Fprintf(&b, " start-up %v, then up %v", l.times[1].Sub(l.times[0]).Round(time.Millisecond),
				l.times[2].Sub(l.times[1]).Round(time.Millisecond))
		}
	}
	return b.String()
}

func (s *fpSupervisor) run() {
	defer close(s.done)
	upOnce, cleanOnce := sync.Once{}, sync.Once{}
	for i := 0; ; i++ {
		life := &fpLife{}
		if i < len(s.plan) {
			life = s.plan[i]
		} else if i > len(s.plan)+2 {
			s.t.Errorf("latch serve died %d times without faults: giving up", i-len(s.plan))
			return
		}
		life.logs = &lockedWriter{w: &bytes.Buffer{}}
		started := time.Now()
		addr, cmd, exited, ready, err := s.start(life)
		s.mu.Lock()
		life.times[0], life.times[1] = started, time.Now()
		s.lives = append(s.lives, life)
		if ready {
			s.base, s.life = "http://"+addr, i
		}
		s.mu.Unlock()
		if errors.Is(err, errFPQuit) {
			return
		}
		if err != nil {
			s.t.Errorf("supervisor: %v", err)
			return
		}
		if ready {
			upOnce.Do(func() { close(s.up) })
			if life.faults == "" {
				cleanOnce.Do(func() { close(s.clean) })
			}
		}
		// Not ready: it died during start-up (its worker may claim work
		// and reach a point before /readyz answers).
		select {
		case <-exited:
		case <-s.quit:
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-exited
			return
		}
		s.ended(life, cmd)
		if life.point == "" {
			s.t.Errorf("latch serve without faults died: %v", life.err)
		} else if !life.killed || life.fired != life.point {
			s.t.Errorf("life %d with LATCH_FAULTS=%q ended (%v) not by SIGKILL at its point (the crash line names %q)",
				i, life.faults, life.err, life.fired)
		}
	}
}

// ended records how life's process ended.
func (s *fpSupervisor) ended(life *fpLife, cmd *exec.Cmd) {
	s.mu.Lock()
	defer s.mu.Unlock()
	life.ended = true
	life.times[2] = time.Now()
	life.err = fmt.Errorf("%v", cmd.ProcessState)
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
		life.killed = ws.Signaled() && ws.Signal() == syscall.SIGKILL
	}
	if m := fpCrashLine.FindAllStringSubmatch(life.logs.String(), -1); len(m) == 1 {
		life.fired = m[0][1]
	} else if len(m) > 1 {
		life.fired = fmt.Sprintf("%d crash lines", len(m))
	}
}

// start starts a life on a free address and waits until it is ready, or
// has died. exited is closed when the process ends.
func (s *fpSupervisor) start(life *fpLife) (addr string, cmd *exec.Cmd, exited chan struct{}, ready bool, err error) {
	for try := 0; ; try++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", nil, nil, false, err
		}
		addr = l.Addr().String()
		l.Close()
		cmd = exec.Command(faultsBinary, "serve", "--addr", addr, "--store", s.store, "--workers", "8",
			"--lease-seconds", "2", "--rescue-interval", "300ms", "--shutdown-grace", "2s")
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, fault.Env+"=") {
				cmd.Env = append(cmd.Env, kv)
			}
		}
		// LATCH_HTTP_ALLOW: the witness the http kind calls is on 127.0.0.1.
		cmd.Env = append(cmd.Env, "LATCH_ADMIN_KEY="+adminKey, "LATCH_HTTP_ALLOW=127.0.0.1", fault.Env+"="+life.faults)
		cmd.Stdout, cmd.Stderr = life.logs, life.logs
		if err := cmd.Start(); err != nil {
			return "", nil, nil, false, err
		}
		exited = make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		hc := &http.Client{Timeout: time.Second}
		for deadline := time.Now().Add(30 * time.Second); ; {
			if resp, err := hc.Get("http://" + addr + "/readyz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					return addr, cmd, exited, true, nil
				}
			}
			select {
			case <-exited:
			case <-s.quit:
				_ = cmd.Process.Signal(syscall.SIGKILL)
				<-exited
				return "", nil, nil, false, errFPQuit
			case <-time.After(25 * time.Millisecond):
				if time.Now().Before(deadline) {
					continue
				}
				_ = cmd.Process.Signal(syscall.SIGKILL)
				<-exited
				return "", nil, nil, false, fmt.Errorf("latch serve not ready after 30s:\n%s", life.logs.String())
			}
			// It exited during start-up: another process may have taken
			// the port meanwhile; else it is a death like any other.
			if try < 3 && strings.Contains(life.logs.String(), "address already in use") {
				life.logs = &lockedWriter{w: &bytes.Buffer{}}
				break
			}
			return addr, cmd, exited, false, nil
		}
	}
}

// fpWitness is an HTTP receiver outside latch that records each call of a
// job, by the execution id and attempt it carries, and by the dedup key in
// its path /e/{key}. ?hold=D holds the answer for D.
type fpWitness struct {
	url string

	mu      sync.Mutex
	effects map[fpEffect]int
	keys    map[string]map[string]bool // key → execution ids that called
	bare    []string                   // paths called without the headers
}

type fpEffect struct {
	id      string
	attempt int
}

func newFPWitness(t *testing.T) *fpWitness {
	w := &fpWitness{effects: map[fpEffect]int{}, keys: map[string]map[string]bool{}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w.url = "http://" + l.Addr().String()
	srv := &http.Server{Handler: http.HandlerFunc(w.serve)}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return w
}

func (w *fpWitness) serve(rw http.ResponseWriter, r *http.Request) {
	key := strings.TrimPrefix(r.URL.Path, "/e/")
	id := r.Header.Get("Latch-Execution-Id")
	attempt, err := strconv.Atoi(r.Header.Get("Latch-Attempt"))
	w.mu.Lock()
	if id == "" || err != nil {
		w.bare = append(w.bare, r.URL.Path)
	} else {
		w.effects[fpEffect{id, attempt}]++
		if w.keys[key] == nil {
			w.keys[key] = map[string]bool{}
		}
		w.keys[key][id] = true
	}
	w.mu.Unlock()
	if d, err := time.ParseDuration(r.URL.Query().Get("hold")); err == nil {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
		}
	}
	rw.WriteHeader(http.StatusNoContent)
}

// fpAck is a submit's acknowledgement.
type fpAck struct {
	key    string
	body   map[string]any // the submit body (a batch item), as sent
	id     string
	status int  // 201, or 200 deduplicated
	held   bool // its http call holds the witness for fpHold
	single bool // submitted alone, not in a batch
	cuts   []int
}

// fpBatch is what a batch came to.
type fpBatch struct {
	cuts     []int
	allDedup bool // every item answered 200 deduplicated
}

// fpComplete is what a remote worker's complete came to.
type fpComplete struct {
	id      string
	attempt int
	cuts    []int
	code    int // 200, or 409 lease_lost
}

// fpTraffic is the clients and the remote worker of a scenario. Each of
// singles, batchSubmits and remoteWorker sends one request at a time, so when a
// life dies at an API point, the request of that point's kind which that
// life left unanswered is the one that hit the point. (singles and
// batchSubmits both admit, but only a single submit hits
// api.submit.committed and only a batch api.batch.committed.)
type fpTraffic struct {
	t   *testing.T
	sup *fpSupervisor
	w   *fpWitness
	key string
	hc  *http.Client

	stop        chan struct{} // stop submitting
	stopWorkers chan struct{} // stop the remote worker

	mu           sync.Mutex
	acks         map[string]*fpAck
	batches      []fpBatch
	completes    []fpComplete
	remoteClaims int
}

// call calls the life the supervisor has up, and returns its index too.
func (tr *fpTraffic) call(ctx context.Context, method, path string, body, out any) (int, int, error) {
	base, life := tr.sup.current()
	c := &client{base: base, key: tr.key, hc: tr.hc}
	code, err := c.call(ctx, method, path, body, out)
	return code, life, err
}

// fpPause waits d, or less when stop is closed; it reports whether to go
// on.
func fpPause(stop <-chan struct{}, d time.Duration) bool {
	select {
	case <-stop:
		return false
	case <-time.After(d):
		return true
	}
}

// post sends body until an answer comes: a try without one (no
// connection, a connection cut, a 5xx) is repeated, unchanged. It returns
// the answer's status and, for each try without an answer, the index of
// the life it was sent to. A 4xx is an error.
func (tr *fpTraffic) post(ctx context.Context, path string, body any, out *json.RawMessage) (int, []int, error) {
	var cuts []int
	wait := 20 * time.Millisecond
	for {
		*out = nil
		code, life, err := tr.call(ctx, "POST", path, body, out)
		switch {
		case err == nil && code < 300:
			return code, cuts, nil
		case ctx.Err() != nil:
			return 0, cuts, ctx.Err()
		case code >= 300 && code < 500:
			if err == nil {
				err = fmt.Errorf("POST %s: %d", path, code)
			}
			return code, cuts, err
		}
		cuts = append(cuts, life)
		time.Sleep(wait)
		wait = min(2*wait, 200*time.Millisecond)
	}
}

func (tr *fpTraffic) submitBody(key, kind string, hold bool) map[string]any {
	u := tr.w.url + "/e/" + key
	if hold {
		u += "?hold=" + fpHold.String()
	}
	return map[string]any{"kind": kind, "dedup_key": key, "max_attempts": 50,
		"payload": map[string]any{"url": u, "method": "POST"}}
}

// singles submits one job at a time: http jobs, every third one for the
// remote worker, every eighth a held one.
func (tr *fpTraffic) singles(ctx context.Context) {
	for i := 0; ; i++ {
		select {
		case <-tr.stop:
			return
		default:
		}
		key := fmt.Sprintf("s-%d", i)
		kind, hold := "http", i%8 == 1
		if i%3 == 2 {
			kind = fpRemoteKind
		}
		body := tr.submitBody(key, kind, hold)
		var raw json.RawMessage
		code, cuts, err := tr.post(ctx, "/api/executions", body, &raw)
		if err != nil {
			tr.t.Errorf("submit of %s: %v", key, err)
			return
		}
		var e execution
		if err := json.Unmarshal(raw, &e); err != nil {
			tr.t.Errorf("submit of %s: %v: %s", key, err, raw)
			return
		}
		switch {
		case e.ID == "" || e.DedupKey != key || e.Deduplicated != (code == 200):
			tr.t.Errorf("submit of %s answered %d: %s", key, code, raw)
		case code == 200 && len(cuts) == 0:
			tr.t.Errorf("I1: the first submit of the new key %s answered 200 deduplicated: %s", key, raw)
		}
		tr.ack(&fpAck{key: key, body: body, id: e.ID, status: code, held: hold, single: true, cuts: cuts})
		if !fpPause(tr.stop, 15*time.Millisecond) {
			return
		}
	}
}

// batchSubmits submits batches of five http jobs, one at a time.
func (tr *fpTraffic) batchSubmits(ctx context.Context) {
	for j := 0; ; j++ {
		items := make([]map[string]any, 5)
		for k := range items {
			items[k] = tr.submitBody(fmt.Sprintf("b%d-%d", j, k), "http", false)
		}
		var raw json.RawMessage
		_, cuts, err := tr.post(ctx, "/api/executions/batch", map[string]any{"items": items}, &raw)
		if err != nil {
			tr.t.Errorf("batch %d: %v", j, err)
			return
		}
		var res struct {
			Items []struct {
				Status    int       `json:"status"`
				Execution execution `json:"execution"`
			} `json:"items"`
		}
		if err := json.Unmarshal(raw, &res); err != nil || len(res.Items) != len(items) {
			tr.t.Errorf("batch %d: %v: %s", j, err, raw)
			return
		}
		created, dedup := 0, 0
		for k, it := range res.Items {
			key := items[k]["dedup_key"].(string)
			e := it.Execution
			switch {
			case it.Status == 201 && !e.Deduplicated:
				created++
			case it.Status == 200 && e.Deduplicated:
				dedup++
			default:
				tr.t.Errorf("batch %d item %d: %s", j, k, raw)
			}
			if e.ID == "" || e.DedupKey != key {
				tr.t.Errorf("batch %d item %d: %s", j, k, raw)
			}
			tr.ack(&fpAck{key: key, body: items[k], id: e.ID, status: it.Status, cuts: cuts})
		}
		switch {
		case dedup > 0 && len(cuts) == 0:
			tr.t.Errorf("I1: batch %d of new keys, sent once, answered deduplicated items: %s", j, raw)
		case created > 0 && dedup > 0:
			tr.t.Errorf("batch %d, sent again after a lost answer, was committed in part: %d items new, %d deduplicated: %s",
				j, created, dedup, raw)
		}
		tr.mu.Lock()
		tr.batches = append(tr.batches, fpBatch{cuts: cuts, allDedup: dedup == len(items)})
		tr.mu.Unlock()
		if !fpPause(tr.stop, 150*time.Millisecond) {
			return
		}
	}
}

func (tr *fpTraffic) ack(a *fpAck) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if old := tr.acks[a.key]; old != nil {
		tr.t.Errorf("key %s acknowledged twice (%s, %s)", a.key, old.id, a.id)
		return
	}
	tr.acks[a.key] = a
}

// remoteWorker claims fp-remote jobs over the API, calls the witness as
// the http kind would, and completes them, one at a time, repeating a
// complete that got no answer.
func (tr *fpTraffic) remoteWorker(ctx context.Context) {
	for {
		select {
		case <-tr.stopWorkers:
			return
		case <-ctx.Done():
			return
		default:
		}
		var res struct {
			Leases []struct {
				ExecutionID string `json:"execution_id"`
				LeaseToken  string `json:"lease_token"`
				Attempt     int    `json:"attempt"`
				Payload     struct {
					URL string `json:"url"`
				} `json:"payload"`
			} `json:"leases"`
		}
		_, _, err := tr.call(ctx, "POST", "/api/workers/claim", map[string]any{
			"worker_id": "fp-remote", "kinds": []string{fpRemoteKind},
			"max": 4, "lease_seconds": 2, "wait_seconds": 1,
		}, &res)
		if err != nil {
			fpPause(tr.stopWorkers, 50*time.Millisecond) // the server is down: a lease it gave is rescued
			continue
		}
		for _, l := range res.Leases {
			tr.mu.Lock()
			tr.remoteClaims++
			tr.mu.Unlock()
			req, err := http.NewRequestWithContext(ctx, "POST", l.Payload.URL, nil)
			if err != nil {
				tr.t.Errorf("remote job %s: %v", l.ExecutionID, err)
				return
			}
			req.Header.Set("Latch-Execution-Id", l.ExecutionID)
			req.Header.Set("Latch-Attempt", strconv.Itoa(l.Attempt))
			resp, err := tr.hc.Do(req)
			if err != nil {
				tr.t.Errorf("remote job %s: the witness: %v", l.ExecutionID, err)
				return
			}
			resp.Body.Close()
			c := fpComplete{id: l.ExecutionID, attempt: l.Attempt}
			for wait := 20 * time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
				code, life, err := tr.call(ctx, "POST", "/api/executions/"+l.ExecutionID+"/complete",
					map[string]any{"lease_token": l.LeaseToken, "result": map[string]any{"ok": true}}, nil)
				if err == nil && (code == 200 || code == 409) {
					c.code = code
					break
				}
				if ctx.Err() != nil {
					return
				}
				if err == nil && code < 500 {
					tr.t.Errorf("complete of %s answered %d", l.ExecutionID, code)
					return
				}
				c.cuts = append(c.cuts, life)
				time.Sleep(wait)
			}
			tr.mu.Lock()
			tr.completes = append(tr.completes, c)
			tr.mu.Unlock()
		}
	}
}

// resubmitAll submits every acknowledged key once more, with its body, in
// batches: each must answer 200 deduplicated with the acknowledged id.
func (tr *fpTraffic) resubmitAll(ctx context.Context) {
	tr.mu.Lock()
	acks := make([]*fpAck, 0, len(tr.acks))
	for _, a := range tr.acks {
		acks = append(acks, a)
	}
	tr.mu.Unlock()
	for len(acks) > 0 {
		part := acks[:min(len(acks), 500)]
		acks = acks[len(part):]
		items := make([]map[string]any, len(part))
		for i, a := range part {
			items[i] = a.body
		}
		var raw json.RawMessage
		if _, _, err := tr.post(ctx, "/api/executions/batch", map[string]any{"items": items}, &raw); err != nil {
			tr.t.Fatalf("resubmit: %v", err)
		}
		var res struct {
			Items []struct {
				Status    int       `json:"status"`
				Execution execution `json:"execution"`
			} `json:"items"`
		}
		if err := json.Unmarshal(raw, &res); err != nil || len(res.Items) != len(part) {
			tr.t.Fatalf("resubmit: %v: %s", err, raw)
		}
		for i, it := range res.Items {
			if it.Status != 200 || !it.Execution.Deduplicated || it.Execution.ID != part[i].id {
				tr.t.Errorf("I1: key %s, acknowledged as %s, submitted again: status %d, execution %+v",
					part[i].key, part[i].id, it.Status, it.Execution)
			}
		}
	}
}

// drain waits until the tenant has nothing in flight and returns its
// inflight then (0, or what it is stuck at when ctx ends).
func (tr *fpTraffic) drain(ctx context.Context) int {
	for {
		var ten tenant
		_, _, err := tr.call(ctx, "GET", "/api/tenants/"+fpTenant, nil, &ten)
		if err == nil && ten.Inflight == 0 {
			return 0
		}
		if ctx.Err() != nil {
			if err != nil {
				tr.t.Fatalf("tenant: %v", err)
			}
			return ten.Inflight
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// fpExecution is an execution as the list answers it.
type fpExecution struct {
	ID       string  `json:"execution_id"`
	Kind     string  `json:"kind"`
	Status   string  `json:"status"`
	Attempt  int     `json:"attempt"`
	DedupKey *string `json:"dedup_key"`
}

// list returns every execution of the tenant.
func (tr *fpTraffic) list(ctx context.Context) []fpExecution {
	var all []fpExecution
	cursor := ""
	for {
		path := "/api/executions?limit=500"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		var page struct {
			Items      []fpExecution `json:"items"`
			NextCursor *string       `json:"next_cursor"`
		}
		if _, _, err := tr.call(ctx, "GET", path, nil, &page); err != nil {
			tr.t.Fatalf("list executions: %v", err)
		}
		all = append(all, page.Items...)
		if page.NextCursor == nil || *page.NextCursor == "" {
			return all
		}
		cursor = *page.NextCursor
	}
}

// check checks the invariants once everything ran.
func (tr *fpTraffic) check(ctx context.Context, plan []*fpLife) {
	t := tr.t
	// died[i]: life i of the plan died at its point.
	died := make([]bool, len(plan))
	deaths := map[string]int{}
	tr.sup.mu.Lock()
	for i, l := range plan {
		if died[i] = l.ended && l.killed && l.fired == l.point; died[i] {
			deaths[l.point]++
		}
	}
	tr.sup.mu.Unlock()
	execs := tr.list(ctx)
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.w.mu.Lock()
	defer tr.w.mu.Unlock()

	// The store's records: one execution per key, the acknowledged one,
	// succeeded (I1, I8, I9); nothing else.
	byID := map[string]fpExecution{}
	byKey := map[string]fpExecution{}
	for _, e := range execs {
		byID[e.ID] = e
		if e.DedupKey == nil {
			t.Errorf("an execution without a dedup key: %+v", e)
			continue
		}
		if old, dup := byKey[*e.DedupKey]; dup {
			t.Errorf("I1: two executions with the key %s: %s and %s", *e.DedupKey, old.ID, e.ID)
		}
		byKey[*e.DedupKey] = e
		if tr.acks[*e.DedupKey] == nil {
			t.Errorf("execution %s of key %s that no submit acknowledged", e.ID, *e.DedupKey)
		}
	}
	for key, a := range tr.acks {
		e, ok := byKey[key]
		switch {
		case !ok:
			t.Errorf("I8: the acknowledged execution %s of key %s is not in the store", a.id, key)
		case e.ID != a.id:
			t.Errorf("I1: key %s acknowledged as %s maps to %s", key, a.id, e.ID)
		case e.Status != "succeeded":
			t.Errorf("the acknowledged execution %s (key %s) ended %s after %d attempts", e.ID, key, e.Status, e.Attempt)
		}
	}

	// The witness: no attempt had two effects, none beyond the last
	// attempt, the succeeded attempt had one; every effect is of its
	// key's execution (I1, I2, I5).
	if len(tr.w.bare) > 0 {
		t.Errorf("%d calls came without Latch-Execution-Id and Latch-Attempt, such as %s", len(tr.w.bare), tr.w.bare[0])
	}
	effects := 0
	for ef, n := range tr.w.effects {
		effects += n
		e, ok := byID[ef.id]
		switch {
		case !ok:
			t.Errorf("an effect of execution %s, which is not in the store", ef.id)
		case n > 1:
			t.Errorf("I2: execution %s attempt %d had %d effects", ef.id, ef.attempt, n)
		case ef.attempt < 1 || ef.attempt > e.Attempt:
			t.Errorf("I2: an effect of execution %s attempt %d, beyond its %d attempts", ef.id, ef.attempt, e.Attempt)
		}
	}
	for key, ids := range tr.w.keys {
		for id := range ids {
			if e := byKey[key]; e.ID != id {
				t.Errorf("I1: key %s (execution %s) had an effect of execution %s", key, e.ID, id)
			}
		}
	}
	failedAttempts, heldFailedAttempts := 0, 0
	for key, e := range byKey {
		if e.Status == "succeeded" && tr.w.effects[fpEffect{e.ID, e.Attempt}] != 1 {
			t.Errorf("execution %s (key %s) succeeded at attempt %d with %d effects of that attempt",
				e.ID, key, e.Attempt, tr.w.effects[fpEffect{e.ID, e.Attempt}])
		}
		if e.Kind == "http" {
			failedAttempts += e.Attempt - 1
			if a := tr.acks[key]; a != nil && a.held {
				heldFailedAttempts += e.Attempt - 1
			}
		}
	}
	for _, c := range tr.completes {
		if e := byID[c.id]; c.code == 200 && e.Attempt != c.attempt {
			t.Errorf("I5: execution %s completed at attempt %d ran again: %d attempts", c.id, c.attempt, e.Attempt)
		}
	}

	// The API points: the request a life died on committed, so the same
	// request sent again, to the next life, was answered as a duplicate
	// (submit, batch) or as lease_lost with the execution succeeded at
	// that attempt and never run again (complete).
	lostSingles, lostBatches, lostCompletes := map[int]int{}, map[int]int{}, map[int]int{}
	for _, a := range tr.acks {
		if a.single && a.status == 200 {
			for _, l := range a.cuts {
				lostSingles[l]++
			}
		}
	}
	for _, b := range tr.batches {
		if b.allDedup {
			for _, l := range b.cuts {
				lostBatches[l]++
			}
		}
	}
	for _, c := range tr.completes {
		if e := byID[c.id]; c.code == 409 && e.Status == "succeeded" && e.Attempt == c.attempt {
			for _, l := range c.cuts {
				lostCompletes[l]++
			}
		}
	}
	for i, l := range plan {
		if !died[i] {
			continue
		}
		switch {
		case l.point == fault.APISubmitCommitted && lostSingles[i] == 0:
			t.Errorf("I1: life %d died at %s, and no single submit it left unanswered came back 200 deduplicated "+
				"when sent again: the commit was lost, or the point is not after it", i, l.point)
		case l.point == fault.APIBatchCommitted && lostBatches[i] == 0:
			t.Errorf("I1: life %d died at %s, and no batch it left unanswered came back all deduplicated "+
				"when sent again: the commit was lost, or the point is not after it", i, l.point)
		case l.point == fault.APICompleteCommitted && lostCompletes[i] == 0:
			t.Errorf("I8: life %d died at %s, and no complete it left unanswered came back 409 with the execution "+
				"succeeded at that attempt when sent again: the commit was lost, or the point is not after it", i, l.point)
		}
	}

	// The worker points: each death left at least one attempt that did not
	// succeed (a repeated effect has a new attempt number); at the
	// heartbeat, of a held job; after the handler returned, with its
	// effect done.
	workerDeaths := deaths[fault.WorkerHandlerStarted] + deaths[fault.WorkerHandlerReturned] + deaths[fault.WorkerHeartbeatCommitted]
	for _, c := range []struct {
		what       string
		got, least int
	}{
		{"attempts of http jobs that did not succeed", failedAttempts, workerDeaths},
		{"attempts of held http jobs that did not succeed", heldFailedAttempts, deaths[fault.WorkerHeartbeatCommitted]},
		{"effects beyond one per execution", effects - len(byKey), deaths[fault.WorkerHandlerReturned]},
	} {
		if c.got < c.least {
			t.Errorf("I9: %s: %d, want at least %d (one per death at its point)", c.what, c.got, c.least)
		}
	}
	// Requests whose answer was lost after their commit, by kind.
	sum := func(m map[int]int) (n int) {
		for _, v := range m {
			n += v
		}
		return n
	}
	t.Logf("lives: %s", tr.sup.summary())
	t.Logf("deaths by point %v; %d executions (%d batches), %d effects, %d remote claims; "+
		"answers lost after a commit, by lives that lost them: %d submits, %d batches, %d completes; "+
		"%d http attempts did not succeed (%d held)",
		deaths, len(byKey), len(tr.batches), effects, tr.remoteClaims,
		sum(lostSingles), sum(lostBatches), sum(lostCompletes), failedAttempts, heldFailedAttempts)
}
