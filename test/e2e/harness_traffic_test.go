package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"
)

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
