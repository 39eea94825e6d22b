package api

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// sseEvent is one parsed server-sent event.
type sseEvent struct {
	name, id, data string
}

// openStream opens an event stream and returns a channel of its events,
// closed when the stream ends. key "" sends no Authorization header.
func (e *testEnv) openStream(path, key string) (*http.Response, <-chan sseEvent) {
	e.t.Helper()
	req, _ := http.NewRequest("GET", e.srv.URL+path, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { res.Body.Close() })
	ch := make(chan sseEvent, 16)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(res.Body)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.name != "" {
					ch <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "id: "):
				ev.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "data: "):
				ev.data = strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	return res, ch
}

func nextEvent(t *testing.T, ch <-chan sseEvent) (sseEvent, *execution) {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("stream ended early")
		}
		var x execution
		if ev.name == "status" {
			if err := json.Unmarshal([]byte(ev.data), &x); err != nil {
				t.Fatalf("event data %q: %v", ev.data, err)
			}
		}
		return ev, &x
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
	}
	panic("unreachable")
}

func streamEnds(t *testing.T, ch <-chan sseEvent) {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if ok {
			t.Fatalf("event after the terminal one: %+v", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("stream did not end after the terminal event")
	}
}

func TestEventsUntilTerminal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.tenant("acme")
	x := e.submit(key, `{"kind":"echo"}`, http.StatusCreated)
	res, ch := e.openStream("/api/executions/"+x.ExecutionID+"/events", key)
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream answer %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	ev, got := nextEvent(t, ch)
	if ev.name != "status" || ev.id != "1" || got.Status != store.StatusQueued || got.ExecutionID != x.ExecutionID {
		t.Fatalf("first event %+v", ev)
	}
	l := e.claimOne(key)
	if _, got = nextEvent(t, ch); got.Status != store.StatusRunning {
		t.Fatalf("second event %s", got.Status)
	}
	e.do("POST", "/api/executions/"+l.ExecutionID+"/complete", key, `{"lease_token":"`+l.LeaseToken+`"}`).want(http.StatusOK)
	if _, got = nextEvent(t, ch); got.Status != store.StatusSucceeded {
		t.Fatalf("third event %s", got.Status)
	}
	streamEnds(t, ch)

	// A terminal execution: one event, then the end.
	_, ch = e.openStream("/api/executions/"+x.ExecutionID+"/events", key)
	if _, got = nextEvent(t, ch); got.Status != store.StatusSucceeded {
		t.Fatalf("terminal stream: %s", got.Status)
	}
	streamEnds(t, ch)
}

func TestEventsDeleted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.tenant("acme")
	x := e.submit(key, `{"kind":"echo"}`, http.StatusCreated)
	_, ch := e.openStream("/api/executions/"+x.ExecutionID+"/events", key)
	nextEvent(t, ch)
	e.do("DELETE", "/api/executions/"+x.ExecutionID+"?force=true", key, nil).want(http.StatusNoContent)
	ev, _ := nextEvent(t, ch)
	var p Problem
	if ev.name != "error" || json.Unmarshal([]byte(ev.data), &p) != nil || p.Code != CodeNotFound {
		t.Fatalf("after delete: %+v", ev)
	}
	streamEnds(t, ch)
}

// HEAD on the stream of an execution in flight answers at once: its body
// is discarded, so a stream behind it could never notice a gone client.
func TestEventsHead(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.tenant("acme")
	x := e.submit(key, `{"kind":"echo"}`, http.StatusCreated)
	req, _ := http.NewRequest("HEAD", e.srv.URL+"/api/executions/"+x.ExecutionID+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	client := &http.Client{Timeout: 10 * time.Second}
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("HEAD events: %v", err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("HEAD events: %d %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	// The connection is free again: the next request on it is answered.
	res, err = client.Get(e.srv.URL + "/healthz")
	if err != nil {
		t.Fatalf("the request after HEAD: %v", err)
	}
	res.Body.Close()
}

func TestEventsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.tenant("acme")
	e.do("GET", "/api/executions/nope/events", key, nil).problem(http.StatusNotFound, CodeNotFound)
	x := e.submit(key, `{"kind":"echo"}`, http.StatusCreated)
	e.do("GET", "/api/executions/"+x.ExecutionID+"/events?x=1", key, nil).problem(http.StatusBadRequest, CodeInvalidRequest)
	e.do("GET", "/api/executions/"+x.ExecutionID+"/events", "", nil).problem(http.StatusUnauthorized, CodeUnauthorized)
}

// A client that stops reading loses its stream once a write has been
// blocked for StreamWriteTimeout: the handler does not wait for it until
// the server closes hard.
func TestEventsStalledReaderIsDropped(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *Config) { c.StreamWriteTimeout = 200 * time.Millisecond })
	key := e.tenant("acme")
	x := e.submit(key, `{"kind":"echo","payload":"`+strings.Repeat("x", 900<<10)+`"}`, http.StatusCreated)

	// A server whose sockets buffer little, so the first event (~900 KiB)
	// blocks on a client that reads nothing.
	srv := httptest.NewUnstartedServer(e.api)
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if tc, ok := c.(*net.TCPConn); ok && s == http.StateNew {
			_ = tc.SetWriteBuffer(4 << 10)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.(*net.TCPConn).SetReadBuffer(4 << 10)
	fmt.Fprintf(conn, "GET /api/executions/%s/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", x.ExecutionID, key)

	// The handler has returned when the request is counted.
	route := `latch_http_requests_total{code="200",route="GET /api/executions/{id}/events"} 1`
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(string(e.do("GET", "/metrics", "", nil).body), route) {
		if time.Now().After(deadline) {
			t.Fatal("the stream of a client that reads nothing was still open after 10s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
