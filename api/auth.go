package api

import (
	"context"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/latch-run/latch/store"
)

// tenantHeader lets the admin act on one tenant's resources.
const tenantHeader = "Latch-Tenant"

// maxKeyLen bounds the bearer token read from a request.
const maxKeyLen = 512

// principal is who a request acts for.
type principal struct {
	admin bool
	// tenant is the key's tenant, or for the admin the tenant named by
	// Latch-Tenant ("" when the admin named none).
	tenant string
}

type principalKey struct{}

func withPrincipal(ctx context.Context, p *principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// principalFrom returns the authenticated caller. Every authenticated
// endpoint runs with one; its absence is a programming error.
func principalFrom(ctx context.Context) *principal {
	p, _ := ctx.Value(principalKey{}).(*principal)
	if p == nil {
		panic("api: no principal in context")
	}
	return p
}

// scope is the store Tenant of a tenant-scoped read or change: the caller's
// tenant, or "" (every tenant) for the admin without Latch-Tenant.
func (p *principal) scope() string { return p.tenant }

// owner is the tenant new executions are submitted for. The admin must name
// one with Latch-Tenant.
func (p *principal) owner() (string, error) { return p.ownerOf("to submit for") }

// ownerOf is the tenant whose resource (a schedule, a rate limit) a request
// creates, reads or changes: the key's tenant, or the one the admin names
// with Latch-Tenant (which it must). which completes the problem's "the
// admin key must name the tenant ...".
func (p *principal) ownerOf(which string) (string, error) {
	if p.tenant == "" {
		return "", invalid(tenantHeader, "the admin key must name the tenant %s in the %s header", which, tenantHeader)
	}
	return p.tenant, nil
}

// requireAdmin refuses tenant keys.
func (p *principal) requireAdmin() error {
	if !p.admin {
		return problem(CodeForbidden, "this endpoint needs the admin key")
	}
	return nil
}

// Identity is who an API key acts for: the admin (Tenant "") or one
// tenant. Disabled: the tenant is disabled (see principal.checkEnabled).
type Identity struct {
	Admin    bool
	Tenant   string
	Disabled bool
}

// ErrUnknownKey is Authenticator.Identify's answer for a key that is not
// (or no longer) valid.
var ErrUnknownKey = errors.New("unknown API key")

// Authenticator resolves API keys as the API does, for the console and any
// other front end that takes the same keys. The admin key is the one whose
// hash is AdminKeyHash when that is set (then no stored admin key is
// accepted), else any key the store resolves as admin.
//
// It keeps nothing between calls: every call reads the key from the store,
// so a key deleted through any server is refused by every server from the
// next request on. The one write it adds, a key's last_used_at, happens at
// most once per TouchInterval per key (the store's read of the key says
// when it was last recorded, and the write is conditional on it).
type Authenticator struct {
	Store        store.Store
	AdminKeyHash string
	// Now is the clock of last_used_at. nil = time.Now.
	Now func() time.Time
}

// TouchInterval is how stale a key's last_used_at may get: a key in use
// has it recorded again once it is this old, not on every request.
const TouchInterval = time.Minute

// Identify resolves key, or answers ErrUnknownKey.
func (a Authenticator) Identify(ctx context.Context, key string) (Identity, error) {
	return a.IdentifyHash(ctx, HashKey(key))
}

// IdentifyHash resolves a key by its hash (HashKey), or answers
// ErrUnknownKey: for a session that keeps the hash of the key it was
// opened with rather than the key.
func (a Authenticator) IdentifyHash(ctx context.Context, hash string) (Identity, error) {
	if a.AdminKeyHash != "" && subtle.ConstantTimeCompare([]byte(hash), []byte(a.AdminKeyHash)) == 1 {
		return Identity{Admin: true}, nil
	}
	k, err := a.Store.LookupAPIKey(ctx, &store.LookupAPIKeyParams{KeyHash: hash})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return Identity{}, ErrUnknownKey
	case err != nil:
		return Identity{}, err
	case k.Admin && a.AdminKeyHash != "":
		// LATCH_ADMIN_KEY pins the admin key: an admin key stored earlier
		// (generated at a first start) no longer works.
		return Identity{}, ErrUnknownKey
	}
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	if t := now(); t.Sub(k.LastUsedAt) >= TouchInterval {
		// Best effort: a key is no less valid for a failed record of its
		// use, and a store that fails here fails the request's next call.
		_ = a.Store.TouchAPIKey(ctx, &store.TouchAPIKeyParams{KeyHash: hash, Every: TouchInterval, Now: t})
	}
	return Identity{Admin: k.Admin, Tenant: k.Tenant, Disabled: k.TenantDisabled}, nil
}

// authenticate resolves the request's bearer key (Authenticator) and its
// Latch-Tenant header. A disabled tenant's key is refused unless leased
// (a worker's call on a lease it holds, so running work can finish).
func (s *Server) authenticate(r *http.Request, leased bool) (*principal, error) {
	key, ok := bearer(r.Header.Get("Authorization"))
	if !ok {
		return nil, unauthorized("missing or malformed Authorization header; send Authorization: Bearer <key>")
	}
	id, err := Authenticator{Store: s.cfg.Store, AdminKeyHash: s.cfg.AdminKeyHash, Now: s.cfg.Now}.Identify(r.Context(), key)
	switch {
	case errors.Is(err, ErrUnknownKey):
		return nil, unauthorized("unknown API key")
	case err != nil:
		return nil, err
	case id.Disabled && !id.Admin && !leased:
		return nil, problem(CodeTenantDisabled, "tenant %q is disabled; only the calls of leases its workers hold (heartbeat, complete, fail) are answered", id.Tenant)
	}
	p := principal{admin: id.Admin, tenant: id.Tenant}
	if name, given := headerValue(r, tenantHeader); given {
		if err := checkTenantName(tenantHeader, name); err != nil {
			return nil, err
		}
		switch {
		case p.admin:
			p.tenant = name
		case name != p.tenant:
			return nil, problem(CodeForbidden, "a tenant key acts for its own tenant only; drop the %s header or name the key's tenant", tenantHeader)
		}
	}
	return &p, nil
}

// bearer extracts the key of "Bearer <key>" (scheme case-insensitive).
func bearer(h string) (string, bool) {
	scheme, key, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	key = strings.TrimSpace(key)
	if key == "" || len(key) > maxKeyLen {
		return "", false
	}
	return key, true
}

// headerValue returns a header's value and whether it was sent at all.
func headerValue(r *http.Request, name string) (string, bool) {
	vs, ok := r.Header[http.CanonicalHeaderKey(name)]
	if !ok || len(vs) == 0 {
		return "", false
	}
	return strings.TrimSpace(vs[0]), true
}

func unauthorized(detail string) *Problem {
	p := problem(CodeUnauthorized, "%s", detail)
	p.header = http.Header{"Www-Authenticate": {`Bearer realm="latch"`}}
	return p
}
