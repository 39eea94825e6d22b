package store

import (
	"fmt"
	"math"
	"time"
	"unicode"
	"unicode/utf8"
)

// Bounds of a submission's fields. docs/api.md fixes the lengths of kind
// and dedup_key; the others are latch's choices. The HTTP API and the Go
// API both check them with the functions below, so a submit is held to the
// same rules whichever way it comes.
const (
	MaxKindLen             = 128
	MaxQueueLen            = 128
	MaxKeyLen              = 256 // dedup_key, concurrency_key, rate_key
	MinPriority            = math.MinInt32
	MaxPriority            = math.MaxInt32
	MaxAttemptsLimit       = 1000
	MaxTimeoutSeconds      = 7 * 24 * 3600
	MaxDelaySeconds        = 10 * 365 * 24 * 3600 // how far ahead run_at may be
	DefaultMaxPayloadBytes = 1 << 20              // of canonical JSON
)

// FieldError is a refusal of one field of a request: Field names it, Rule
// says what it must be. It is an ErrInvalid (errors.Is). TooLarge marks a
// payload over its size limit, which the HTTP API answers with 413.
type FieldError struct {
	Field    string
	Rule     string
	TooLarge bool
}

func (e *FieldError) Error() string { return ErrInvalid.Error() + ": " + e.Field + ": " + e.Rule }

// Unwrap makes a FieldError an ErrInvalid.
func (e *FieldError) Unwrap() error { return ErrInvalid }

func fieldError(field, format string, args ...any) error {
	return &FieldError{Field: field, Rule: fmt.Sprintf(format, args...)}
}

// CheckText is the rule of every free-text identifier: kind, the keys,
// worker ids, time zones, cron specs. 1–max characters (Unicode code
// points) of valid UTF-8, none of them invisible (see Invisible).
// Payloads, results and error messages are data, not identifiers, and are
// not held to it.
func CheckText(field, s string, max int) error {
	n := utf8.RuneCountInString(s)
	if n == 0 || n > max {
		return fieldError(field, "must be 1-%d characters", max)
	}
	if !utf8.ValidString(s) {
		return fieldError(field, "must be valid UTF-8")
	}
	for _, r := range s {
		if Invisible(r) {
			return fieldError(field, "must not contain control, format (bidi, zero-width) or line-separator characters; found %U", r)
		}
	}
	return nil
}

// Invisible reports a character that would let one identifier pass for
// another where the console and logs show it: controls (C0, C1), format
// characters (Unicode category Cf: bidi overrides and isolates U+202A–202E
// and U+2066–2069, marks U+200E, U+200F and U+061C, zero-width U+200B–200D,
// U+2060 and U+FEFF, soft hyphen, tag characters) and the line and
// paragraph separators U+2028 and U+2029.
func Invisible(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029'
}

// CheckIdent is the rule of a name: 1–max of [A-Za-z0-9._:-].
func CheckIdent(field, s string, max int) error {
	if s == "" || len(s) > max {
		return fieldError(field, "must be 1-%d characters of A-Z, a-z, 0-9, '.', '_', ':' and '-'", max)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '.' || c == '_' || c == ':' || c == '-') {
			return fieldError(field, "must be 1-%d characters of A-Z, a-z, 0-9, '.', '_', ':' and '-'", max)
		}
	}
	return nil
}

// CheckRange: min <= v <= max.
func CheckRange(field string, v, min, max int64) error {
	if v < min || v > max {
		return fieldError(field, "must be between %d and %d", min, max)
	}
	return nil
}

// The rules of a submission's fields, one each.

// CheckKind: CheckText up to MaxKindLen.
func CheckKind(field, s string) error { return CheckText(field, s, MaxKindLen) }

// CheckKey (a dedup, concurrency or rate key): CheckText up to MaxKeyLen.
func CheckKey(field, s string) error { return CheckText(field, s, MaxKeyLen) }

// CheckQueue: CheckIdent up to MaxQueueLen.
func CheckQueue(field, s string) error { return CheckIdent(field, s, MaxQueueLen) }

// CheckPriority: a 32-bit integer.
func CheckPriority(field string, v int64) error {
	return CheckRange(field, v, MinPriority, MaxPriority)
}

