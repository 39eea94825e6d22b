package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
)

// TestDriverErrors: nil, the context's errors, errors wrapping
// ErrUnavailable and those Known reports pass through unchanged; an
// error Unavailable reports becomes ErrUnavailable with the prefix and the
// original kept; the rest is Codes's, or passes when there is none.
func TestDriverErrors(t *testing.T) {
	errDup := errors.New("duplicate")
	errKnown := fmt.Errorf("refused: %w", ErrNotFound)
	d := &DriverErrors{
		Prefix:      "db: ",
		Known:       func(err error) bool { return errors.Is(err, ErrNotFound) },
		Unavailable: func(err error) bool { return errors.Is(err, io.EOF) },
		Codes: func(err error) error {
			if errors.Is(err, errDup) {
				return fmt.Errorf("db: %w: %w", ErrExists, err)
			}
			return fmt.Errorf("db: %w", err)
		},
	}
	wrappedUnavailable := fmt.Errorf("x: %w: %w", ErrUnavailable, io.EOF)
	for _, err := range []error{nil, context.Canceled, fmt.Errorf("q: %w", context.DeadlineExceeded), wrappedUnavailable, errKnown} {
		if got := d.Interpret(err); got != err { //nolint:errorlint // the very error, unchanged
			t.Errorf("Interpret(%v) = %v, want it unchanged", err, got)
		}
	}
	eof := fmt.Errorf("read: %w", io.EOF)
	if got := d.Interpret(eof); !errors.Is(got, ErrUnavailable) || !errors.Is(got, io.EOF) || got.Error() != "db: store unavailable: read: EOF" {
		t.Errorf("Interpret(EOF) = %v, want db: unavailable with the original kept", got)
	}
	if got := d.Interpret(errDup); !errors.Is(got, ErrExists) || !errors.Is(got, errDup) {
		t.Errorf("Interpret(dup) = %v, want Codes's ErrExists", got)
	}
	other := errors.New("other")
	if got := d.Interpret(other); got.Error() != "db: other" {
		t.Errorf("Interpret(other) = %v, want Codes's answer", got)
	}
	bare := &DriverErrors{Unavailable: d.Unavailable}
	if got := bare.Interpret(other); got != other { //nolint:errorlint // the very error, unchanged
		t.Errorf("without Codes, Interpret(other) = %v, want it unchanged", got)
	}
	if got := bare.Interpret(io.EOF); got.Error() != "store unavailable: EOF" {
		t.Errorf("without a prefix, Interpret(EOF) = %q", got)
	}
}
