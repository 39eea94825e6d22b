package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/latch-run/latch/store"
)

// tenantSettings are the settable fields of a tenant.
type tenantSettings struct {
	MaxInflight      *int64 `json:"max_inflight"`
	DedupTTLSeconds  *int64 `json:"dedup_ttl_seconds"`
	RetentionSeconds *int64 `json:"retention_seconds"`
	MaxStoredBytes   *int64 `json:"max_stored_bytes"`
	// EventRetentionSeconds keeps the tenant's events (default 86400).
	EventRetentionSeconds *int64 `json:"event_retention_seconds"`
}

func (t *tenantSettings) validate() error {
	if err := optRange("max_stored_bytes", t.MaxStoredBytes, 1, store.MaxStoredBytesLimit); err != nil {
		return err
	}
	if err := optRange("max_inflight", t.MaxInflight, 1, maxInflight); err != nil {
		return err
	}
	if err := optRange("dedup_ttl_seconds", t.DedupTTLSeconds, 1, maxDuration); err != nil {
		return err
	}
	if err := optRange("event_retention_seconds", t.EventRetentionSeconds, 1, maxDuration); err != nil {
		return err
	}
	return optRange("retention_seconds", t.RetentionSeconds, 1, maxDuration)
}

// createTenantRequest is the body of POST /api/tenants.
type createTenantRequest struct {
	Name *string `json:"name"`
	tenantSettings
}

func (r *createTenantRequest) validate() error {
	if r.Name == nil {
		return invalid("name", "required")
	}
	if err := checkTenantName("name", *r.Name); err != nil {
		return err
	}
	return r.tenantSettings.validate()
}

