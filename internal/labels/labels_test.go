package labels

import (
	"fmt"
	"sync"
	"testing"
)

func TestBoundedKeepsTheFirstValues(t *testing.T) {
	b := New(3)
	for _, v := range []string{"a", "b", "a", "c"} {
		if got := b.Value(v); got != v {
			t.Errorf("Value(%q) = %q within the bound", v, got)
		}
	}
	if got := b.Value("d"); got != Other {
		t.Errorf("a fourth value = %q, want %q", got, Other)
	}
	if got := b.Value("a"); got != "a" {
		t.Errorf("a value seen before the bound = %q after it", got)
	}
}

func TestBoundedUnderConcurrency(t *testing.T) {
	b := New(10)
	var wg sync.WaitGroup
	var mu sync.Mutex
	kept := map[string]bool{}
	for i := range 1000 {
		wg.Go(func() {
			v := b.Value(fmt.Sprint("kind-", i))
			mu.Lock()
			kept[v] = true
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(kept) != 11 || !kept[Other] {
		t.Errorf("%d distinct values came out of 1000, want 10 and %q", len(kept), Other)
	}
}
