package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/latch-run/latch"
)

// shop calls the order's outside services.
type shop struct {
	base      string
	execution string
}

var httpClient = &http.Client{Timeout: 10 * time.Second}

// call POSTs body to base+path with the step's idempotency key and
// returns the answer's JSON. A 4xx answer fails the execution for good; a
// 5xx or a network error is retried by latch with backoff.
func (s shop) call(ctx context.Context, step, path string, body any) (json.RawMessage, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, latch.Permanent(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.base+path, bytes.NewReader(raw))
	if err != nil {
		return nil, latch.Permanent(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", s.execution+"/"+step)
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	switch {
	case resp.StatusCode >= 500:
		return nil, fmt.Errorf("%s: %s", path, resp.Status)
	case resp.StatusCode >= 400:
		return nil, latch.Permanent(fmt.Errorf("%s: %s: %s", path, resp.Status, answer))
	}
	if !json.Valid(answer) {
		return nil, latch.Permanent(fmt.Errorf("%s: the answer is not JSON", path))
	}
	return answer, nil
}
