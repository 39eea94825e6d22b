package remote_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/latch-run/latch/remote"
)

func TestSubmitGetListCancelDelete(t *testing.T) {
	ctx := context.Background()
	s := newServer(t)
	c := s.tenant(t, remote.TenantSpec{Name: "acme"})

	// A submit without a key gets the client's own: it is the dedup key.
	e := must(c.Submit(ctx, remote.SubmitRequest{Kind: "echo", Payload: map[string]int{"n": 1}, Queue: "q1", Priority: 3}))(t)
	if e.Status != remote.StatusQueued || e.Tenant != "acme" || e.Queue != "q1" || e.Priority != 3 ||
		e.Deduplicated == nil || *e.Deduplicated || e.DedupKey == nil || *e.DedupKey == "" {
		t.Fatalf("submit: %+v", e)
	}
	if string(e.Payload) != `{"n":1}` {
		t.Fatalf("payload %s", e.Payload)
	}
	var raw map[string]any
	if err := json.Unmarshal(e.JSON(), &raw); err != nil || raw["execution_id"] != e.ExecutionID {
		t.Fatalf("JSON() %s: %v", e.JSON(), err)
	}

	// Without retries, a submit without a key is sent without one.
	noKey := must(remote.New(s.url, tenantKey(t, s, "solo"), remote.WithRetry(remote.RetryPolicy{})).
		Submit(ctx, remote.SubmitRequest{Kind: "echo"}))(t)
	if noKey.DedupKey != nil {
		t.Fatalf("a submit without retries got dedup key %q", *noKey.DedupKey)
	}

	// A dedup key, and the Idempotency-Key header, answer the first.
	first := must(c.Submit(ctx, remote.SubmitRequest{Kind: "echo", DedupKey: "k1", RunAt: ptr(time.Now().Add(time.Hour))}))(t)
	if first.Status != remote.StatusScheduled {
		t.Fatalf("run_at an hour ahead: %s", first.Status)
	}
	again := must(c.Submit(ctx, remote.SubmitRequest{Kind: "echo", IdempotencyKey: "k1"}))(t)
	if again.ExecutionID != first.ExecutionID || !*again.Deduplicated || again.DedupHits != 1 {
		t.Fatalf("repeat: %+v", again)
	}
	_, err := c.Submit(ctx, remote.SubmitRequest{Kind: "other", DedupKey: "k1"})
	wantCode(t, err, remote.ErrDedupKeyReused, http.StatusUnprocessableEntity)

	got := must(c.Get(ctx, first.ExecutionID))(t)
	if got.ExecutionID != first.ExecutionID || got.Deduplicated != nil || got.Status != remote.StatusScheduled {
		t.Fatalf("get: %+v", got)
	}
	_, err = c.Get(ctx, "no-such-execution")
	wantCode(t, err, remote.ErrNotFound, http.StatusNotFound)

	// A long poll of an execution that does not end holds its wait.
	start := time.Now()
	held := must(c.GetWait(ctx, first.ExecutionID, time.Second))(t)
	if held.Status.Terminal() || time.Since(start) < 900*time.Millisecond {
		t.Fatalf("GetWait: %s after %s", held.Status, time.Since(start))
	}
	// Wait ends with the context, answering no execution.
	wctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	w, err := c.Wait(wctx, first.ExecutionID)
	var unfinished *remote.UnfinishedError
	if w != nil || !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, remote.ErrUnfinished) || !errors.As(err, &unfinished) {
		t.Fatalf("Wait past its context: %v, %v", w, err)
	}
	if unfinished.Execution == nil || unfinished.Execution.Status != remote.StatusScheduled {
		t.Fatalf("Wait past its context: the execution as last read: %+v", unfinished.Execution)
	}

	// Delete refuses what is in flight, unless forced.
	err = c.Delete(ctx, first.ExecutionID, remote.DeleteOptions{})
	wantCode(t, err, remote.ErrNotTerminal, http.StatusConflict)
	cancelled := must(c.Cancel(ctx, first.ExecutionID))(t)
	if cancelled.Status != remote.StatusCancelled {
		t.Fatalf("cancel: %s", cancelled.Status)
	}
	if w := must(c.Wait(ctx, first.ExecutionID))(t); w.Status != remote.StatusCancelled {
		t.Fatalf("Wait: %s", w.Status)
	}
	_, err = c.Retry(ctx, first.ExecutionID)
	wantCode(t, err, remote.ErrNotFailed, http.StatusConflict)
	if err := c.Delete(ctx, first.ExecutionID, remote.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, e.ExecutionID, remote.DeleteOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	_, err = c.Get(ctx, e.ExecutionID)
	wantCode(t, err, remote.ErrNotFound, http.StatusNotFound)

	// List pages through every match, newest first.
	var ids []string
	for i := range 5 {
		ids = append(ids, must(c.Submit(ctx, remote.SubmitRequest{Kind: "listed", Payload: i}))(t).ExecutionID)
	}
	var listed []string
	for e, err := range c.List(ctx, remote.ListOptions{Kind: "listed", Limit: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		listed = append(listed, e.ExecutionID)
	}
	if len(listed) != 5 || listed[0] != ids[4] || listed[4] != ids[0] {
		t.Fatalf("listed %v, submitted %v", listed, ids)
	}
	// IDPrefix: a whole id's prefix is that execution alone.
	byPrefix := must(c.ListPage(ctx, remote.ListOptions{IDPrefix: ids[2]}))(t)
	if len(byPrefix.Items) != 1 || byPrefix.Items[0].ExecutionID != ids[2] {
		t.Fatalf("IDPrefix %s: %d items", ids[2], len(byPrefix.Items))
	}
	_, err = c.ListPage(ctx, remote.ListOptions{IDPrefix: "0190abc"})
	wantCode(t, err, remote.ErrInvalidRequest, http.StatusBadRequest)
	page := must(c.ListPage(ctx, remote.ListOptions{Kind: "listed", Status: remote.StatusQueued, Limit: 2}))(t)
	if len(page.Items) != 2 || page.NextCursor == nil || len(page.JSON()) == 0 {
		t.Fatalf("page: %d items, cursor %v", len(page.Items), page.NextCursor)
	}
	// Breaking out of the loop stops the reads.
	for range c.List(ctx, remote.ListOptions{Limit: 1}) {
		break
	}
	for _, err := range c.List(ctx, remote.ListOptions{Cursor: "not-a-cursor"}) {
		wantCode(t, err, remote.ErrInvalidRequest, http.StatusBadRequest)
	}

	// Attempts and stream tickets.
	if a := must(c.Attempts(ctx, ids[0]))(t); len(a.Items) != 0 {
		t.Fatalf("attempts of a queued execution: %+v", a.Items)
	}
	tk := must(c.StreamTicket(ctx, ids[0]))(t)
	if tk.Ticket == "" || tk.ExpiresIn <= 0 {
		t.Fatalf("ticket %+v", tk)
	}
}

func TestSubmitBatch(t *testing.T) {
	ctx := context.Background()
	s := newServer(t)
	c := s.tenant(t, remote.TenantSpec{Name: "acme", MaxInflight: ptr(3)})
	items := must(c.SubmitBatch(ctx, []remote.SubmitRequest{
		{Kind: "echo", DedupKey: "a"},
		{Kind: "echo", DedupKey: "a"},
		{Kind: "echo", IdempotencyKey: "b"},
		{Kind: "other", DedupKey: "a"},
		{Kind: "echo"},
		{Kind: "echo"}, // past max_inflight 3
	}))(t)
	want := []int{201, 200, 201, 422, 201, 429}
	for i, it := range items {
		if it.Status != want[i] {
			t.Fatalf("item %d: status %d, want %d (%+v)", i, it.Status, want[i], it.Error)
		}
	}
	if items[0].Execution.ExecutionID != items[1].Execution.ExecutionID || items[0].Err() != nil {
		t.Fatal("one dedup key, two executions")
	}
	if k := items[2].Execution.DedupKey; k == nil || *k != "b" {
		t.Fatalf("an item's idempotency key is its dedup key: %v", k)
	}
	if k := items[4].Execution.DedupKey; k == nil || *k == "" {
		t.Fatal("an item without a key got none of the client's")
	}
	if !errors.Is(items[3].Err(), remote.ErrDedupKeyReused) {
		t.Fatalf("item 3: %v", items[3].Err())
	}
	e := wantCode(t, items[5].Err(), remote.ErrQuotaExceeded, http.StatusTooManyRequests)
	if e.RetryAfter <= 0 {
		t.Fatalf("a quota slot's RetryAfter: %v", e.RetryAfter)
	}
	_, err := c.SubmitBatch(ctx, nil)
	wantCode(t, err, remote.ErrInvalidRequest, http.StatusBadRequest)
}

// TestConcurrentSameKeySubmits: 64 submits with one dedup key at once, and
// 64 with one idempotency key, each get one execution.
func TestConcurrentSameKeySubmits(t *testing.T) {
	ctx := context.Background()
	s := newServer(t)
	c := s.tenant(t, remote.TenantSpec{Name: "acme"})
	for _, req := range []remote.SubmitRequest{
		{Kind: "charge", Payload: map[string]string{"order": "1"}, DedupKey: "order-1"},
		{Kind: "charge", Payload: map[string]string{"order": "2"}, IdempotencyKey: "order-2"},
	} {
		ids := make([]string, 64)
		errs := make([]error, 64)
		var wg sync.WaitGroup
		for i := range ids {
			wg.Go(func() {
				e, err := c.Submit(ctx, req)
				if err == nil {
					ids[i] = e.ExecutionID
				}
				errs[i] = err
			})
		}
		wg.Wait()
		for i := range ids {
			if errs[i] != nil {
				t.Fatalf("submit %d: %v", i, errs[i])
			}
			if ids[i] != ids[0] {
				t.Fatalf("submits of one key got %s and %s", ids[0], ids[i])
			}
		}
	}
	n := 0
	for _, err := range c.List(ctx, remote.ListOptions{Kind: "charge"}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 2 {
		t.Fatalf("%d executions, want 2", n)
	}
	if ten := must(c.GetTenant(ctx, "acme"))(t); ten.Inflight != 2 {
		t.Fatalf("inflight %d: quota taken more than once", ten.Inflight)
	}
}

func tenantKey(t *testing.T, s *server, name string) string {
	t.Helper()
	return must(s.admin.CreateTenant(context.Background(), remote.TenantSpec{Name: name}))(t).APIKey
}

func ptr[T any](v T) *T { return &v }
