package postgres

import (
	"context"
	"errors"

	"github.com/latch-run/latch/store"
)

// errFlowsNotBuilt stands in for the flow operations until they land.
var errFlowsNotBuilt = errors.New("postgres: flows are not built yet")

func (s *Store) RecordStep(context.Context, *store.RecordStepParams) (*store.RecordStepResult, error) {
	return nil, errFlowsNotBuilt
}

func (s *Store) Suspend(context.Context, *store.SuspendParams) (*store.Execution, error) {
	return nil, errFlowsNotBuilt
}

func (s *Store) Signal(context.Context, *store.SignalParams) (*store.SignalResult, error) {
	return nil, errFlowsNotBuilt
}

func (s *Store) Wake(context.Context, *store.WakeParams) (*store.WakeResult, error) {
	return nil, errFlowsNotBuilt
}

func (s *Store) Retry(context.Context, *store.RetryParams) (*store.Execution, error) {
	return nil, errFlowsNotBuilt
}

func (s *Store) Steps(context.Context, *store.StepsParams) ([]*store.Step, error) {
	return nil, errFlowsNotBuilt
}
