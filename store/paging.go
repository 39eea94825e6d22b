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
