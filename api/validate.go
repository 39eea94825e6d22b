package api

import (
	"unicode"
	"unicode/utf8"
)

// Limits of identifiers and numbers. docs/api.md fixes the lengths of name,
// kind and dedup_key; the others are this server's choices.
const (
	maxTenantName   = 64
	maxKindLen      = 128
	maxQueueLen     = 128
	maxKeyFieldLen  = 256 // dedup_key, concurrency_key, rate_key, worker_id
	maxScheduleName = 128
	maxPriority     = 1<<31 - 1
	minPriority     = -1 << 31
	maxAttempts     = 1000
	maxTimeout      = 7 * 24 * 3600
	maxDelay        = 10 * 365 * 24 * 3600 // delay_seconds, run_at horizon
	maxDuration     = 10 * 365 * 24 * 3600 // tenant TTL and retention, seconds
	maxInflight     = 1_000_000_000
	maxErrorLen     = 64 << 10 // a failure message is cut to this many bytes
)

// checkTenantName: 1–64 of [a-z0-9_-].
func checkTenantName(field, s string) error {
	if s == "" || len(s) > maxTenantName {
		return invalid(field, "must be 1-%d characters of a-z, 0-9, _ and -", maxTenantName)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return invalid(field, "must be 1-%d characters of a-z, 0-9, _ and -", maxTenantName)
		}
	}
	return nil
}

// checkQueue: 1–128 of [A-Za-z0-9._:-].
func checkQueue(field, s string) error { return checkIdent(field, s, maxQueueLen) }

// checkScheduleName: 1–128 of [A-Za-z0-9._:-], like a queue.
func checkScheduleName(field, s string) error { return checkIdent(field, s, maxScheduleName) }

// checkIdent: 1–max of [A-Za-z0-9._:-].
func checkIdent(field, s string, max int) error {
	if s == "" || len(s) > max {
		return invalid(field, "must be 1-%d characters of A-Z, a-z, 0-9, '.', '_', ':' and '-'", max)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '.' || c == '_' || c == ':' || c == '-') {
			return invalid(field, "must be 1-%d characters of A-Z, a-z, 0-9, '.', '_', ':' and '-'", max)
		}
	}
	return nil
}

// checkText is the rule of every free-text identifier: kind, dedup_key,
// concurrency_key, rate_key (in a body or a path), the Idempotency-Key
// header, worker_id, time zones and cron specs. 1–max characters (Unicode
// code points) of valid UTF-8, none of them invisible (see invisible).
// Payloads, results and error messages are data, not identifiers, and are
// not held to it.
func checkText(field, s string, max int) error {
	n := utf8.RuneCountInString(s)
	if n == 0 || n > max {
		return invalid(field, "must be 1-%d characters", max)
	}
	if !utf8.ValidString(s) {
		return invalid(field, "must be valid UTF-8")
	}
	for _, r := range s {
		if invisible(r) {
			return invalid(field, "must not contain control, format (bidi, zero-width) or line-separator characters; found %U", r)
		}
	}
	return nil
}

// invisible reports a character that would let one identifier pass for
// another where the console and logs show it: controls (C0, C1), format
// characters (Unicode category Cf: bidi overrides and isolates U+202A–202E
// and U+2066–2069, marks U+200E, U+200F and U+061C, zero-width U+200B–200D,
// U+2060 and U+FEFF, soft hyphen, tag characters) and the line and
// paragraph separators U+2028 and U+2029.
func invisible(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029'
}

// checkRange: min <= v <= max.
func checkRange(field string, v, min, max int64) error {
	if v < min || v > max {
		return invalid(field, "must be between %d and %d", min, max)
	}
	return nil
}
