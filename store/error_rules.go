package store

import "unicode/utf8"

// MaxErrorBytes bounds a failure's message as stored: the execution's
// error and its run's in the attempt history (MaxRunsKept of them, so an
// execution keeps at most 400 KiB of messages). Every backend's Fail keeps
// FailParams.StoredError, so a message is cut the same whoever reports it —
// an in-process worker or one over HTTP.
const MaxErrorBytes = 4 << 10

// StoredError is the message Fail stores: Error cut to MaxErrorBytes
// (Truncate).
func (p *FailParams) StoredError() string { return Truncate(p.Error, MaxErrorBytes) }

// Truncate cuts s to at most n bytes, on a rune boundary so that valid
// UTF-8 stays valid.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
