package remote

import (
	"context"
	"encoding/json"
	"net/http"
)

// Health is the answer of /healthz ("ok") and /readyz ("ready").
type Health struct {
	Status string `json:"status"`
}

// Health answers when the server's process is up.
func (c *Client) Health(ctx context.Context) (*Health, error) {
	return c.health(ctx, "/healthz")
}

// Ready answers when the server's store answers; ErrUnavailable when not.
func (c *Client) Ready(ctx context.Context) (*Health, error) {
	return c.health(ctx, "/readyz")
}

func (c *Client) health(ctx context.Context, path string) (*Health, error) {
	var h Health
	if _, err := c.Call(ctx, Request{Method: http.MethodGet, Path: path, Idempotent: true}, &h); err != nil {
		return nil, err
	}
	return &h, nil
}

// OpenAPI reads the server's contract, its OpenAPI 3.1 document.
func (c *Client) OpenAPI(ctx context.Context) (json.RawMessage, error) {
	var doc json.RawMessage
	if _, err := c.Call(ctx, Request{Method: http.MethodGet, Path: "/api/openapi.json", Idempotent: true}, &doc); err != nil {
		return nil, err
	}
	return doc, nil
}