// CheckMaxAttempts: 1..MaxAttemptsLimit.
func CheckMaxAttempts(field string, v int64) error { return CheckRange(field, v, 1, MaxAttemptsLimit) }

// CheckTimeoutSeconds: 1..MaxTimeoutSeconds.
func CheckTimeoutSeconds(field string, v int64) error {
	return CheckRange(field, v, 1, MaxTimeoutSeconds)
}

// CheckConcurrencyLimit: 1..MaxInflightLimit.
func CheckConcurrencyLimit(field string, v int64) error {
	return CheckRange(field, v, 1, MaxInflightLimit)
}

// CheckDelaySeconds: 0..MaxDelaySeconds.
func CheckDelaySeconds(field string, v int64) error { return CheckRange(field, v, 0, MaxDelaySeconds) }

// CheckRunAt: at most MaxDelaySeconds after now.
func CheckRunAt(field string, runAt, now time.Time) error {
	if runAt.After(now.Add(MaxDelaySeconds * time.Second)) {
		return fieldError(field, "must be at most %d seconds ahead", MaxDelaySeconds)
	}
	return nil
}

// CheckPayloadSize: canonical JSON of at most max bytes (a TooLarge
// FieldError otherwise).
func CheckPayloadSize(field string, canonical []byte, max int) error {
	if len(canonical) > max {
		return &FieldError{Field: field, TooLarge: true,
			Rule: fmt.Sprintf("%d bytes of canonical JSON exceed the limit of %d", len(canonical), max)}
	}
	return nil
}

// CheckItem is the backstop every backend's Admit applies to each item
// before anything else (callers check first, with CheckSubmission or the
// HTTP API's rules): a kind, and an explicit ID in the form of an
// execution id (IsExecutionID), a TraceParent that is "" or valid. ErrInvalid otherwise, for that item.
func CheckItem(sub *Submission) error {
	switch {
	case sub.Kind == "":
		return fmt.Errorf("%w: kind is empty", ErrInvalid)
	case sub.ID != "" && !IsExecutionID(sub.ID):
		return fmt.Errorf("%w: execution id %q is not a UUID", ErrInvalid, sub.ID)
	}
	return checkTraceParentItem(sub.TraceParent)
}

// CheckSubmission holds sub, submitted at now, to the rules above, zero
// fields meaning their defaults: the Go API's check of a submit. (The HTTP
// API applies the same rules field by field as it decodes, since there an
// absent field and a zero differ.) maxPayload bounds the canonical
// payload.
func CheckSubmission(sub *Submission, now time.Time, maxPayload int) error {
	var limitWithoutKey error
	if sub.ConcurrencyLimit != 0 && sub.ConcurrencyKey == "" {
		limitWithoutKey = fieldError("concurrency_limit", "needs concurrency_key")
	}
	return first(
		CheckKind("kind", sub.Kind),
		CheckPayloadSize("payload", sub.Payload, maxPayload),
		given(sub.DedupKey != "", CheckKey("dedup_key", sub.DedupKey)),
		given(sub.Queue != "", CheckQueue("queue", sub.Queue)),
		CheckPriority("priority", int64(sub.Priority)),
		CheckRunAt("run_at", sub.RunAt, now),
		given(sub.MaxAttempts != 0, CheckMaxAttempts("max_attempts", int64(sub.MaxAttempts))),
		given(sub.TimeoutSeconds != 0, CheckTimeoutSeconds("timeout_seconds", int64(sub.TimeoutSeconds))),
		given(sub.ConcurrencyKey != "", CheckKey("concurrency_key", sub.ConcurrencyKey)),
		limitWithoutKey,
		given(sub.ConcurrencyLimit != 0, CheckConcurrencyLimit("concurrency_limit", int64(sub.ConcurrencyLimit))),
		given(sub.RateKey != "", CheckKey("rate_key", sub.RateKey)),
		CheckTraceParent("trace_parent", sub.TraceParent),
	)
}

// given is err when the field is set; a field not set takes its default.
func given(set bool, err error) error {
	if !set {
		return nil
	}
	return err
}

// first is the first non-nil of errs, in field order.
func first(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
