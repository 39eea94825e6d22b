package api

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/sqlite"
)

// readCounter counts the store's reads of each execution.
type readCounter struct {
	*sqlite.Store
	mu    sync.Mutex
	reads map[string]int
}

func (c *readCounter) Get(ctx context.Context, p *store.GetParams) (*store.Execution, error) {
	c.mu.Lock()
	c.reads[p.ID]++
	c.mu.Unlock()
	return c.Store.Get(ctx, p)
}

// take returns the reads counted so far and starts again from none.
func (c *readCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.reads
	c.reads = map[string]int{}
	return out
}

// eventually waits, boundedly, for cond to hold: for state the server
// reaches after the client has seen its answer (a slot given back when a
// stream's connection closes).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// With many event streams open on different executions, a change of one
// has the store read that execution only: the streams of the others are
// not woken, and do not read. (Before, every change woke every stream and
// each read its execution again.)
func TestStreamsReadOnlyTheChangedExecution(t *testing.T) {
	var counter *readCounter
	e := newEnv(t, func(c *Config) {
		counter = &readCounter{Store: c.Store.(*sqlite.Store), reads: map[string]int{}}
		c.Store = counter
		c.PollInterval = time.Hour // every read below is a notification's
		c.MaxStreamsPerTenant = 1000
	})
	key := e.tenant("acme", `,"max_inflight":1000`)
	const n = 200
	ids := make([]string, n)
	streams := make([]<-chan sseEvent, n)
	for i := range n {
		ids[i] = e.submit(key, map[string]any{"kind": "echo"}, http.StatusCreated).ExecutionID
	}
	for i, id := range ids {
		_, streams[i] = e.openStream("/api/executions/"+id+"/events", key)
		if ev, _ := nextEvent(t, streams[i]); ev.name != "status" {
			t.Fatalf("first event %q", ev.name)
		}
	}
	counter.take()

	target := ids[n/2]
	e.do("POST", "/api/executions/"+target+"/cancel", key, nil).want(http.StatusOK)
	if _, x := nextEvent(t, streams[n/2]); x.Status != "cancelled" {
		t.Fatalf("the cancelled execution's stream says %s", x.Status)
	}
	reads := counter.take()
	delete(reads, target)
	if len(reads) != 0 {
		t.Fatalf("a change of one execution read %d others: %v", len(reads), reads)
	}
}

// Event streams are capped per tenant: one more is 429 too_many_requests
// with Retry-After, another tenant is not affected, and a stream that ends
// frees its slot.
func TestStreamCap(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxStreamsPerTenant = 2 })
	acme := e.tenant("acme")
	other := e.tenant("other")
	id := e.submit(acme, map[string]any{"kind": "echo"}, http.StatusCreated).ExecutionID
	path := "/api/executions/" + id + "/events"
	first, ch1 := e.openStream(path, acme)
	nextEvent(t, ch1)
	_, ch2 := e.openStream(path, acme)
	nextEvent(t, ch2)

	r := e.do("GET", path, acme, nil)
	p := r.problem(http.StatusTooManyRequests, CodeTooManyRequests)
	detailHas(t, p, "event streams open on this server are at their bound (2)")
	if r.header.Get("Retry-After") == "" {
		t.Fatal("no Retry-After")
	}
	// Another tenant has its own slots (its request is refused as not
	// found, not as too many).
	e.do("GET", path, other, nil).problem(http.StatusNotFound, CodeNotFound)

	first.Body.Close()
	eventually(t, "the closed stream's slot given back", func() bool { return e.api.streams.held("acme") == 1 })
	_, ch3 := e.openStream(path, acme)
	nextEvent(t, ch3)
}

// Long polls (GET with wait_seconds, claims with wait_seconds) are capped
// per tenant; a GET without a wait is not a long poll.
func TestLongPollCap(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxLongPollsPerTenant = 1 })
	acme := e.tenant("acme")
	id := e.submit(acme, map[string]any{"kind": "echo"}, http.StatusCreated).ExecutionID

	ctx, cancel := context.WithCancel(t.Context())
	held := make(chan struct{})
	go func() {
		defer close(held)
		req, _ := http.NewRequestWithContext(ctx, "GET", e.srv.URL+"/api/executions/"+id+"?wait_seconds=60", nil)
		req.Header.Set("Authorization", "Bearer "+acme)
		if res, err := e.srv.Client().Do(req); err == nil {
			res.Body.Close()
		}
	}()
	eventually(t, "the long poll holding its slot", func() bool { return e.api.polls.held("acme") == 1 })

	r := e.do("GET", "/api/executions/"+id+"?wait_seconds=5", acme, nil)
	detailHas(t, r.problem(http.StatusTooManyRequests, CodeTooManyRequests), "long polls")
	if r.header.Get("Retry-After") == "" {
		t.Fatal("no Retry-After")
	}
	e.do("POST", "/api/workers/claim", acme, `{"worker_id":"w","wait_seconds":5,"queues":["none"]}`).
		problem(http.StatusTooManyRequests, CodeTooManyRequests)
	e.do("GET", "/api/executions/"+id, acme, nil).want(http.StatusOK)

	cancel()
	<-held
	eventually(t, "the ended poll's slot given back", func() bool { return e.api.polls.held("acme") == 0 })
	e.do("GET", "/api/executions/"+id+"?wait_seconds=0", acme, nil).want(http.StatusOK)
	e.do("POST", "/api/workers/claim", acme, `{"worker_id":"w","wait_seconds":1,"queues":["none"]}`).want(http.StatusOK)
}

