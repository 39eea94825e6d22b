package redis

import (
	"context"
	"strings"

	"github.com/latch-run/latch/store"
)

// Lease tokens on the router name their tenant: a lease the router hands
// out carries "<tenant>.<token>", the tenant namespace's token (claim.lua's
// 32 hex digits, '-' and the lease's number) behind its tenant's name
// (a-z, 0-9, '_', '-': no '.', so the first '.' ends it). A call with a
// token (Heartbeat, Complete, Fail, Release, Suspend, RecordStep) so goes
// straight to its tenant's namespace, with the namespace's own token, even
// when it names no tenant (an admin's key): no fan-out over the tenants.
// A token that names no tenant, or another tenant than the call names, is
// not the lease's: store.ErrLeaseLost, as the namespace answers a wrong
// token.

// wrapToken is the token the router hands out for tenant t's token tok.
func wrapToken(t, tok string) string { return t + "." + tok }

// wrapLeases wraps the tokens of leases in place.
func wrapLeases(ls []store.Lease) {
	for i := range ls {
		ls[i].Token = wrapToken(ls[i].Tenant, ls[i].Token)
	}
}

// leaseView returns the namespace and the namespace's token of a call that
// names tenant (or "") and passes token tok.
func (r *Router) leaseView(tenant, tok string) (*Store, string, error) {
	t, inner, ok := strings.Cut(tok, ".")
	if !ok || !store.ValidTenantName(t) || inner == "" || (tenant != "" && tenant != t) {
		return nil, "", store.ErrLeaseLost
	}
	return r.view(t), inner, nil
}

// onLease runs op, a call fenced by a lease token, on the view the token
// names, with a copy of p holding the view's own token (setToken).
func onLease[P, R any](ctx context.Context, r *Router, p *P, tenant, token string, setToken func(*P, string),
	op func(*Store, context.Context, *P) (R, error)) (R, error) {
	v, tok, err := r.leaseView(tenant, token)
	if err != nil {
		var none R
		return none, err
	}
	vp := *p
	setToken(&vp, tok)
	return op(v, ctx, &vp)
}
