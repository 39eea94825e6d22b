package console

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"
)

// plain is the tree as text, indented as json.Indent does with two
// spaces, every container unfolded.
func plain(nodes []*jsonNode) string {
	var b strings.Builder
	var write func(n *jsonNode, level int)
	write = func(n *jsonNode, level int) {
		b.WriteString(strings.Repeat("  ", level))
		if n.Key != "" {
			b.WriteString(n.Key + ": ")
		}
		if n.Open == "" {
			b.WriteString(n.Text)
		} else {
			b.WriteString(n.Open + "\n")
			for _, k := range n.Kids {
				write(k, level+1)
			}
			b.WriteString(strings.Repeat("  ", level) + n.Close)
		}
		if n.Comma {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	for _, n := range nodes {
		write(n, 0)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// renderJSON is v as a page shows it (the layout's "json" template).
func renderJSON(t *testing.T, v jsonView) string {
	t.Helper()
	var b bytes.Buffer
	if err := parsePages()["execution"].ExecuteTemplate(&b, "json", v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// Within the budget, the tree read unfolded is json.Indent's text, byte
// for byte.
func TestJSONTreeMatchesIndent(t *testing.T) {
	for _, raw := range []string{`{}`, `[]`, `{"a":1}`, `{"a":[],"b":{},"c":[1,2,{"d":null}]}`, `"x"`, `12.5e3`,
		`[true,false,null,"a\"b\\",{"k":"v:,{}[]"}]`, `{"a":{"b":{"c":[[["deep"]]]}}}`, ` { "sp" : [ 1 , 2 ] } `} {
		var want bytes.Buffer
		if err := json.Indent(&want, []byte(strings.TrimSpace(raw)), "", "  "); err != nil {
			t.Fatal(err)
		}
		nodes, deep, cut := treeBounded([]byte(raw), maxJSONDepth, maxJSONShown, maxJSONLines)
		if got := plain(nodes); got != want.String() || deep || cut {
			t.Errorf("treeBounded(%s) = %q (deep %v, cut %v), want %q", raw, got, deep, cut, want.String())
		}
	}
}

// Each object and array with members is a fold saying what it holds; the
// top level is open, a deep or large container folded.
func TestJSONTreeFolds(t *testing.T) {
	items := make([]int, foldMembers+1)
	raw, _ := json.Marshal(map[string]any{"one": []int{7}, "many": items, "a": map[string]any{"b": map[string]any{"c": map[string]any{"d": 1, "e": 2}}}, "none": []int{}})
	nodes, _, _ := treeBounded(raw, maxJSONDepth, maxJSONShown, maxJSONLines)
	root := nodes[0]
	kid := map[string]*jsonNode{}
	for _, k := range root.Kids {
		kid[k.Key] = k
	}
	c := kid[`"a"`].Kids[0].Kids[0]
	for _, tc := range []struct {
		n      *jsonNode
		count  int
		unit   string
		folded bool
	}{{root, 4, "keys", false}, {kid[`"one"`], 1, "item", false}, {kid[`"many"`], foldMembers + 1, "items", true},
		{kid[`"a"`], 1, "key", false}, {kid[`"a"`].Kids[0], 1, "key", false}, {c, 2, "keys", true}} {
		if tc.n.Count != tc.count || tc.n.Unit != tc.unit || tc.n.Folded != tc.folded || tc.n.Open == "" {
			t.Errorf("%s: %d %s, folded %v, open %q; want %d %s, folded %v", tc.n.Key, tc.n.Count, tc.n.Unit, tc.n.Folded,
				tc.n.Open, tc.count, tc.unit, tc.folded)
		}
	}
	if n := kid[`"none"`]; n.Open != "" || n.Text != "[]" {
		t.Errorf("an empty array: open %q, text %q", n.Open, n.Text)
	}
	page := renderJSON(t, viewJSON(raw))
	for _, want := range []string{`<details class="jn" data-n="0" open><summary>{<span class="jf">…} 4 keys</span></summary>`,
		`<span class="jk">&#34;many&#34;</span>: [<span class="jf">…] 21 items,</span></summary>`,
		`<span class="jk">&#34;c&#34;</span>: {<span class="jf">…} 2 keys</span>`, `<button type="button" class="copy" data-copy="{&#34;a&#34;:`} {
		if !strings.Contains(page, want) {
			t.Errorf("the view lacks %s:\n%s", want, page)
		}
	}
	if strings.Count(page, "<details") != 6 || strings.Count(page, "<details") != strings.Count(page, "</details>") {
		t.Errorf("the view has %d folds (%d closed), want 6:\n%s", strings.Count(page, "<details"), strings.Count(page, "</details>"), page)
	}
}

// Text that is not JSON comes out as well as it can, each container
// closed where its bracket is, and the view stays bounded.
func TestJSONTreeNotJSON(t *testing.T) {
	nodes, _, _ := treeBounded([]byte(`{"a","b":1}`), maxJSONDepth, maxJSONShown, maxJSONLines)
	if got, want := plain(nodes), "{\n  \"a\": ,\n  \"b\": 1\n}"; got != want {
		t.Errorf("a member with no value: %q, want %q", got, want)
	}
	for _, raw := range []string{`{"a"}`, `{"a":}`, `[1,,2]`, `}{][`, `{"a":[1,2}`, `"open`, `{"k":"\`, `::,,`, `[{"a":1]]}`, `{{{{`, `nul`} {
		v := viewJSON([]byte(raw))
		v.Raw = "/x"
		page := renderJSON(t, v)
		if len(page) > 4096 || strings.Count(page, "<details") != strings.Count(page, "</details>") {
			t.Errorf("%s: a view of %d bytes:\n%s", raw, len(page), page)
		}
	}
}

// Stored JSON is tenant input: whatever it holds, the view shows it as
// text and runs nothing, in the tree and in the Copy button's attribute.
func TestJSONViewEscapes(t *testing.T) {
	raw := `{"</script><script>alert(1)</script>":"<img src=x onerror=alert(2)>","q":"\" onmouseover=\"alert(3)","a":['<b>',"</details></div>"]}`
	page := renderJSON(t, viewJSON([]byte(raw)))
	for _, bad := range []string{"<script", "</script", "<img", "<b>", `" onmouseover`, "</details></div>\"", "'<b>'"} {
		if strings.Contains(page, bad) {
			t.Errorf("the view carries %q unescaped:\n%s", bad, page)
		}
	}
	for _, want := range []string{`&lt;img src=x onerror=alert(2)&gt;`, `&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;`,
		`data-copy="{&#34;&lt;/script&gt;`} {
		if !strings.Contains(page, want) {
			t.Errorf("the view lacks %s:\n%s", want, page)
		}
	}
	if strings.Count(page, "<details") != strings.Count(page, "</details>") || strings.Count(page, "<div") != strings.Count(page, "</div>") {
		t.Errorf("the stored value changed the view's structure:\n%s", page)
	}
}

// Past the depth, a value is "…"; past the size or the lines, the tree
// stops; each says so, a cut container still counts all its members, and
// the page stays bounded whatever the value.
func TestViewJSONBudget(t *testing.T) {
	v := viewJSON([]byte(`{"a":{"b":{"c":1}},"d":[[2]],"e":"x"}`))
	if v.Truncated != "" || v.Copy != `{"a":{"b":{"c":1}},"d":[[2]],"e":"x"}` {
		t.Errorf("a small value: marker %q, copy %q", v.Truncated, v.Copy)
	}
	nodes, deep, _ := treeBounded([]byte(`{"a":{"b":{"c":1}},"d":[[2]],"e":"x"}`), 2, maxJSONShown, maxJSONLines)
	if got, want := plain(nodes), "{\n  \"a\": {\n    \"b\": …\n  },\n  \"d\": [\n    …\n  ],\n  \"e\": \"x\"\n}"; got != want || !deep {
		t.Errorf("depth 2: %q (deep %v), want %q", got, deep, want)
	}
	for name, raw := range map[string]string{
		"a long string": `["` + strings.Repeat("é", maxJSONShown) + `"]`,
		"many items":    "[" + strings.Repeat("[1],", 5*maxJSONLines) + "[1]]",
		"many keys":     "{" + strings.Repeat(`"k":{"x":[]},`, 5*maxJSONLines) + `"k":0}`,
		"deep":          strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
		"deep objects":  strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000),
		"wide and deep": "[" + strings.Repeat(strings.Repeat("[", 30)+strings.Repeat("]", 30)+",", 3000) + "0]",
	} {
		v := viewJSON([]byte(raw))
		v.Raw = "/executions/x/json?field=payload"
		page := renderJSON(t, v)
		t.Logf("%s: %d bytes stored, a view of %d bytes", name, len(raw), len(page))
		if len(page) > 6*maxJSONShown || v.Copy != "" || !strings.Contains(v.Truncated, "truncated: ") ||
			!utf8.ValidString(page) {
			t.Errorf("%s (%d bytes): a view of %d bytes, marker %q, copy of %d bytes", name, len(raw), len(page), v.Truncated, len(v.Copy))
		}
		if !strings.Contains(page, `data-copy-url=`) || !strings.Contains(page, "Copy raw JSON") {
			t.Errorf("%s: a cut view's Copy button does not copy the raw view", name)
		}
	}
	v = viewJSON([]byte("[" + strings.Repeat("1,", 5*maxJSONLines) + "1]"))
	if n := v.Nodes[0]; n.Count != 5*maxJSONLines+1 || len(n.Kids) >= maxJSONLines || !strings.Contains(v.Truncated, "lines shown") {
		t.Errorf("an array of %d items cut: counts %d, shows %d, marker %q", 5*maxJSONLines+1, n.Count, len(n.Kids), v.Truncated)
	}
	v = viewJSON([]byte(strings.Repeat("[", 10000) + strings.Repeat("]", 10000)))
	if !strings.Contains(v.Truncated, "depth > 20") {
		t.Errorf("10,000 levels: marker %q", v.Truncated)
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
