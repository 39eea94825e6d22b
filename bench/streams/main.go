// Command streams measures what open event streams cost the submits of
// other clients: it starts a `latch serve` binary on a fresh SQLite file
// (loopback only, no in-process workers, so every execution stays queued
// and its stream open), opens --streams event streams on as many
// executions, then times --submits one-at-a-time submits while they are
// open, --rounds times, and once more with no stream open as the
// reference. Build the binaries to compare and run it on each:
//
//	go build -o /tmp/latch-new ./cmd/latch
//	go run ./bench/streams --latch /tmp/latch-new
//	go run ./bench/streams --latch /path/to/latch-before
//
// Every loop is bounded, and the server is stopped at the end.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

const adminKey = "bench-admin-key"

func main() {
	bin := flag.String("latch", "", "the latch binary to run (required)")
	streams := flag.Int("streams", 1000, "event streams to hold open")
	submits := flag.Int("submits", 200, "submits timed per round, one at a time")
	rounds := flag.Int("rounds", 3, "rounds with the streams open")
	flag.Parse()
	if *bin == "" || *streams < 0 || *submits < 1 || *rounds < 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*bin, *streams, *submits, *rounds); err != nil {
		fmt.Fprintln(os.Stderr, "streams:", err)
		os.Exit(1)
	}
}

func run(bin string, streams, submits, rounds int) error {
	dir, err := os.MkdirTemp("", "latch-streams-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	srv := exec.CommandContext(ctx, bin, "serve", "--addr", addr, "--store", "sqlite:"+filepath.Join(dir, "latch.db"),
		"--workers", "0", "--console=false", "--log-level", "warn")
	// LATCH_MAX_STREAMS=0 lifts the per-tenant stream bound of servers that
	// have one; older ones ignore it.
	srv.Env = append(os.Environ(), "LATCH_ADMIN_KEY="+adminKey, "LATCH_MAX_STREAMS=0")
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		return err
	}
	defer func() { _ = srv.Process.Signal(os.Interrupt); _ = srv.Wait() }()

	c := &client{base: "http://" + addr, http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	if err := c.ready(30 * time.Second); err != nil {
		return err
	}
	var tenant struct {
		APIKey string `json:"api_key"`
	}
	if err := c.call("POST", "/api/tenants", adminKey, `{"name":"bench","max_inflight":1000000}`, &tenant); err != nil {
		return err
	}
	c.key = tenant.APIKey

	fmt.Printf("binary %s, %d submits per round, one at a time\n", bin, submits)
	base, err := c.timeSubmits(submits)
	if err != nil {
		return err
	}
	fmt.Printf("no stream open:     %s\n", base)

	ids := make([]string, 0, streams)
	for len(ids) < streams {
		n := min(streams-len(ids), 1000)
		var out struct {
			Items []struct {
				Execution struct {
					ID string `json:"execution_id"`
				} `json:"execution"`
			} `json:"items"`
		}
		items := strings.TrimSuffix(strings.Repeat(`{"kind":"echo"},`, n), ",")
		if err := c.call("POST", "/api/executions/batch", c.key, `{"items":[`+items+`]}`, &out); err != nil {
			return err
		}
		for _, it := range out.Items {
			ids = append(ids, it.Execution.ID)
		}
	}
	open, err := c.openStreams(ctx, ids)
	if err != nil {
		return err
	}
	defer open.close()

	var totals []time.Duration
	for r := 1; r <= rounds; r++ {
		res, err := c.timeSubmits(submits)
		if err != nil {
			return err
		}
		totals = append(totals, res.total)
		fmt.Printf("%d streams, round %d: %s\n", streams, r, res)
		if n := open.alive(); n != len(ids) {
			return fmt.Errorf("%d of %d streams still open after round %d", n, len(ids), r)
		}
	}
	slices.Sort(totals)
	fmt.Printf("%d streams: median %s for %d submits (range %s-%s over %d rounds); no stream: %s\n",
		streams, totals[len(totals)/2].Round(time.Millisecond), submits,
		totals[0].Round(time.Millisecond), totals[len(totals)-1].Round(time.Millisecond), rounds,
		base.total.Round(time.Millisecond))
	return nil
}

type client struct {
	base, key string
	http      *http.Client
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// ready waits, boundedly, for the server to answer /healthz.
func (c *client) ready(within time.Duration) error {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if res, err := c.http.Get(c.base + "/healthz"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("the server did not answer within %s", within)
}

func (c *client) call(method, path, key, body string, out any) error {
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, bytes.TrimSpace(data))
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

type timing struct {
	total, p50, p99 time.Duration
}

func (t timing) String() string {
	return fmt.Sprintf("%s in all (p50 %s, p99 %s)", t.total.Round(time.Millisecond),
		t.p50.Round(10*time.Microsecond), t.p99.Round(10*time.Microsecond))
}

// timeSubmits submits n executions one after the other.
func (c *client) timeSubmits(n int) (timing, error) {
	lat := make([]time.Duration, 0, n)
	start := time.Now()
	for range n {
		t := time.Now()
		if err := c.call("POST", "/api/executions", c.key, `{"kind":"echo"}`, nil); err != nil {
			return timing{}, err
		}
		lat = append(lat, time.Since(t))
	}
	total := time.Since(start)
	slices.Sort(lat)
	return timing{total: total, p50: lat[len(lat)/2], p99: lat[len(lat)*99/100]}, nil
}

// openSet is the streams held open.
type openSet struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	n      int
}

func (o *openSet) alive() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.n
}

func (o *openSet) close() {
	o.cancel()
	o.wg.Wait()
}

// openStreams opens one stream per id and returns once each has sent its
// first event; each is then read (and discarded) until it ends.
func (c *client) openStreams(ctx context.Context, ids []string) (*openSet, error) {
	ctx, cancel := context.WithCancel(ctx)
	o := &openSet{cancel: cancel}
	first := make(chan error, len(ids))
	// A transport of their own, so the submits' idle pool stays small.
	tr := &http.Transport{}
	for _, id := range ids {
		o.wg.Go(func() {
			req, err := http.NewRequestWithContext(ctx, "GET", c.base+"/api/executions/"+id+"/events", nil)
			if err != nil {
				first <- err
				return
			}
			req.Header.Set("Authorization", "Bearer "+c.key)
			res, err := tr.RoundTrip(req)
			if err != nil {
				first <- err
				return
			}
			defer res.Body.Close()
			if res.StatusCode != http.StatusOK {
				first <- fmt.Errorf("stream %s: %d", id, res.StatusCode)
				return
			}
			sc := bufio.NewScanner(res.Body)
			got := false
			for sc.Scan() {
				if !got && strings.HasPrefix(sc.Text(), "data: ") {
					got = true
					o.mu.Lock()
					o.n++
					o.mu.Unlock()
					first <- nil
				}
			}
			if got {
				o.mu.Lock()
				o.n--
				o.mu.Unlock()
			} else {
				first <- errors.New("stream ended before its first event")
			}
		})
	}
	timeout := time.After(2 * time.Minute)
	for range ids {
		select {
		case err := <-first:
			if err != nil {
				o.close()
				return nil, err
			}
		case <-timeout:
			o.close()
			return nil, errors.New("streams not all open within 2 minutes")
		}
	}
	return o, nil
}
