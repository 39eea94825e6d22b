package store

import "fmt"

// List page sizes (docs/api.md: limit 1–500, default 50), and how many
// executions one List examines at most (ListParams.Scan).
const (
	DefaultListLimit = 50
	MaxListLimit     = 500
	DefaultListScan  = 10000
)

// Paging checks p's page and returns its size: Limit, or DefaultListLimit
// when it is 0. A Limit outside 1..MaxListLimit, a negative Scan, or an
// After that is not an execution id (IsExecutionID), is ErrInvalid. Every
// backend's List starts with it.
func (p *ListParams) Paging() (limit int, err error) {
	switch {
	case p.Limit < 0 || p.Limit > MaxListLimit:
		return 0, fmt.Errorf("%w: limit %d not in 1..%d", ErrInvalid, p.Limit, MaxListLimit)
	case p.Scan < 0:
		return 0, fmt.Errorf("%w: scan %d is negative", ErrInvalid, p.Scan)
	case p.After != "" && !IsExecutionID(p.After):
		return 0, fmt.Errorf("%w: cursor %q is not an execution id", ErrInvalid, p.After)
	case p.IDPrefix != "" && !IsIDPrefix(p.IDPrefix):
		return 0, fmt.Errorf("%w: id prefix %q is not the start of an execution id (%d to 36 characters)",
			ErrInvalid, p.IDPrefix, MinIDPrefix)
	case p.IDPrefix != "" && p.ParentID != "":
		return 0, fmt.Errorf("%w: an id prefix does not combine with a parent", ErrInvalid)
	case p.Limit == 0:
		return DefaultListLimit, nil
	}
	return p.Limit, nil
}

// ScanSize is p.Scan with its default applied.
func (p *ListParams) ScanSize() int {
	if p.Scan <= 0 {
		return DefaultListScan
	}
	return p.Scan
}

// Filtered reports whether p filters executions by more than their tenant.
func (p *ListParams) Filtered() bool {
	return p.Status != "" || p.Kind != "" || p.Queue != "" || p.DedupKey != "" || p.Schedule != ""
}

// MinIDPrefix is the shortest ListParams.IDPrefix: 8 hex digits, the
// first 32 bits of a UUIDv7's millisecond timestamp (about 65 seconds).
const MinIDPrefix = 8

// IsIDPrefix reports whether s is the start of an execution id's canonical
// form (IsExecutionID), at least MinIDPrefix characters long.
func IsIDPrefix(s string) bool {
	if len(s) < MinIDPrefix || len(s) > 36 {
		return false
	}
	return IsExecutionID(s + idFill(len(s), '0'))
}

// IDPrefixRange is the range of the execution ids that start with prefix
// (IsIDPrefix): lo and hi are the lowest and highest ids of that form,
// both included. The canonical text of ids sorts as the ids do, so the
// range is one of every backend's id index.
func IDPrefixRange(prefix string) (lo, hi string) {
	return prefix + idFill(len(prefix), '0'), prefix + idFill(len(prefix), 'f')
}

// idFill is the rest of an id of which n characters are given: digit d in
// the hex places, dashes in theirs.
func idFill(n int, d byte) string {
	b := make([]byte, 0, 36-n)
	for i := n; i < 36; i++ {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			b = append(b, '-')
		} else {
			b = append(b, d)
		}
	}
	return string(b)
}

// IsExecutionID reports whether id has the form of an execution id: a UUID
// in its canonical text form (36 characters, lower-case hex in groups of
// 8-4-4-4-12), as the backends generate them.
func IsExecutionID(id string) bool {
	if len(id) != 36 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
	}
	return true
}

// Paging checks p's page: a Limit outside 0..MaxSteps or a negative
// After is ErrInvalid. Every backend's Steps starts with it.
func (p *StepsParams) Paging() error {
	switch {
	case p.Limit < 0 || p.Limit > MaxSteps:
		return fmt.Errorf("%w: limit %d not in 1..%d", ErrInvalid, p.Limit, MaxSteps)
	case p.After < 0:
		return fmt.Errorf("%w: cursor %d is negative", ErrInvalid, p.After)
	case p.MaxBytes < 0:
		return fmt.Errorf("%w: max bytes %d is negative", ErrInvalid, p.MaxBytes)
	}
	return nil
}

// ReadLimit is how many steps a backend reads for p's page: Limit+1, so
// that the one after the page tells whether there is a next; 0 = all.
func (p *StepsParams) ReadLimit() int {
	if p.Limit == 0 {
		return 0
	}
	return p.Limit + 1
}

// Cut reports whether p's page ends before the step at index i (from 0)
// of those read after After in record order, whose predecessors on the
// page total before bytes (StepSize): past Limit, or at MaxBytes. Every
// backend reads steps' sizes first and their results only while Cut is
// false, so a page reads at most MaxBytes plus one step of results.
func (p *StepsParams) Cut(i, before int) bool {
	return p.Limit > 0 && i >= p.Limit || p.MaxBytes > 0 && before >= p.MaxBytes
}
