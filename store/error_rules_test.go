package store

import (
	"strings"
	"testing"
)

func TestTruncate(t *testing.T) {
	if got := Truncate("héllo", 2); got != "h" {
		t.Errorf("Truncate = %q, want h (no split rune)", got)
	}
	if got := Truncate("abc", 5); got != "abc" {
		t.Errorf("Truncate = %q", got)
	}
	long := strings.Repeat("é", MaxErrorBytes) // 2 bytes each
	p := &FailParams{Error: "x" + long}
	if got := p.StoredError(); len(got) != MaxErrorBytes-1 || got != ("x" + long)[:MaxErrorBytes-1] {
		t.Errorf("StoredError: %d bytes", len(got))
	}
}
