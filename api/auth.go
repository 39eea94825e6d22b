package api

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/latch-run/latch/auth"
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
	// keyHash is the hash of the key the request sent: a stream ticket
	// issued to it is redeemed as that key.
	keyHash string
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

// Identity, Authenticator, ErrUnknownKey, TouchInterval, NewKey and
// HashKey are package auth's (API keys and whom they act for), named here
// too for code written against package api.
type (
	Identity      = auth.Identity
	Authenticator = auth.Authenticator
)

// ErrUnknownKey is auth.ErrUnknownKey.
var ErrUnknownKey = auth.ErrUnknownKey

// TouchInterval is auth.TouchInterval.
const TouchInterval = auth.TouchInterval

// NewKey returns a new random API key (auth.NewKey).
func NewKey() string { return auth.NewKey() }

// HashKey returns the hash under which a key is stored (auth.HashKey).
func HashKey(key string) string { return auth.HashKey(key) }

// authenticate resolves the request's bearer key (auth.Authenticator) and its
// Latch-Tenant header. A disabled tenant's key is refused unless leased
// (a worker's call on a lease it holds, so running work can finish).
func (s *Server) authenticate(r *http.Request, leased bool) (*principal, error) {
	key, ok := bearer(r.Header.Get("Authorization"))
	if !ok {
		return nil, unauthorized("missing or malformed Authorization header; send Authorization: Bearer <key>")
	}
	hash := auth.HashKey(key)
	id, err := s.identify(r.Context(), hash, leased)
	if errors.Is(err, auth.ErrUnknownKey) {
		return nil, unauthorized("unknown API key")
	} else if err != nil {
		return nil, err
	}
	p := principal{admin: id.Admin, tenant: id.Tenant, keyHash: hash}
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

// identify resolves a key by its hash (auth.Authenticator), answering
// auth.ErrUnknownKey for an unknown one. A disabled tenant's key is refused
// unless leased (a worker's call on a lease it holds, so running work can
// finish).
func (s *Server) identify(ctx context.Context, hash string, leased bool) (auth.Identity, error) {
	id, err := auth.Authenticator{Store: s.cfg.Store, AdminKeyHash: s.cfg.AdminKeyHash, Now: s.cfg.Now}.IdentifyHash(ctx, hash)
	if err == nil && id.Disabled && !id.Admin && !leased {
		return id, problem(CodeTenantDisabled, "tenant %q is disabled; only the calls of leases its workers hold (heartbeat, complete, fail, steps, suspend) are answered", id.Tenant)
	}
	return id, err
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
