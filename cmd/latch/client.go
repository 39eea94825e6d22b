package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// apiClient is the CLI's HTTP client for a running latch server.
type apiClient struct {
	url    string
	key    string
	tenant string // Latch-Tenant, for the admin key
	http   *http.Client
}

// clientFlags registers the connection flags every client command shares.
func clientFlags(fs *pflag.FlagSet) *apiClient {
	c := &apiClient{http: &http.Client{Timeout: 90 * time.Second}}
	fs.StringVar(&c.url, "url", envOr("LATCH_URL", "http://127.0.0.1:8080"), "server URL (LATCH_URL)")
	// The key's default is read when used, not shown: -h must not print it.
	fs.StringVar(&c.key, "key", "", "API key (default: LATCH_KEY)")
	fs.StringVar(&c.tenant, "tenant", os.Getenv("LATCH_TENANT"), "tenant to act for, with the admin key (LATCH_TENANT)")
	return c
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// problemError is a problem+json answer.
type problemError struct {
	Status int    `json:"status"`
	Code   string `json:"code"`
	Title  string `json:"title"`
	Detail string `json:"detail"`
}

func (p *problemError) Error() string {
	msg := fmt.Sprintf("%d %s", p.Status, p.Code)
	if p.Detail != "" {
		msg += ": " + p.Detail
	} else if p.Title != "" {
		msg += ": " + p.Title
	}
	return msg
}

// do sends a request and decodes a JSON answer into out (when not nil). It
// returns the status code; 4xx/5xx answers become *problemError.
func (c *apiClient) do(ctx context.Context, method, path string, body any, hdr http.Header, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.url, "/")+path, rd)
	if err != nil {
		return 0, err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	key := c.key
	if key == "" {
		key = os.Getenv("LATCH_KEY")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if c.tenant != "" {
		req.Header.Set("Latch-Tenant", c.tenant)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode >= 400 {
		p := &problemError{Status: resp.StatusCode}
		if json.Unmarshal(data, p) != nil || p.Code == "" {
			p.Detail = strings.TrimSpace(string(data))
		}
		return resp.StatusCode, p
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("decode answer: %w", err)
		}
	}
	return resp.StatusCode, nil
}

// printJSON writes v indented.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
