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
