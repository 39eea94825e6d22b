package redis

import (
	"context"
	"fmt"

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
		p.StepBound(), p.ByteBound())
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

// Steps implements store.Store with one script (steps.lua), which reads
// the names of the page in record order and the entries it keeps only.
func (s *Store) Steps(ctx context.Context, p *store.StepsParams) (*store.StepsPage, error) {
	if err := p.Paging(); err != nil {
		return nil, err
	}
	arr, err := s.run(ctx, "steps", scriptSteps,
		[]string{s.k.exec(p.ID), s.k.steps(p.ID), s.k.stepOrder(p.ID)},
		s.k.ns, p.ID, p.Tenant, p.After, p.Limit, p.MaxBytes)
	if err != nil {
		return nil, err
	}
	if err := status(arr, "execution "+p.ID); err != nil {
		return nil, err
	}
	if len(arr) < 2 {
		return nil, fmt.Errorf("redis: steps: unexpected reply %v", arr)
	}
	page := &store.StepsPage{Items: make([]*store.Step, 0, (len(arr)-2)/2), Next: asInt(arr[1])}
	for i := 2; i+1 < len(arr); i += 2 {
		e, err := parseStep(asString(arr[i]), asString(arr[i+1]))
		if err != nil {
			return nil, err
		}
		page.Items = append(page.Items, &e.step)
	}
	return page, nil
}
