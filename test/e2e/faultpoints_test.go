package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latch-run/latch/internal/fault"
	"github.com/latch-run/latch/internal/testdb"
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
	fpScenario(t, "sqlite:"+testdb.SQLite(t), 2)
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