// createdTenant is the answer of POST /api/tenants: the only time the
// tenant's first key is shown.
type createdTenant struct {
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

func (*createdTenant) statusCode() int { return http.StatusCreated }

// createTenant is POST /api/tenants (admin).
func (s *Server) createTenant(ctx context.Context, req *createTenantRequest) (*createdTenant, error) {
	if err := principalFrom(ctx).requireAdmin(); err != nil {
		return nil, err
	}
	key, keyID := NewKey(), store.NewKeyID()
	t, err := s.cfg.Store.CreateTenant(ctx, &store.CreateTenantParams{
		Name:           *req.Name,
		MaxInflight:    int(orDefault(req.MaxInflight, store.DefaultMaxInflight)),
		DedupTTL:       seconds(req.DedupTTLSeconds, store.DefaultDedupTTL),
		Retention:      seconds(req.RetentionSeconds, store.DefaultRetention),
		MaxStoredBytes: orDefault(req.MaxStoredBytes, store.DefaultMaxStoredBytes),
		EventRetention: seconds(req.EventRetentionSeconds, store.DefaultEventRetention),
		KeyHash:        HashKey(key),
		KeyID:          keyID,
		Now:            s.cfg.Now(),
	})
	if errors.Is(err, store.ErrTenantExists) {
		return nil, problem(CodeTenantExists, "tenant %q exists", *req.Name)
	}
	if err != nil {
		return nil, err
	}
	v := toTenant(t)
	return &createdTenant{
		Name:             v.Name,
		KeyID:            keyID,
		APIKey:           key,
		MaxInflight:      v.MaxInflight,
		DedupTTLSeconds:  v.DedupTTLSeconds,
		RetentionSeconds: v.RetentionSeconds,
		MaxStoredBytes:   v.MaxStoredBytes,

		EventRetentionSeconds: v.EventRetentionSeconds,
	}, nil
}

// tenantName names a tenant by its path value.
type tenantName struct {
	name string
}

func (r *tenantName) bind(hr *http.Request) error {
	if _, err := query(hr); err != nil {
		return err
	}
	r.name = hr.PathValue("name")
	if checkTenantName("name", r.name) != nil {
		return problem(CodeNotFound, "tenant %q not found", r.name)
	}
	return nil
}

// getTenant is GET /api/tenants/{name}: the admin reads any tenant, a tenant
// key its own (another tenant is not found).
func (s *Server) getTenant(ctx context.Context, req *tenantName) (*tenant, error) {
	if p := principalFrom(ctx); !p.admin && p.tenant != req.name {
		return nil, problem(CodeNotFound, "tenant %q not found", req.name)
	}
	t, err := s.cfg.Store.GetTenant(ctx, &store.GetTenantParams{Name: req.name})
	if err != nil {
		return nil, tenantErr(err, req.name)
	}
	return toTenant(t), nil
}

// patchTenantRequest is the body of PATCH /api/tenants/{name}. A GET answer
// may be edited and sent back as it is: "name" is accepted but must equal
// the path's, and "inflight", which is read-only (it counts executions and
// changes on its own), is accepted as an integer and ignored. "disabled"
// disables or enables the tenant.
type patchTenantRequest struct {
	tenantName
	Name *string `json:"name"`
	tenantSettings
	Disabled *bool  `json:"disabled"`
	Inflight *int64 `json:"inflight"` // read-only: checked for type, then ignored
	// StoredBytes is read-only like inflight.
	StoredBytes *int64 `json:"stored_bytes"`
}

func (r *patchTenantRequest) validate() error {
	if r.Name != nil && *r.Name != r.name {
		return invalid("name", "a tenant cannot be renamed")
	}
	return r.tenantSettings.validate()
}

// patchTenant is PATCH /api/tenants/{name} (admin). Lowering max_inflight
// below the current inflight is allowed: admission stops until it drains.
func (s *Server) patchTenant(ctx context.Context, req *patchTenantRequest) (*tenant, error) {
	if err := principalFrom(ctx).requireAdmin(); err != nil {
		return nil, err
	}
	p := &store.UpdateTenantParams{Name: req.name, Disabled: req.Disabled}
	if req.MaxInflight != nil {
		n := int(*req.MaxInflight)
		p.MaxInflight = &n
	}
	if req.DedupTTLSeconds != nil {
		d := seconds(req.DedupTTLSeconds, 0)
		p.DedupTTL = &d
	}
	if req.RetentionSeconds != nil {
		d := seconds(req.RetentionSeconds, 0)
		p.Retention = &d
	}
	if req.EventRetentionSeconds != nil {
		d := seconds(req.EventRetentionSeconds, 0)
		p.EventRetention = &d
	}
	p.MaxStoredBytes = req.MaxStoredBytes
	t, err := s.cfg.Store.UpdateTenant(ctx, p)
	if err != nil {
		return nil, tenantErr(err, req.name)
	}
	return toTenant(t), nil
}

// deleteTenantRequest is DELETE /api/tenants/{name}?force=true.
type deleteTenantRequest struct {
	tenantName
	force bool
}

func (r *deleteTenantRequest) bind(hr *http.Request) error {
	var err error
	if r.force, err = forceParam(hr); err != nil {
		return err
	}
	r.name = hr.PathValue("name")
	if checkTenantName("name", r.name) != nil {
		return problem(CodeNotFound, "tenant %q not found", r.name)
	}
	return nil
}

// deleteTenant is DELETE /api/tenants/{name} (admin): the tenant and all it
// owns, in one store step. Refused while its executions are in flight
// unless force (which ends them: their workers' leases are lost).
func (s *Server) deleteTenant(ctx context.Context, req *deleteTenantRequest) (*noContent, error) {
	if err := principalFrom(ctx).requireAdmin(); err != nil {
		return nil, err
	}
	err := s.cfg.Store.DeleteTenant(ctx, &store.DeleteTenantParams{Name: req.name, Force: req.force, Now: s.cfg.Now()})
	if errors.Is(err, store.ErrNotTerminal) {
		return nil, problem(CodeNotTerminal, "tenant %q has executions in flight (queued, scheduled or running); "+
			"cancel them and wait, or delete with force=true", req.name)
	}
	if err != nil {
		return nil, tenantErr(err, req.name)
	}
	if s.cfg.OnScheduleChange != nil {
		s.cfg.OnScheduleChange() // its schedules are gone
	}
	return &noContent{}, nil
}

type createdKey struct {
	KeyID  string `json:"key_id"`
	APIKey string `json:"api_key"`
}

func (*createdKey) statusCode() int { return http.StatusCreated }

// addKey is POST /api/tenants/{name}/keys (admin): a further key for the
// tenant, shown once, and its public id. Earlier keys keep working.
func (s *Server) addKey(ctx context.Context, req *tenantName) (*createdKey, error) {
	if err := principalFrom(ctx).requireAdmin(); err != nil {
		return nil, err
	}
	key, keyID := NewKey(), store.NewKeyID()
	err := s.cfg.Store.AddAPIKey(ctx, &store.AddAPIKeyParams{Tenant: req.name, KeyHash: HashKey(key), KeyID: keyID,
		Now: s.cfg.Now()})
	if err != nil {
		return nil, tenantErr(err, req.name)
	}
	return &createdKey{KeyID: keyID, APIKey: key}, nil
}

// keyView is one key of GET /api/tenants/{name}/keys: never the key or its
// hash. LastUsedAt is recorded at most once a minute (TouchInterval).
type keyView struct {
	KeyID      string     `json:"key_id"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
}

type keyList struct {
	Items []keyView `json:"items"`
}

// listKeys is GET /api/tenants/{name}/keys (admin).
func (s *Server) listKeys(ctx context.Context, req *tenantName) (*keyList, error) {
	if err := principalFrom(ctx).requireAdmin(); err != nil {
		return nil, err
	}
	ks, err := s.cfg.Store.ListAPIKeys(ctx, &store.ListAPIKeysParams{Tenant: req.name})
	if err != nil {
		return nil, tenantErr(err, req.name)
	}
	out := &keyList{Items: make([]keyView, 0, len(ks))}
	for _, k := range ks {
		v := keyView{KeyID: k.KeyID, CreatedAt: k.CreatedAt.UTC()}
		if !k.LastUsedAt.IsZero() {
			t := k.LastUsedAt.UTC()
			v.LastUsedAt = &t
		}
		out.Items = append(out.Items, v)
	}
	return out, nil
}

// keyRequest names one key of a tenant by its id.
type keyRequest struct {
	tenantName
	keyID string
}

func (r *keyRequest) bind(hr *http.Request) error {
	if err := r.tenantName.bind(hr); err != nil {
		return err
	}
	r.keyID = hr.PathValue("key_id")
	return nil
}

// deleteKey is DELETE /api/tenants/{name}/keys/{key_id} (admin): the key
// answers 401 on every server from the next request on (the Authenticator
// reads every key from the store), and console sessions opened with it end.
func (s *Server) deleteKey(ctx context.Context, req *keyRequest) (*noContent, error) {
	if err := principalFrom(ctx).requireAdmin(); err != nil {
		return nil, err
	}
	err := s.cfg.Store.DeleteAPIKey(ctx, &store.DeleteAPIKeyParams{Tenant: req.name, KeyID: req.keyID})
	if errors.Is(err, store.ErrNotFound) {
		return nil, problem(CodeNotFound, "tenant %q has no key %q", req.name, req.keyID)
	}
	if err != nil {
		return nil, err
	}
	return &noContent{}, nil
}

func tenantErr(err error, name string) error {
	if errors.Is(err, store.ErrNotFound) {
		return problem(CodeNotFound, "tenant %q not found", name)
	}
	return err
}

func seconds(v *int64, def time.Duration) time.Duration {
	if v == nil {
		return def
	}
	return time.Duration(*v) * time.Second
}
