package kinds

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/latch-run/latch/engine"
)

// The built-in kinds' names.
const (
	Echo  = "echo"
	Sleep = "sleep"
	HTTP  = "http"
)

// MaxRunSeconds is the longest a built-in kind runs: a sleep's seconds
// and an http call's timeout_seconds are at most this; more fails the
// execution at once, without retries. A slot of a worker is held while a
// kind runs, so a tenant could otherwise hold one for as long as its
// execution's timeout_seconds allows (a week). Longer waits belong in
// run_at, delay_seconds or a flow's sleep, which hold no slot.
const MaxRunSeconds = 15 * 60

// AllowEnv is the environment variable read when Options.HTTPAllow is nil.
const AllowEnv = "LATCH_HTTP_ALLOW"

// Options configure the built-in kinds.
type Options struct {
	// HTTPAllow lists the host patterns the http kind may call (see
	// ParseAllow). nil: read LATCH_HTTP_ALLOW, and allow every public host
	// when it is unset or empty. Empty but not nil, or []string{"*"}: every
	// public host. Loopback, private, link-local and other internal
	// addresses are reached only for hosts a pattern other than "*" names.
	HTTPAllow []string

	// HTTPClient makes the http kind's requests. Default: a client on a
	// clone of http.DefaultTransport. Its Transport, if set, must be an
	// *http.Transport: the kind uses a clone of it with its own dialling
	// (which checks every address it connects to) and no proxy. Its
	// redirect policy is wrapped so that every redirect target is checked
	// against HTTPAllow.
	HTTPClient *http.Client
}

// Register registers echo, sleep and http on w. It fails when an allow
// pattern is malformed, or HTTPClient's Transport is not an *http.Transport.
func Register(w *engine.Worker, opts Options) error {
	patterns := opts.HTTPAllow
	if patterns == nil {
		var err error
		if patterns, err = ParseAllow(os.Getenv(AllowEnv)); err != nil {
			return fmt.Errorf("kinds: %s: %w", AllowEnv, err)
		}
	}
	h, err := NewHTTPHandler(patterns, opts.HTTPClient)
	if err != nil {
		return err
	}
	w.Handle(Echo, EchoHandler)
	w.Handle(Sleep, SleepHandler)
	w.Handle(HTTP, h)
	return nil
}

// EchoHandler is the echo kind: its result is its payload.
func EchoHandler(_ context.Context, job *engine.Job) (json.RawMessage, error) {
	return job.Payload, nil
}

// SleepHandler is the sleep kind.
func SleepHandler(ctx context.Context, job *engine.Job) (json.RawMessage, error) {
	var p struct {
		Seconds *float64 `json:"seconds"`
	}
	if err := decodePayload(job.Payload, &p); err != nil {
		return nil, err
	}
	if p.Seconds == nil || !(*p.Seconds >= 0 && *p.Seconds <= MaxRunSeconds) {
		return nil, engine.Permanent(fmt.Errorf("sleep: payload needs \"seconds\": a number from 0 to %d (the built-in kinds' longest run)",
			MaxRunSeconds))
	}
	t := time.NewTimer(time.Duration(*p.Seconds * float64(time.Second)))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil, fmt.Errorf("sleep interrupted: %w", context.Cause(ctx))
	case <-t.C:
	}
	return json.Marshal(map[string]float64{"slept_seconds": *p.Seconds})
}

// decodePayload decodes a kind's payload strictly: unknown fields are a
// mistake the user should hear about, permanently.
func decodePayload(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return engine.Permanent(fmt.Errorf("bad payload: %w", err))
	}
	return nil
}
