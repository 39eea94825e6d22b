// Package auth resolves latch API keys to whom they act for. The HTTP API
// (package api), the console and `latch serve` all authenticate through it,
// so a key means the same to every front end.
package auth

import (
	"context"
	"crypto/subtle"
	"errors"
	"time"

	"github.com/latch-run/latch/store"
)

// Identity is who an API key acts for: the admin (Tenant "") or one
// tenant. Disabled: the tenant is disabled; front ends refuse its key
// except for the calls of leases its workers hold.
type Identity struct {
	Admin    bool
	Tenant   string
	Disabled bool
}

// ErrUnknownKey is Authenticator.Identify's answer for a key that is not
// (or no longer) valid.
var ErrUnknownKey = errors.New("unknown API key")

// Authenticator resolves API keys, for the API, the console and any other
// front end that takes the same keys. The admin key is the one whose hash
// is AdminKeyHash when that is set (then no stored admin key is accepted),
// else any key the store resolves as admin.
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
