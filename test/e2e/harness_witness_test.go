package e2e

import (
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// witness is an HTTP receiver outside latch that counts the effects of
// `http` jobs, keyed by the path they call.
type witness struct {
	mu   sync.Mutex
	hits map[string]int
	srv  *http.Server
	url  string
}

func newWitness(t *testing.T) *witness {
	t.Helper()
	return newDelayedWitness(t, 0)
}

func (w *witness) count(path string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.hits[path]
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
		if d > 0 {
			time.Sleep(d)
		}
		rw.WriteHeader(http.StatusNoContent)
	})}
	go w.srv.Serve(l)
	t.Cleanup(func() { w.srv.Close() })
	return w
}

// attemptWitness is an HTTP receiver outside latch that records, per
// path /hit/{key}, the execution id and attempt of each call; it answers
// after a delay, so that executions are running when a fault comes.
type attemptWitness struct {
	mu   sync.Mutex
	hits map[string][]witnessed // by key
	url  string
}

type witnessed struct {
	id      string
	attempt int
}

func newAttemptWitness(t *testing.T, delay time.Duration) *attemptWitness {
	t.Helper()
	w := &attemptWitness{hits: map[string][]witnessed{}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w.url = "http://" + l.Addr().String()
	srv := &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		attempt, _ := strconv.Atoi(r.Header.Get("Latch-Attempt"))
		w.mu.Lock()
		k := strings.TrimPrefix(r.URL.Path, "/hit/")
		w.hits[k] = append(w.hits[k], witnessed{r.Header.Get("Latch-Execution-Id"), attempt})
		w.mu.Unlock()
		time.Sleep(delay)
		rw.WriteHeader(http.StatusNoContent)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return w
}

func (w *attemptWitness) calls(key string) []witnessed {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]witnessed(nil), w.hits[key]...)
}

func (w *attemptWitness) total() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, h := range w.hits {
		n += len(h)
	}
	return n
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

// gauge is an HTTP target outside latch that measures what the limits
// promise: per path prefix (the first path segment), how many requests are
// in flight at once (the most ever), and when each arrived. A request
// is held for the duration named by its "hold" query parameter, and ends
// early when its caller goes away (a SIGKILLed server's request is over
// for the target too).
type gauge struct {
	mu       sync.Mutex
	inflight map[string]int
	most     map[string]int
	arrivals map[string][]time.Time
	url      string
}

func newGauge(t *testing.T) *gauge {
	t.Helper()
	g := &gauge{inflight: map[string]int{}, most: map[string]int{}, arrivals: map[string][]time.Time{}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g.url = "http://" + l.Addr().String()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 2)[0]
		hold, _ := time.ParseDuration(r.URL.Query().Get("hold"))
		g.mu.Lock()
		g.inflight[key]++
		g.most[key] = max(g.most[key], g.inflight[key])
		g.arrivals[key] = append(g.arrivals[key], time.Now())
		g.mu.Unlock()
		select {
		case <-time.After(hold):
		case <-r.Context().Done():
		}
		g.mu.Lock()
		g.inflight[key]--
		g.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return g
}

// stats returns the most requests of key ever in flight together and the
// number that arrived.
func (g *gauge) stats(key string) (most, arrived int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.most[key], len(g.arrivals[key])
}
