package remote

import (
	"context"
	"net/http"
	"time"
)

// The calls of the admin key on tenants and their keys (docs/api.md,
// "Authentication and tenants"); a tenant's own key may read its tenant.

// TenantSpec creates a tenant. A nil setting takes the server's default.
type TenantSpec struct {
	Name             string `json:"name"`
	MaxInflight      *int   `json:"max_inflight,omitempty"`
	DedupTTLSeconds  *int64 `json:"dedup_ttl_seconds,omitempty"`
	RetentionSeconds *int64 `json:"retention_seconds,omitempty"`
	MaxStoredBytes   *int64 `json:"max_stored_bytes,omitempty"`
	// EventRetentionSeconds keeps the tenant's events (default 86400).
	EventRetentionSeconds *int64 `json:"event_retention_seconds,omitempty"`
}

// TenantCreated is a new tenant with its first key, shown only here.
type TenantCreated struct {
	rawJSON
	Name             string `json:"name"`
	KeyID            string `json:"key_id"`
	APIKey           string `json:"api_key"`
	MaxInflight      int    `json:"max_inflight"`
	DedupTTLSeconds  int64  `json:"dedup_ttl_seconds"`
	RetentionSeconds int64  `json:"retention_seconds"`
	MaxStoredBytes   int64  `json:"max_stored_bytes"`
	// EventRetentionSeconds keeps the tenant's events.
	EventRetentionSeconds int64 `json:"event_retention_seconds"`
}

// Tenant is a tenant's settings and use.
type Tenant struct {
	rawJSON
	Name             string `json:"name"`
	MaxInflight      int    `json:"max_inflight"`
	Inflight         int    `json:"inflight"`
	DedupTTLSeconds  int64  `json:"dedup_ttl_seconds"`
	RetentionSeconds int64  `json:"retention_seconds"`
	Disabled         bool   `json:"disabled"`
	MaxStoredBytes   int64  `json:"max_stored_bytes"`
	StoredBytes      int64  `json:"stored_bytes"`
	// EventRetentionSeconds keeps the tenant's events.
	EventRetentionSeconds int64 `json:"event_retention_seconds"`
}

// TenantPatch changes the settings given (nil: unchanged).
type TenantPatch struct {
	Name             string `json:"name,omitempty"` // must equal the tenant's, if given
	MaxInflight      *int   `json:"max_inflight,omitempty"`
	DedupTTLSeconds  *int64 `json:"dedup_ttl_seconds,omitempty"`
	RetentionSeconds *int64 `json:"retention_seconds,omitempty"`
	Disabled         *bool  `json:"disabled,omitempty"`
	MaxStoredBytes   *int64 `json:"max_stored_bytes,omitempty"`
	// EventRetentionSeconds applies to events published from then on.
	EventRetentionSeconds *int64 `json:"event_retention_seconds,omitempty"`
}

// APIKey is a new key, shown only once.
type APIKey struct {
	rawJSON
	KeyID  string `json:"key_id"`
	APIKey string `json:"api_key"`
}

// APIKeyInfo describes a key, never the key itself.
type APIKeyInfo struct {
	KeyID      string     `json:"key_id"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
}

// APIKeyList is a tenant's keys.
type APIKeyList struct {
	rawJSON
	Items []APIKeyInfo `json:"items"`
}

// CreateTenant creates a tenant and its first key. It is sent once (but
// for a refusal with Retry-After or a failed connect); a repeat of one that
// was done is ErrTenantExists.
func (c *Client) CreateTenant(ctx context.Context, spec TenantSpec) (*TenantCreated, error) {
	var t TenantCreated
	if _, err := c.Call(ctx, Request{Method: http.MethodPost, Path: "/api/tenants", Body: spec}, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// GetTenant reads a tenant.
func (c *Client) GetTenant(ctx context.Context, name string) (*Tenant, error) {
	return c.tenantCall(ctx, http.MethodGet, name, nil)
}

// UpdateTenant changes a tenant's settings.
func (c *Client) UpdateTenant(ctx context.Context, name string, patch TenantPatch) (*Tenant, error) {
	return c.tenantCall(ctx, http.MethodPatch, name, patch)
}

func (c *Client) tenantCall(ctx context.Context, method, name string, body any) (*Tenant, error) {
	var t Tenant
	if _, err := c.Call(ctx, Request{Method: method, Path: "/api/tenants/" + seg(name), Body: body, Idempotent: true}, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// DeleteTenant deletes a tenant with its keys, schedules, rate limits and
// executions: ErrNotTerminal while it has work in flight, unless Force.
func (c *Client) DeleteTenant(ctx context.Context, name string, opts DeleteOptions) error {
	_, err := c.Call(ctx, Request{Method: http.MethodDelete, Path: "/api/tenants/" + seg(name), Query: opts.query()}, nil)
	return err
}

// AddKey makes a further key for a tenant; its other keys keep working.
func (c *Client) AddKey(ctx context.Context, tenant string) (*APIKey, error) {
	var k APIKey
	if _, err := c.Call(ctx, Request{Method: http.MethodPost, Path: "/api/tenants/" + seg(tenant) + "/keys"}, &k); err != nil {
		return nil, err
	}
	return &k, nil
}

// Keys lists a tenant's keys.
func (c *Client) Keys(ctx context.Context, tenant string) (*APIKeyList, error) {
	var l APIKeyList
	if _, err := c.Call(ctx, Request{Method: http.MethodGet, Path: "/api/tenants/" + seg(tenant) + "/keys", Idempotent: true}, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// DeleteKey revokes a tenant's key on every server.
func (c *Client) DeleteKey(ctx context.Context, tenant, keyID string) error {
	_, err := c.Call(ctx, Request{Method: http.MethodDelete, Path: "/api/tenants/" + seg(tenant) + "/keys/" + seg(keyID)}, nil)
	return err
}
