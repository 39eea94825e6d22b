package redis

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	goredis "github.com/redis/go-redis/v9"

	"github.com/latch-run/latch/store"
)

// RecordStep implements store.Store with one script (step.lua), fenced like
// Complete; the first record of a name wins (I10).
func (s *Store) RecordStep(ctx context.Context, p *store.RecordStepParams) (*store.RecordStepResult, error) {
	if err := store.CheckStepName(p.Name); err != nil {
		return nil, err
	}
	arr, err := s.run(ctx, "record step", scriptStep, []string{s.k.exec(p.ExecutionID), s.k.steps(p.ExecutionID)},
		s.k.ns, p.ExecutionID, p.Tenant, p.Token, itoa(us(now(p.Now))), p.Name, jsonOrNull(p.Result), optUS(p.StartedAt),
		p.StepBound())
	if err != nil {
		return nil, err
	}
	if err := status(arr, "execution "+p.ExecutionID); err != nil {
		return nil, err
	}
	if len(arr) != 4 {
		return nil, fmt.Errorf("redis: record step: unexpected reply %v", arr)
	}
	e, err := parseStep(p.Name, asString(arr[3]))
	if err != nil {
		return nil, err
	}
	recorded := asInt(arr[2]) == 1
	if recorded {
		s.note.ack(asInt(arr[1]))
		s.feed.Publish(p.ExecutionID)
	}
	return &store.RecordStepResult{Step: e.step, Recorded: recorded}, nil
}

// Steps implements store.Store: the execution's tenant and its journal in
// one pipeline, sorted into record order here.
func (s *Store) Steps(ctx context.Context, p *store.StepsParams) ([]*store.Step, error) {
	var tenant *goredis.StringCmd
	var all *goredis.MapStringStringCmd
	_, err := s.rdb.Pipelined(ctx, func(pipe goredis.Pipeliner) error {
		tenant = pipe.HGet(ctx, s.k.exec(p.ID), "tenant")
		all = pipe.HGetAll(ctx, s.k.steps(p.ID))
		return nil
	})
	if err != nil && !errors.Is(err, goredis.Nil) {
		return nil, fmt.Errorf("redis: steps: %w", interpretError(err))
	}
	if t, err := tenant.Result(); err != nil || (p.Tenant != "" && t != p.Tenant) {
		return nil, fmt.Errorf("execution %s: %w", p.ID, store.ErrNotFound)
	}
	entries := make([]stepEntry, 0, len(all.Val()))
	for name, v := range all.Val() {
		e, err := parseStep(name, v)
		if err != nil {
			return nil, err
		}
		entries = append(entries, e)
	}
	slices.SortFunc(entries, func(a, b stepEntry) int { return cmp.Compare(a.seq, b.seq) })
	out := make([]*store.Step, len(entries))
	for i := range entries {
		out[i] = &entries[i].step
	}
	return out, nil
}
