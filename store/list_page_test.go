package store

import (
	"reflect"
	"strings"
	"testing"
)

// TestListPage: a page holds at most its limit, with the last item as Next
// when one more was read; MaxBytes ends it at the item that reaches the
// budget (never at the extra item read to see past the limit); otherwise
// Next is where the read stopped ("" at the list's end).
func TestListPage(t *testing.T) {
	ex := func(id string, bytes int) *Execution {
		return &Execution{ID: id, Payload: []byte(strings.Repeat("p", bytes))}
	}
	ids := func(r *ListResult) []string {
		var out []string
		for _, e := range r.Items {
			out = append(out, e.ID)
		}
		return out
	}
	for _, c := range []struct {
		name      string
		maxBytes  int
		limit     int
		items     []*Execution
		rest      string
		wantIDs   []string
		wantNext  string
		wantAdded int // items Add took before it said done
	}{
		{"short page, list ended", 0, 3, []*Execution{ex("c", 1), ex("b", 1)}, "", []string{"c", "b"}, "", 2},
		{"short page, scan stopped", 0, 3, []*Execution{ex("c", 1)}, "a", []string{"c"}, "a", 1},
		{"one past the limit", 0, 2, []*Execution{ex("c", 1), ex("b", 1), ex("a", 1), ex("0", 1)}, "x", []string{"c", "b"}, "b", 3},
		{"budget reached", 5, 3, []*Execution{ex("c", 2), ex("b", 3), ex("a", 1)}, "x", []string{"c", "b"}, "b", 2},
		{"budget reached by the first", 5, 3, []*Execution{ex("c", 9), ex("b", 1)}, "", []string{"c"}, "c", 1},
		{"the extra item does not count", 5, 2, []*Execution{ex("c", 1), ex("b", 1), ex("a", 9)}, "", []string{"c", "b"}, "b", 3},
		{"budget at the limit's last", 2, 2, []*Execution{ex("c", 1), ex("b", 1), ex("a", 1)}, "x", []string{"c", "b"}, "b", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := &ListParams{MaxBytes: c.maxBytes}
			page := p.Page(c.limit)
			added := 0
			for _, e := range c.items {
				added++
				if page.Add(e) {
					break
				}
			}
			res := page.Result(c.rest)
			if added != c.wantAdded || !reflect.DeepEqual(ids(res), c.wantIDs) || res.Next != c.wantNext {
				t.Errorf("added %d, items %v, next %q; want %d, %v, %q", added, ids(res), res.Next, c.wantAdded, c.wantIDs, c.wantNext)
			}
		})
	}
}
