package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/latch-run/latch/store"
)

// Runs implements store.Store: the execution's tenant and its history in
// one MULTI, so that a history is never read without the execution it
// belongs to. The scripts write it (lib.lua, run_start and run_end).
func (s *Store) Runs(ctx context.Context, p *store.RunsParams) ([]*store.Run, error) {
	var tenant *goredis.StringCmd
	var list *goredis.StringSliceCmd
	_, err := s.rdb.TxPipelined(ctx, func(pipe goredis.Pipeliner) error {
		tenant = pipe.HGet(ctx, s.k.exec(p.ID), "tenant")
		list = pipe.LRange(ctx, s.k.runs(p.ID), 0, -1)
		return nil
	})
	if err != nil && !errors.Is(err, goredis.Nil) {
		return nil, fmt.Errorf("redis: runs: %w", interpretError(err))
	}
	if t, err := tenant.Result(); err != nil || (p.Tenant != "" && t != p.Tenant) {
		return nil, fmt.Errorf("execution %s: %w", p.ID, store.ErrNotFound)
	}
	out := make([]*store.Run, 0, len(list.Val()))
	for _, v := range list.Val() {
		r, err := parseRun(v)
		if err != nil {
			return nil, fmt.Errorf("redis: runs of %s: %w", p.ID, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// parseRun reads one element of runs:<id>:
// "<outcome>:<ended_us>:<attempt>:<claimed_us>:<len(worker)>:<worker><error>",
// outcome and ended_us empty while the run goes on (lib.lua). No field
// before the worker id holds a ':', so the first five split it.
func parseRun(v string) (*store.Run, error) {
	f := strings.SplitN(v, ":", 6)
	if len(f) != 6 {
		return nil, fmt.Errorf("malformed run %q", v)
	}
	attempt, err1 := strconv.Atoi(f[2])
	claimed, err2 := strconv.ParseInt(f[3], 10, 64)
	n, err3 := strconv.Atoi(f[4])
	if err := errors.Join(err1, err2, err3); err != nil || n < 0 || n > len(f[5]) || (f[0] == "") != (f[1] == "") {
		return nil, fmt.Errorf("malformed run %q", v)
	}
	r := &store.Run{
		Attempt:   attempt,
		WorkerID:  f[5][:n],
		ClaimedAt: fromUS(claimed),
		Outcome:   store.RunOutcome(f[0]),
		Error:     f[5][n:],
	}
	if f[1] != "" {
		ended, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("malformed run %q", v)
		}
		t := fromUS(ended)
		r.EndedAt = &t
	}
	return r, nil
}
