package store

import "fmt"

// Trace context (docs/tracing.md): an execution may carry the W3C
// traceparent of the request that submitted it, so its runs join the
// caller's trace. latch stores it as given and hands it to every lease;
// it never makes one up.

// TraceParentLen is the length of a version-00 W3C traceparent:
// "00-" + 32 hex trace id + "-" + 16 hex parent id + "-" + 2 hex flags.
const TraceParentLen = 55

// ValidTraceParent reports whether s is a version-00 W3C traceparent in
// lower-case hex whose trace id and parent id are not all zeros.
func ValidTraceParent(s string) bool {
	if len(s) != TraceParentLen || s[:3] != "00-" || s[35] != '-' || s[52] != '-' {
		return false
	}
	return hexNonZero(s[3:35]) && hexNonZero(s[36:52]) && hexNonZero(s[53:55]+"1")
}

// hexNonZero: s is lower-case hex and not all zeros.
func hexNonZero(s string) bool {
	zero := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '0':
		case '1' <= c && c <= '9', 'a' <= c && c <= 'f':
			zero = false
		default:
			return false
		}
	}
	return !zero
}

// CheckTraceParent is the rule of Submission.TraceParent: "" or a valid
// traceparent (ValidTraceParent).
func CheckTraceParent(field, s string) error {
	if s != "" && !ValidTraceParent(s) {
		return fieldError(field, "must be a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>)")
	}
	return nil
}

// checkTraceParentItem is CheckItem's backstop for the trace context.
func checkTraceParentItem(s string) error {
	if s != "" && !ValidTraceParent(s) {
		return fmt.Errorf("%w: trace parent %q is not a W3C traceparent", ErrInvalid, s)
	}
	return nil
}