// The body budget never hands out more than its size, however many take
// from it at once, and gives back all it handed out.
func TestBodyBudgetAccounting(t *testing.T) {
	const size = 1 << 20
	b := newBodyBudget(size)
	var mu sync.Mutex
	peak := int64(0)
	var wg sync.WaitGroup
	refused := 0
	for i := range 40 {
		wg.Go(func() {
			r := &http.Request{ContentLength: int64(100<<10 + i*10<<10)} // 100-490 KiB
			release, err := b.acquire(t.Context(), r, 32<<20)
			if err != nil {
				mu.Lock()
				refused++
				mu.Unlock()
				return
			}
			mu.Lock()
			peak = max(peak, b.inUse.Load())
			mu.Unlock()
			time.Sleep(time.Millisecond) // hold it a little, as a read would
			release()
			release() // twice is once
		})
	}
	wg.Wait()
	if peak > size || peak == 0 {
		t.Fatalf("peak in use %d, budget %d", peak, size)
	}
	if got := b.inUse.Load(); got != 0 {
		t.Fatalf("%d bytes still taken after every release", got)
	}
	// Small bodies and bodies over their limit take nothing.
	rel, err := b.acquire(t.Context(), &http.Request{ContentLength: smallBody}, 32<<20)
	if err != nil || b.inUse.Load() != 0 {
		t.Fatalf("a small body took budget: %v, %d", err, b.inUse.Load())
	}
	rel()
	// A body of unknown length counts as its limit, cut to the budget.
	rel, err = b.acquire(t.Context(), &http.Request{ContentLength: -1}, 32<<20)
	if err != nil || b.inUse.Load() != size {
		t.Fatalf("a chunked body took %d (%v), want the whole budget", b.inUse.Load(), err)
	}
	if _, err := b.acquire(t.Context(), &http.Request{ContentLength: 200 << 10}, 32<<20); err == nil {
		t.Fatal("a body was let in over a full budget")
	}
	rel()
}

// Large batches beyond the budget are refused 503 with Retry-After while
// others are being read, and admitted once the budget frees.
func TestBodyBudgetOverHTTP(t *testing.T) {
	const budget = 1 << 20
	e := newEnv(t, func(c *Config) { c.MaxBodyBytesInFlight = budget })
	key := e.tenant("acme", `,"max_inflight":100000`)
	batch := bigBatch(700 << 10)

	// A slow client: its body of 700 KiB is declared but arrives slowly.
	pr, pw := io.Pipe()
	slow := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("POST", e.srv.URL+"/api/executions/batch", pr)
		req.ContentLength = int64(len(batch))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		res, err := e.srv.Client().Do(req)
		if err != nil {
			slow <- 0
			return
		}
		res.Body.Close()
		slow <- res.StatusCode
	}()
	if _, err := pw.Write(batch[:100]); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the slow batch holding its budget", func() bool { return e.api.bodies.inUse.Load() == int64(len(batch)) })

	var wg sync.WaitGroup
	statuses := make([]int, 3)
	retry := make([]string, 3)
	for i := range statuses {
		wg.Go(func() {
			r := e.do("POST", "/api/executions/batch", key, batch)
			statuses[i], retry[i] = r.status, r.header.Get("Retry-After")
		})
	}
	wg.Wait()
	for i, st := range statuses {
		if st != http.StatusServiceUnavailable || retry[i] == "" {
			t.Fatalf("batch %d beyond the budget answered %d (Retry-After %q), want 503 with Retry-After", i, st, retry[i])
		}
	}
	if _, err := pw.Write(batch[100:]); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if st := <-slow; st != http.StatusOK {
		t.Fatalf("the slow batch answered %d", st)
	}
	if got := e.api.bodies.inUse.Load(); got != 0 {
		t.Fatalf("%d bytes of budget still taken", got)
	}
	e.do("POST", "/api/executions/batch", key, batch).want(http.StatusOK)
}

