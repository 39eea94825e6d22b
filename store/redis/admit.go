package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/latch-run/latch/store"
)

// Admit implements store.Store. An Admit call is decided by one script
// (admit.lua): the dedup lookup, the quota check, the execution hash, its
// queue entry and the dedup mapping of every item are written together or
// not at all. Concurrent calls share script runs (group commit, group.go),
// each still all or nothing. Items that are invalid on their face (an
// empty kind) are refused here and never reach the script, so they bind no
// key and take no quota.
func (s *Store) Admit(ctx context.Context, p *store.AdmitParams) (*store.AdmitResult, error) {
	nowUS := us(now(p.Now))
	res := &store.AdmitResult{Items: make([]store.Admitted, len(p.Items))}
	type pending struct {
		index int // in p.Items
		e     *store.Execution
	}
	var items []pending
	keys := []string{s.k.tenant(p.Tenant), s.k.dedup(p.Tenant), s.k.listTenant(p.Tenant)}
	args := []any{p.Tenant, itoa(nowUS), 0}
	ids := map[string]bool{}
	for i := range p.Items {
		sub := &p.Items[i]
		if err := store.CheckItem(sub); err != nil {
			res.Items[i].Err = err
			continue
		}
		e := newExecution(p.Tenant, sub, nowUS)
		if ids[e.ID] {
			return nil, fmt.Errorf("%w: execution id %s given twice", store.ErrInvalid, e.ID)
		}
		ids[e.ID] = true
		items = append(items, pending{index: i, e: e})
		keys = append(keys, s.k.exec(e.ID))
		limit := ""
		if e.ConcurrencyKey != "" {
			limit = itoa(int64(e.ConcurrencyLimit))
		}
		runAt := us(e.RunAt)
		args = append(args, e.ID, flag(sub.ID != ""), e.Kind, e.Queue, itoa(int64(e.Priority)),
			prioLex(e.Priority), string(e.Payload), e.DedupKey, e.ConcurrencyKey, limit, e.RateKey,
			itoa(int64(e.MaxAttempts)), itoa(int64(e.TimeoutSeconds)), e.Schedule, itoa(runAt), timeLex(runAt),
			e.TraceParent)
	}
	if len(items) == 0 {
		// Nothing reaches the store, but an unknown tenant is still refused.
		if _, err := s.GetTenant(ctx, &store.GetTenantParams{Name: p.Tenant}); err != nil {
			return nil, err
		}
		return res, nil
	}
	args[2] = len(items)

	d, err := s.admitG.do(ctx, len(items), keys, args...)
	if err != nil {
		return nil, interpretError(err)
	}
	arr := d.reply
	if err := status(arr, "tenant "+strconv.Quote(p.Tenant)); err != nil {
		return nil, err
	}
	s.note.ack(d.version)
	if len(arr) != 1+2*len(items) {
		return nil, errors.New("redis: admit: reply does not match the items")
	}
	for j, it := range items {
		code, data := asString(arr[1+2*j]), arr[2+2*j]
		out := &res.Items[it.index]
		switch code {
		case "N":
			out.Execution = it.e
		case "D":
			out.Execution, out.Deduplicated = parseExecution(asMap(data)), true
		case "d":
			// <dedup hits>:<now_us>:<id>: this hit's count and time on an
			// execution an earlier item of the answer carries.
			hits, rest, _ := strings.Cut(asString(data), ":")
			at, id, _ := strings.Cut(rest, ":")
			shown := shownExecution(d.all, id)
			if shown == nil {
				return nil, fmt.Errorf("redis: admit: execution %v not in the answer", data)
			}
			e := parseExecution(shown)
			e.DedupHits = int(asInt(hits))
			hitAt := fromUS(asInt(at))
			e.LastDedupHitAt = &hitAt
			out.Execution, out.Deduplicated = e, true
		case "R":
			out.Err = fmt.Errorf("dedup key %q maps to execution %s: %w",
				it.e.DedupKey, asString(data), store.ErrDedupKeyReused)
		case "Q":
			out.Err = fmt.Errorf("tenant %q has %d in flight: %w", p.Tenant, asInt(data), store.ErrQuotaExceeded)
		case "S":
			out.Err = fmt.Errorf("tenant %q stores %d bytes; the payload has %d: %w", p.Tenant, asInt(data),
				len(it.e.Payload), store.ErrStorageExceeded)
		default:
			return nil, fmt.Errorf("redis: admit: unexpected item code %q", code)
		}
	}
	return s.feed.Admitted(res, nil)
}

// shownExecution finds, in a whole admit answer, the hash of execution id
// that a 'D' item carries.
func shownExecution(all []any, id string) map[string]string {
	for _, r := range all[1:] {
		reply, _ := r.([]any)
		if asString(at(reply, 0)) != "OK" {
			continue
		}
		for j := 1; j+1 < len(reply); j += 2 {
			if asString(reply[j]) != "D" {
				continue
			}
			if m := asMap(reply[j+1]); m["id"] == id {
				return m
			}
		}
	}
	return nil
}

// newExecution is the execution a submission becomes, with the defaults
// applied and times cut to the microsecond, exactly as admit.lua stores it.
func newExecution(tenant string, sub *store.Submission, nowUS int64) *store.Execution {
	id := sub.ID
	if id == "" {
		id = uuid.Must(uuid.NewV7()).String()
	}
	t := fromUS(nowUS)
	runAt := sub.RunAt
	if !runAt.IsZero() {
		runAt = fromUS(us(runAt))
	}
	s := *sub
	s.RunAt = runAt
	return store.NewExecution(id, tenant, &s, t)
}
