package remote_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/latch-run/latch/api"
	"github.com/latch-run/latch/remote"
)

// TestErrorCodesFromServer has a real server answer the codes the other
// tests do not meet, and checks each is its sentinel. The flow bounds that
// take thousands of calls (too_many_steps, journal_too_large) and internal
// are matched by TestErrorIsMatchesOneSentinel.
func TestErrorCodesFromServer(t *testing.T) {
	ctx := context.Background()
	s := newServer(t, func(c *api.Config) { c.MaxLongPollsPerTenant = 1 })
	key := tenantKey(t, s, "acme")
	c := remote.New(s.url, key, remote.WithRetry(remote.RetryPolicy{}))
	e := must(c.Submit(ctx, remote.SubmitRequest{Kind: "echo"}))(t)

	_, err := c.Call(ctx, remote.Request{Method: http.MethodPut, Path: "/api/executions"}, nil)
	wantCode(t, err, remote.ErrMethodNotAllowed, http.StatusMethodNotAllowed)

	_, err = c.Submit(ctx, remote.SubmitRequest{Kind: "echo", Payload: strings.Repeat("x", 2<<20)})
	wantCode(t, err, remote.ErrPayloadTooLarge, http.StatusRequestEntityTooLarge)

	_, err = c.Call(ctx, remote.Request{Method: http.MethodGet, Path: "/api/executions",
		Header: http.Header{"X-Big": {strings.Repeat("x", 70<<10)}}}, nil)
	wantCode(t, err, remote.ErrHeadersTooLarge, http.StatusRequestHeaderFieldsTooLarge)

	_, err = c.Call(ctx, remote.Request{Method: http.MethodPost, Path: "/api/executions",
		Header: http.Header{"Content-Type": {"text/plain"}}, Body: map[string]string{"kind": "echo"}}, nil)
	wantCode(t, err, remote.ErrUnsupportedMediaType, http.StatusUnsupportedMediaType)

	_, err = remote.New(s.url, "").Call(ctx, remote.Request{Method: http.MethodGet,
		Path: "/api/executions/" + e.ExecutionID + "/events", Query: map[string][]string{"ticket": {"bogus"}}}, nil)
	wantCode(t, err, remote.ErrInvalidTicket, http.StatusUnauthorized)

	// The tenant's one long poll held, a second is refused.
	held := make(chan error, 1)
	go func() {
		_, err := c.GetWait(ctx, e.ExecutionID, 2*time.Second)
		held <- err
	}()
	time.Sleep(500 * time.Millisecond)
	_, err = c.Claim(ctx, remote.ClaimRequest{WorkerID: "w", Kinds: []string{"none"}, WaitSeconds: 1})
	if re := wantCode(t, err, remote.ErrTooManyRequests, http.StatusTooManyRequests); re.RetryAfter <= 0 {
		t.Fatalf("no Retry-After: %+v", re)
	}
	if err := <-held; err != nil {
		t.Fatal(err)
	}

	// A flow's kept signals at their bound.
	f := must(c.Submit(ctx, remote.SubmitRequest{Kind: "flow"}))(t)
	for i := range 1000 {
		if _, err := c.Signal(ctx, f.ExecutionID, "s", i, remote.SignalOptions{}); err != nil {
			t.Fatalf("signal %d: %v", i, err)
		}
	}
	_, err = c.Signal(ctx, f.ExecutionID, "s", nil, remote.SignalOptions{})
	wantCode(t, err, remote.ErrSignalBufferFull, http.StatusConflict)
}
