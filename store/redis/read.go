package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/latch-run/latch/store"
)

// parseExecution reads an execution hash (see lua/lib.lua for its fields).
func parseExecution(m map[string]string) *store.Execution {
	num := func(f string) int {
		n, _ := strconv.Atoi(m[f])
		return n
	}
	tm := func(f string) *time.Time {
		v, ok := m[f]
		if !ok || v == "" {
			return nil
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		t := fromUS(n)
		return &t
	}
	e := &store.Execution{
		ID:               m["id"],
		Tenant:           m["tenant"],
		Kind:             m["kind"],
		Queue:            m["queue"],
		Priority:         num("prio"),
		Status:           store.Status(m["status"]),
		DedupKey:         m["dkey"],
		ConcurrencyKey:   m["ckey"],
		ConcurrencyLimit: num("climit"),
		RateKey:          m["rkey"],
		Payload:          json.RawMessage(m["payload"]),
		Error:            m["error"],
		Attempt:          num("attempt"),
		MaxAttempts:      num("maxatt"),
		TimeoutSeconds:   num("timeout"),
		Schedule:         m["schedule"],
		StartedAt:        tm("started"),
		FinishedAt:       tm("finished"),
		CancelRequested:  m["cancel"] == "1",
		WorkerID:         m["worker"],
		LeaseExpiresAt:   tm("lease_exp"),
		WakeAt:           tm("wake_at"),
		WaitingFor:       m["waiting"],
		SuspendStep:      m["sstep"],
		TraceParent:      m["trace"],
		DedupHits:        num("dhits"),
		StoredBytes:      hashInt(m, "bytes"),
		LastDedupHitAt:   tm("dhit_at"),
		ParentID:         m["parent"],
		ParentStep:       m["pstep"],
		OnParentEnd:      store.ParentEnd(m["ponend"]),
		Depth:            num("depth"),
	}
	if r, ok := m["result"]; ok {
		e.Result = json.RawMessage(r)
	}
	if t := tm("created"); t != nil {
		e.CreatedAt = *t
	}
	if t := tm("run_at"); t != nil {
		e.RunAt = *t
	}
	return e
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, p *store.GetParams) (*store.Execution, error) {
	m, err := s.rdb.HGetAll(ctx, s.k.exec(p.ID)).Result()
	if err != nil {
		return nil, fmt.Errorf("redis: get execution: %w", interpretError(err))
	}
	if len(m) == 0 || (p.Tenant != "" && m["tenant"] != p.Tenant) {
		return nil, fmt.Errorf("execution %s: %w", p.ID, store.ErrNotFound)
	}
	return parseExecution(m), nil
}

// List implements store.Store. It walks the tenant's (or the namespace's)
// list index newest id first, reading executions a chunk at a time in one
// pipeline and filtering them here; pages are keyed by id, so executions
// added or removed between chunks or pages neither repeat nor shift others.
// No index serves a filter here, so every List examines at most Scan ids
// of the list index (each one an HGETALL): when they run out before the
// page is full, Next is the last one examined. With MaxBytes the page ends
// after the item whose payload and result bytes reach it.
func (s *Store) List(ctx context.Context, p *store.ListParams) (*store.ListResult, error) {
	limit, err := p.Paging()
	if err != nil {
		return nil, err
	}
	if p.ParentID != "" {
		return s.listChildren(ctx, p, limit)
	}
	index := s.k.list()
	if p.Tenant != "" {
		index = s.k.listTenant(p.Tenant)
	}
	chunk := limit + 1
	if p.Filtered() {
		chunk = max(chunk, 200)
	}
	page := p.Page(limit)
	cursor := p.After
	left := p.ScanSize() // ids the call may still examine
	// An id prefix is a lex range of the index: ZRANGE BYLEX reads only
	// the ids in it, never the rest of the index.
	top, bottom := "", "-"
	if p.IDPrefix != "" {
		lo, hi := store.IDPrefixRange(p.IDPrefix)
		top, bottom = hi, "["+lo
	}
	for {
		if left == 0 {
			return page.Result(cursor), nil // the last id examined
		}
		n := min(chunk, left)
		hi := "+"
		switch {
		case cursor != "" && (top == "" || cursor <= top):
			hi = "(" + cursor
		case top != "":
			hi = "[" + top
		}
		ids, err := s.rdb.ZRangeArgs(ctx, goredis.ZRangeArgs{
			Key: index, Start: hi, Stop: bottom, ByLex: true, Rev: true, Count: int64(n),
		}).Result()
		if err != nil {
			return nil, fmt.Errorf("redis: list: %w", interpretError(err))
		}
		if len(ids) == 0 {
			return page.Result(""), nil
		}
		cmds := make([]*goredis.MapStringStringCmd, len(ids))
		_, err = s.rdb.Pipelined(ctx, func(pipe goredis.Pipeliner) error {
			for i, id := range ids {
				cmds[i] = pipe.HGetAll(ctx, s.k.exec(id))
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("redis: list: %w", interpretError(err))
		}
		for _, c := range cmds {
			m := c.Val()
			if len(m) == 0 {
				continue // deleted since the index was read
			}
			e := parseExecution(m)
			if !matches(e, p) {
				continue
			}
			if page.Add(e) {
				return page.Result(""), nil
			}
		}
		if len(ids) < n {
			return page.Result(""), nil
		}
		left -= len(ids)
		cursor = ids[len(ids)-1]
	}
}

// listChildren is List of one parent's children, in spawn order: its kids
// index (scored by spawn order), read a chunk at a time like List's, After
// a child's id whose score is where the page starts. A page after a child
// deleted since is empty.
func (s *Store) listChildren(ctx context.Context, p *store.ListParams, limit int) (*store.ListResult, error) {
	index := s.k.kids(p.ParentID)
	page := p.Page(limit)
	lo := "-inf"
	if p.After != "" {
		sc, err := s.rdb.ZScore(ctx, index, p.After).Result()
		if errors.Is(err, goredis.Nil) {
			return page.Result(""), nil
		}
		if err != nil {
			return nil, fmt.Errorf("redis: list children: %w", interpretError(err))
		}
		lo = "(" + strconv.FormatFloat(sc, 'f', -1, 64)
	}
	chunk := limit + 1
	if p.Filtered() {
		chunk = max(chunk, 200)
	}
	left := p.ScanSize()
	cursor := p.After
	for {
		if left == 0 {
			return page.Result(cursor), nil
		}
		n := min(chunk, left)
		zs, err := s.rdb.ZRangeArgsWithScores(ctx, goredis.ZRangeArgs{
			Key: index, Start: lo, Stop: "+inf", ByScore: true, Count: int64(n),
		}).Result()
		if err != nil {
			return nil, fmt.Errorf("redis: list children: %w", interpretError(err))
		}
		if len(zs) == 0 {
			return page.Result(""), nil
		}
		cmds := make([]*goredis.MapStringStringCmd, len(zs))
		_, err = s.rdb.Pipelined(ctx, func(pipe goredis.Pipeliner) error {
			for i, z := range zs {
				cmds[i] = pipe.HGetAll(ctx, s.k.exec(asString(z.Member)))
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("redis: list children: %w", interpretError(err))
		}
		for _, c := range cmds {
			m := c.Val()
			if len(m) == 0 {
				continue // deleted since the index was read
			}
			if e := parseExecution(m); matches(e, p) && page.Add(e) {
				return page.Result(""), nil
			}
		}
		if len(zs) < n {
			return page.Result(""), nil
		}
		left -= len(zs)
		last := zs[len(zs)-1]
		cursor = asString(last.Member)
		lo = "(" + strconv.FormatFloat(last.Score, 'f', -1, 64)
	}
}

func matches(e *store.Execution, p *store.ListParams) bool {
	return (p.Tenant == "" || e.Tenant == p.Tenant) &&
		strings.HasPrefix(e.ID, p.IDPrefix) &&
		(p.ParentID == "" || e.ParentID == p.ParentID) &&
		(p.Status == "" || e.Status == p.Status) &&
		(p.Kind == "" || e.Kind == p.Kind) &&
		(p.Queue == "" || e.Queue == p.Queue) &&
		(p.DedupKey == "" || e.DedupKey == p.DedupKey) &&
		(p.Schedule == "" || e.Schedule == p.Schedule)
}