// bigBatch is a valid batch body of about size bytes.
func bigBatch(size int) []byte {
	pad := strings.Repeat("x", 1000)
	var b strings.Builder
	b.WriteString(`{"items":[`)
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"kind":"echo","payload":{"pad":%s,"i":%d}}`, strconv.Quote(pad), i)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

// A tenant's schedules are capped: creating one more is 409
// schedule_limit, a replace at the cap is allowed, a delete makes room.
func TestScheduleCap(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MaxSchedulesPerTenant = 2 })
	key := e.tenant("acme")
	body := `{"every":"15m","kind":"echo"}`
	e.do("PUT", "/api/schedules/a", key, body).want(http.StatusCreated)
	e.do("PUT", "/api/schedules/b", key, body).want(http.StatusCreated)
	p := e.do("PUT", "/api/schedules/c", key, body).problem(http.StatusConflict, CodeScheduleLimit)
	detailHas(t, p, "bound of 2 schedules")
	e.do("GET", "/api/schedules/c", key, nil).problem(http.StatusNotFound, CodeNotFound)
	e.do("PUT", "/api/schedules/a", key, `{"every":"5m","kind":"echo"}`).want(http.StatusOK)
	e.do("DELETE", "/api/schedules/b", key, nil).want(http.StatusNoContent)
	e.do("PUT", "/api/schedules/c", key, body).want(http.StatusCreated)
}

// claimCounter counts the store's claims.
type claimCounter struct {
	*sqlite.Store
	mu     sync.Mutex
	claims int
}

func (c *claimCounter) Claim(ctx context.Context, p *store.ClaimParams) (*store.ClaimResult, error) {
	c.mu.Lock()
	c.claims++
	c.mu.Unlock()
	return c.Store.Claim(ctx, p)
}

func (c *claimCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.claims
}

func (c *claimCounter) take() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.claims
	c.claims = 0
	return n
}

// A submit wakes one of many waiting claims, not all of them. (Before,
// every change had every waiting claim run a claim.)
func TestSubmitWakesFewClaims(t *testing.T) {
	var counter *claimCounter
	e := newEnv(t, func(c *Config) {
		counter = &claimCounter{Store: c.Store.(*sqlite.Store)}
		c.Store = counter
		c.PollInterval = time.Hour // every claim below is a wake-up's
	})
	key := e.tenant("acme")
	const waiting = 50
	var wg sync.WaitGroup
	got := make(chan int, waiting)
	for range waiting {
		wg.Go(func() {
			var out claimResponse
			e.do("POST", "/api/workers/claim", key, `{"worker_id":"w","wait_seconds":30}`).want(http.StatusOK).decode(&out)
			got <- len(out.Leases)
		})
	}
	eventually(t, "every claim waiting", func() bool { return e.api.polls.held("acme") == waiting })
	eventually(t, "every claim's first try", func() bool { return counter.count() >= waiting }) // one each, as it came
	counter.take()

	e.submit(key, map[string]any{"kind": "echo"}, http.StatusCreated)
	select {
	case n := <-got:
		if n != 1 {
			t.Fatalf("the woken claim got %d leases", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no claim got the submitted execution within 10s")
	}
	if n := counter.take(); n > 2 {
		t.Fatalf("one submit had %d waiting claims run a claim; want the one woken (and the one it passes on to)", n)
	}
	e.api.Close() // the others answer now, empty
	wg.Wait()
}

// The operator's minimum schedule interval: a timing that ticks more often
// is 400 schedule_too_frequent and writes nothing, an every or a cron
// (seconds field included); one at the minimum is taken. Without the
// setting, every 1s stays allowed.
func TestMinScheduleInterval(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.MinScheduleInterval = time.Minute })
	key := e.tenant("acme")
	for _, body := range []string{
		`{"every":"30s","kind":"echo"}`,
		`{"every":"59s","kind":"echo"}`,
		`{"cron":"*/30 * * * * *","kind":"echo"}`,
		`{"cron":"0,1 * * * * *","kind":"echo"}`,
	} {
		p := e.do("PUT", "/api/schedules/fast", key, body).problem(http.StatusBadRequest, CodeScheduleTooFrequent)
		detailHas(t, p, "1m0s")
		e.do("GET", "/api/schedules/fast", key, nil).problem(http.StatusNotFound, CodeNotFound)
	}
	e.do("PUT", "/api/schedules/fast", key, `{"every":"1m","kind":"echo"}`).want(http.StatusCreated)
	e.do("PUT", "/api/schedules/fast", key, `{"cron":"* * * * *","kind":"echo"}`).want(http.StatusOK)
	e.do("PUT", "/api/schedules/fast", key, `{"cron":"0 * * * * *","kind":"echo"}`).want(http.StatusOK)
	// A replace is checked too: an existing schedule cannot be made faster.
	e.do("PUT", "/api/schedules/fast", key, `{"every":"1s","kind":"echo"}`).problem(http.StatusBadRequest, CodeScheduleTooFrequent)

	d := newEnv(t)
	dkey := d.tenant("acme")
	d.do("PUT", "/api/schedules/fast", dkey, `{"every":"1s","kind":"echo"}`).want(http.StatusCreated)
	d.do("PUT", "/api/schedules/fast", dkey, `{"cron":"* * * * * *","kind":"echo"}`).want(http.StatusOK)
}
