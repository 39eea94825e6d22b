package store

import (
	"fmt"
	"time"
)

// Defaults for tenants created without explicit settings (docs/api.md).
const (
	DefaultMaxInflight = 10000
	DefaultDedupTTL    = 7 * 24 * time.Hour
	DefaultRetention   = 7 * 24 * time.Hour
)

// Bounds of a tenant's name and settings. The HTTP API and the Go API
// check them first, with their own messages; the store refuses what
// breaks them (ErrInvalid) as a backstop.
const (
	MaxTenantNameLen = 64
	// MaxInflightLimit bounds max_inflight (and a concurrency limit).
	MaxInflightLimit = 1_000_000_000
	// MaxTenantDuration bounds a tenant's dedup TTL and retention.
	MaxTenantDuration = 10 * 365 * 24 * time.Hour
)

// ValidTenantName reports whether name is a tenant name: 1–64 characters
// of a-z, 0-9, '_' and '-'.
func ValidTenantName(name string) bool {
	if name == "" || len(name) > MaxTenantNameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// NewTenant is the tenant CreateTenant stores for p, created at now: zero
// settings take the package defaults. ErrInvalid for a name that is not
// ValidTenantName or a setting out of its bounds. Every backend's
// CreateTenant starts with it.
func (p *CreateTenantParams) NewTenant(now time.Time) (*Tenant, error) {
	if !ValidTenantName(p.Name) {
		return nil, fmt.Errorf("%w: tenant name %q is not 1-%d of a-z, 0-9, _ and -", ErrInvalid, p.Name, MaxTenantNameLen)
	}
	t := &Tenant{
		Name:        p.Name,
		MaxInflight: orDefault(p.MaxInflight, DefaultMaxInflight),
		DedupTTL:    orDefault(p.DedupTTL, DefaultDedupTTL),
		Retention:   orDefault(p.Retention, DefaultRetention),
		CreatedAt:   now,

		MaxStoredBytes: orDefault(p.MaxStoredBytes, DefaultMaxStoredBytes),
		EventRetention: orDefault(p.EventRetention, DefaultEventRetention),
	}
	if err := checkTenantSettings(&t.MaxInflight, &t.DedupTTL, &t.Retention); err != nil {
		return nil, err
	}
	if err := checkMaxStoredBytes(&t.MaxStoredBytes); err != nil {
		return nil, err
	}
	if err := checkEventRetention(&t.EventRetention); err != nil {
		return nil, err
	}
	return t, nil
}

// Validate refuses (ErrInvalid) a given setting out of its bounds. Every
// backend's UpdateTenant starts with it.
func (p *UpdateTenantParams) Validate() error {
	if err := checkTenantSettings(p.MaxInflight, p.DedupTTL, p.Retention); err != nil {
		return err
	}
	if err := checkEventRetention(p.EventRetention); err != nil {
		return err
	}
	return checkMaxStoredBytes(p.MaxStoredBytes)
}

// checkTenantSettings checks the given (non-nil) settings: max_inflight in
// 0..MaxInflightLimit, the durations in 0..MaxTenantDuration.
func checkTenantSettings(maxInflight *int, dedupTTL, retention *time.Duration) error {
	if maxInflight != nil && (*maxInflight < 0 || *maxInflight > MaxInflightLimit) {
		return fmt.Errorf("%w: max_inflight %d not in 0..%d", ErrInvalid, *maxInflight, MaxInflightLimit)
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
	}{{"dedup_ttl", dedupTTL}, {"retention", retention}} {
		if d.v != nil && (*d.v < 0 || *d.v > MaxTenantDuration) {
			return fmt.Errorf("%w: %s %v not in 0..%v", ErrInvalid, d.name, *d.v, MaxTenantDuration)
		}
	}
	return nil
}

// orDefault is v, or def when v is zero.
func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
