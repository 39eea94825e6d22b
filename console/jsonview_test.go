package console

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"
)

// Within the budget, the bounded indent is json.Indent's, byte for byte.
func TestIndentBoundedMatchesIndent(t *testing.T) {
	for _, raw := range []string{`{}`, `[]`, `{"a":1}`, `{"a":[],"b":{},"c":[1,2,{"d":null}]}`, `"x"`, `12.5e3`,
		`[true,false,null,"a\"b\\",{"k":"v:,{}[]"}]`, `{"a":{"b":{"c":[[["deep"]]]}}}`, ` { "sp" : [ 1 , 2 ] } `} {
		var want bytes.Buffer
		if err := json.Indent(&want, []byte(strings.TrimSpace(raw)), "", "  "); err != nil {
			t.Fatal(err)
		}
		got, deep, cut := indentBounded([]byte(raw), maxJSONDepth, maxJSONShown)
		if got != want.String() || deep || cut {
			t.Errorf("indentBounded(%s) = %q (deep %v, cut %v), want %q", raw, got, deep, cut, want.String())
		}
	}
}

// Past the depth, a value is "…"; past the size, the text stops; both say
// so.
func TestViewJSONBudget(t *testing.T) {
	v := viewJSON([]byte(`{"a":{"b":{"c":1}},"d":[[2]],"e":"x"}`))
	if v.Truncated != "" {
		t.Errorf("a small value is marked truncated: %q", v.Truncated)
	}
	got, deep, _ := indentBounded([]byte(`{"a":{"b":{"c":1}},"d":[[2]],"e":"x"}`), 2, maxJSONShown)
	if want := "{\n  \"a\": {\n    \"b\": …\n  },\n  \"d\": [\n    …\n  ],\n  \"e\": \"x\"\n}"; got != want || !deep {
		t.Errorf("depth 2: %q (deep %v), want %q", got, deep, want)
	}
	big := `["` + strings.Repeat("é", maxJSONShown) + `"]`
	v = viewJSON([]byte(big))
	if len(v.Text) > maxJSONShown+8 || !strings.Contains(v.Truncated, "truncated: ") ||
		!strings.Contains(v.Truncated, "KiB shown") || !utf8.ValidString(v.Text) {
		t.Errorf("a large value: %d bytes shown, marker %q", len(v.Text), v.Truncated)
	}
	deepRaw := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	v = viewJSON([]byte(deepRaw))
	if len(v.Text) > 2000 || !strings.Contains(v.Truncated, "depth > 20") {
		t.Errorf("10,000 levels: %d bytes shown, marker %q", len(v.Text), v.Truncated)
	}
}

// The raw view is bounded too: past maxRawJSON it stops, saying so.
func TestWriteRawBounded(t *testing.T) {
	raw := []byte(`"` + strings.Repeat("x", 2*maxRawJSON) + `"`)
	rec := httptest.NewRecorder()
	writeRaw(rec, raw)
	body := rec.Body.String()
	if len(body) > maxRawJSON+200 || !strings.Contains(body, "(truncated: 2097154 bytes stored") ||
		rec.Header().Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Errorf("a raw view of %d bytes: %d bytes, %q, ends %q", len(raw), len(body), rec.Header().Get("Content-Type"),
			body[max(0, len(body)-120):])
	}
	rec = httptest.NewRecorder()
	writeRaw(rec, []byte(`{"a":1}`))
	if rec.Body.String() != `{"a":1}` {
		t.Errorf("a small raw view: %q", rec.Body.String())
	}
}
