package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
)

// depthOf is the nesting depth of a valid JSON document, read with
// encoding/json's tokens: the reference JSONTooDeep must agree with.
func depthOf(t testing.TB, raw []byte) (int, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	depth, deepest := 0, 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return deepest, true
		}
		if err != nil {
			return 0, false
		}
		switch tok {
		case json.Delim('['), json.Delim('{'):
			depth++
			deepest = max(deepest, depth)
		case json.Delim(']'), json.Delim('}'):
			depth--
		}
	}
}

func TestJSONTooDeep(t *testing.T) {
	for _, c := range []struct {
		doc  string
		max  int
		deep bool
	}{
		{`1`, 0, false},
		{`[]`, 0, true},
		{`[]`, 1, false},
		{`{"a":[{"b":[]}]}`, 4, false},
		{`{"a":[{"b":[]}]}`, 3, true},
		{`"[[[[[["`, 1, false},             // brackets in a string
		{`["\"[[[[", "\\", []]`, 2, false}, // escaped quotes and backslashes
		{`["\\\"[[", {"]]]]": [[]]}]`, 4, false},
		{`["\\\"[[", {"]]]]": [[]]}]`, 3, true},
	} {
		if got := JSONTooDeep([]byte(c.doc), c.max); got != c.deep {
			t.Errorf("JSONTooDeep(%s, %d) = %v, want %v", c.doc, c.max, got, c.deep)
		}
	}
}

// A document nested ten thousand deep is refused by CanonicalJSON as a
// FieldError, without being built: the refusal allocates a small fraction
// of what decoding it would.
func TestCanonicalJSONRefusesDeepNestingWithoutBuildingIt(t *testing.T) {
	ok := strings.Repeat("[", MaxJSONDepth) + strings.Repeat("]", MaxJSONDepth)
	if _, err := CanonicalJSON([]byte(ok)); err != nil {
		t.Fatalf("%d levels: %v", MaxJSONDepth, err)
	}
	const n = 10_000
	raw := []byte(strings.Repeat(`{"a":[`, n) + strings.Repeat(`]}`, n))
	var fe *FieldError
	if _, err := CanonicalJSON(raw); !errors.As(err, &fe) || !errors.Is(err, ErrInvalid) {
		t.Fatalf("CanonicalJSON of %d levels: %v, want a FieldError", 2*n, err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 10 {
		_, _ = CanonicalJSON(raw)
	}
	runtime.ReadMemStats(&after)
	if perCall := (after.TotalAlloc - before.TotalAlloc) / 10; perCall > 4<<10 {
		t.Fatalf("refusing a %d-byte document allocated %d bytes a call", len(raw), perCall)
	}
}

// FuzzJSONTooDeep: on valid JSON, JSONTooDeep agrees with the depth
// encoding/json's tokens give.
func FuzzJSONTooDeep(f *testing.F) {
	for _, s := range []string{`{}`, `[[1,{"a":"]"}]]`, `"\\"`, `{"a\"[":[[[]]]}`, `[[[[[[[[]]]]]]]]`} {
		f.Add([]byte(s), 3)
	}
	f.Fuzz(func(t *testing.T, raw []byte, max int) {
		if max < 0 || max > 100 || !json.Valid(raw) {
			return
		}
		d, ok := depthOf(t, raw)
		if !ok {
			return
		}
		if got := JSONTooDeep(raw, max); got != (d > max) {
			t.Fatalf("JSONTooDeep(%q, %d) = %v; depth is %d", raw, max, got, d)
		}
	})
}
