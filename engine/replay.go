package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"

	"github.com/latch-run/latch/store"
)

// The journal's rules, shared by the embedded worker's flow (Job) and the
// remote worker's (package latch, remoteflow.go): how a recorded step
// reads on a replay, what a step's record holds, and which errors of a
// record fail the execution for good. Each caller reads and writes the
// journal its own way (the store, or the HTTP API); what it makes of the
// answers is here, so the two cannot drift apart.

// StepRecord is the JSON a step's result is recorded as: result in its
// canonical form, or null for an empty result.
func StepRecord(name string, result json.RawMessage) (json.RawMessage, error) {
	if len(result) == 0 {
		return json.RawMessage("null"), nil
	}
	canon, err := store.CanonicalJSON(result)
	if err != nil {
		return nil, Permanent(fmt.Errorf("step %q: result is not valid JSON: %w", name, err))
	}
	return canon, nil
}

// CallHandler calls h, a handler bound to its context and Job, for the
// embedded worker and the remote one alike: a panic is logged with its
// stack and returned as an error; a result is checked (CheckResult), and
// an empty one is nil.
func CallHandler(log *slog.Logger, h func() (json.RawMessage, error)) (result json.RawMessage, err error) {
	defer func() {
		if r := recover(); r != nil {
			log.Error("handler panicked", "panic", r, "stack", string(debug.Stack()))
			result, err = nil, fmt.Errorf("panic: %v", r)
		}
	}()
	result, err = h()
	if err != nil {
		return nil, err
	}
	if len(result) == 0 {
		return nil, nil
	}
	if err := CheckResult(result); err != nil {
		return nil, err
	}
	return result, nil
}

// CheckResult checks what a handler returned, not empty: JSON that nests
// at most store.MaxJSONDepth levels, or a Permanent error (no later
// attempt of the same handler would return better).
func CheckResult(result json.RawMessage) error {
	if !json.Valid(result) {
		return Permanent(errors.New("handler returned a result that is not valid JSON"))
	}
	if store.JSONTooDeep(result, store.MaxJSONDepth) {
		return Permanent(fmt.Errorf("handler returned a result that nests arrays and objects more than %d levels deep",
			store.MaxJSONDepth))
	}
	return nil
}

// RecordedSignal reads the recorded result r of a wait for a signal: its
// data, or ErrWaitTimedOut if the timeout passed first.
func RecordedSignal(r json.RawMessage) (json.RawMessage, error) {
	if string(r) == string(store.TimedOut) {
		return nil, ErrWaitTimedOut
	}
	return r, nil
}

// SpawnedIDs reads the ids of the recorded step name, which must be a
// spawn's.
func SpawnedIDs(name string, result json.RawMessage) ([]string, error) {
	ids, ok := store.ParseSpawnStep(result)
	if !ok {
		return nil, Permanent(fmt.Errorf("step %q is recorded, but not by a spawn: %w", name, store.ErrInvalid))
	}
	return ids, nil
}

// RecordedFanIn reads the recorded result r of the wait for children
// name: the children as the wait found them, with ErrWaitTimedOut when the
// timeout ended it.
func RecordedFanIn(name string, r json.RawMessage) (*store.FanInResult, error) {
	var res store.FanInResult
	if err := json.Unmarshal(r, &res); err != nil || res.Children == nil {
		return nil, Permanent(fmt.Errorf("step %q is recorded, but not by a wait for children: %w", name, store.ErrInvalid))
	}
	if res.TimedOut {
		return &res, ErrWaitTimedOut
	}
	return &res, nil
}

// CheckFanIn checks a wait for children name before it suspends: spawn
// must be a spawn step of the flow's journal (r its record, ok whether it
// is there) with at least count children. The spawn is the flow's own: a
// wait on anything else is a mistake in the handler, which no later run
// would correct, so the errors are Permanent.
func CheckFanIn(name, spawn string, count int, r json.RawMessage, ok bool) error {
	if !ok {
		return Permanent(fmt.Errorf("wait %q: no spawn step %q in the journal: %w", name, spawn, store.ErrInvalid))
	}
	ids, err := SpawnedIDs(spawn, r)
	if err != nil {
		return err
	}
	if count < 0 || count > len(ids) {
		return Permanent(fmt.Errorf("wait %q: count %d, but the spawn %q has %d children: %w", name, count, spawn, len(ids), store.ErrInvalid))
	}
	return nil
}

// FlowError is the error a step's record or a suspension under the step
// name returns to the handler: a journal at its bound fails the execution
// for good (Permanent: the journal never shrinks, so no later attempt could
// record the step), a lost lease (or a deleted execution) is ErrLeaseLost,
// other errors pass. err matches the store's sentinels (the remote worker
// maps the API's problem codes to them first).
func FlowError(step string, err error) error {
	if errors.Is(err, store.ErrTooManySteps) {
		return Permanent(fmt.Errorf("step %q: the journal holds as many steps as it may (store.MaxSteps = %d): %w",
			step, store.MaxSteps, err))
	}
	if errors.Is(err, store.ErrJournalTooLarge) {
		return Permanent(fmt.Errorf("step %q: the journal would pass its bound of bytes (store.MaxJournalBytes = %d): %w",
			step, store.MaxJournalBytes, err))
	}
	return leaseError(err)
}

// SpawnError is the error a spawn returns to the handler: the bounds of
// children and items the store finds invalid fail the execution for good,
// as the journal's bounds do; the rest as FlowError makes it.
func SpawnError(name string, err error) error {
	switch {
	case errors.Is(err, store.ErrTooManyChildren):
		return Permanent(fmt.Errorf("spawn %q: at most %d children in a spawn, %d of an execution, %d levels deep: %w",
			name, store.MaxSpawnItems, store.MaxChildren, store.MaxSpawnDepth, err))
	case errors.Is(err, store.ErrInvalid):
		return Permanent(fmt.Errorf("spawn %q: %w", name, err))
	}
	return FlowError(name, err)
}

// Journal is the journal an attempt's flow holds: the steps its lease
// carried, those read since, and those it recorded. Its owner guards it
// with a lock of its own.
type Journal struct {
	steps store.Journal
	// complete: steps holds every step recorded before the attempt, as
	// when the lease carried the whole journal.
	complete bool
}

// NewJournal is the journal of a lease that carried steps (copied);
// complete says they are every step recorded before the attempt.
func NewJournal(steps map[string]json.RawMessage, complete bool) Journal {
	j := make(store.Journal, len(steps))
	for name, result := range steps {
		j[name] = result
	}
	return Journal{steps: j, complete: complete}
}

// Lookup returns the journal's result for name, if any. A journal not
// complete has the rest read with more, a page at a time, on the first
// name not found in what it holds, until name is found or the journal
// ends: a step recorded before the attempt is never run again for want of
// its record, and a flow that finds every step in its lease reads nothing
// more. more reads the next page, passes each of its steps to add, and
// reports whether it was the last; its error is returned as it is.
func (j *Journal) Lookup(name string, more func(add func(name string, result json.RawMessage)) (last bool, err error)) (json.RawMessage, bool, error) {
	add := func(name string, result json.RawMessage) {
		if _, ok := j.steps[name]; !ok {
			j.steps[name] = result
		}
	}
	for {
		if r, ok := j.steps[name]; ok {
			return r, true, nil
		}
		if j.complete {
			return nil, false, nil
		}
		last, err := more(add)
		if err != nil {
			return nil, false, err
		}
		j.complete = last
	}
}

// Note holds result as the step name's, as the store recorded it.
func (j *Journal) Note(name string, result json.RawMessage) { j.steps[name] = result }
