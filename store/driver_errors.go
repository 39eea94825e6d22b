package store

import (
	"context"
	"errors"
	"fmt"
)

// DriverErrors is a backend's mapping of its driver's errors onto the
// sentinels (each backend's interpretError), in the frame every backend
// shares: see Interpret.
type DriverErrors struct {
	// Prefix starts the message of an error Interpret wraps ("postgres: ").
	Prefix string
	// Known reports errors that carry their meaning already (a business
	// refusal returned from inside a transaction) and pass through as they
	// are, besides those that wrap ErrUnavailable. nil: no others.
	Known func(error) bool
	// Unavailable reports an error of the backend's absence or state rather
	// than of the operation (a connection refused or closed, a server
	// starting, a lock held past its timeout, the store closed).
	Unavailable func(error) bool
	// Codes maps any other error, by the driver's own codes. nil: it is
	// returned as it is.
	Codes func(error) error
}

// Interpret maps err onto the sentinels, keeping it in the chain for
// callers that inspect it: nil, the context's own errors (Canceled,
// DeadlineExceeded), errors that wrap ErrUnavailable already and those
// Known reports pass through; an error Unavailable reports is
// ErrUnavailable; anything else is Codes's.
func (d *DriverErrors) Interpret(err error) error {
	switch {
	case err == nil, errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, ErrUnavailable), d.Known != nil && d.Known(err):
		return err
	case d.Unavailable(err):
		return fmt.Errorf("%s%w: %w", d.Prefix, ErrUnavailable, err)
	case d.Codes != nil:
		return d.Codes(err)
	}
	return err
}
