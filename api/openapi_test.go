package api

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/latch-run/latch/store"
)

// TestOpenAPIMatchesRoutes: every route registered on the mux is in the
// document, and every operation of the document is registered.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	t.Parallel()
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.1.") {
		t.Fatalf("openapi %q, want 3.1.x", doc.OpenAPI)
	}
	var documented []string
	for path, ops := range doc.Paths {
		for method := range ops {
			if method == "parameters" || method == "summary" || method == "description" {
				continue
			}
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	s := New(Config{Store: nilStore{}})
	var registered []string
	for _, rt := range s.routes() {
		registered = append(registered, rt.pattern)
	}
	slices.Sort(documented)
	slices.Sort(registered)
	for _, r := range registered {
		if !slices.Contains(documented, r) {
			t.Errorf("route %q is not in openapi.json", r)
		}
	}
	for _, d := range documented {
		if !slices.Contains(registered, d) {
			t.Errorf("openapi.json documents %q, which is not registered", d)
		}
	}
}

// TestOpenAPIDocument checks the document's inner consistency: every $ref
// resolves, every problem code is listed, every operation answers
// something, and the batch admission mode is stated.
func TestOpenAPIDocument(t *testing.T) {
	t.Parallel()
	var root map[string]any
	if err := json.Unmarshal(openAPIDocument, &root); err != nil {
		t.Fatal(err)
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if k == "$ref" {
					if !resolves(root, x.(string)) {
						t.Errorf("$ref %s does not resolve", x)
					}
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(root)

	enum := dig(root, "components", "schemas", "Problem", "properties", "code", "enum").([]any)
	for code := range codeInfo {
		if !slices.Contains(enum, any(string(code))) {
			t.Errorf("problem code %s is not in the document", code)
		}
	}
	if len(enum) != len(codeInfo) {
		t.Errorf("document lists %d codes, server has %d", len(enum), len(codeInfo))
	}
	statuses := dig(root, "components", "schemas", "ExecutionStatus", "enum").([]any)
	for _, st := range statuses {
		if !store.Status(st.(string)).Valid() {
			t.Errorf("status %v", st)
		}
	}
	for path, ops := range root["paths"].(map[string]any) {
		for method, op := range ops.(map[string]any) {
			if len(op.(map[string]any)["responses"].(map[string]any)) == 0 {
				t.Errorf("%s %s answers nothing", method, path)
			}
		}
	}
	batch := dig(root, "paths", "/api/executions/batch", "post", "description").(string)
	if !strings.Contains(batch, "ONE-BY-ONE, COMMITTED TOGETHER") {
		t.Error("the batch admission mode is not stated")
	}
}

func resolves(root map[string]any, ref string) bool {
	if !strings.HasPrefix(ref, "#/") {
		return false
	}
	return dig(root, strings.Split(ref[2:], "/")...) != nil
}

func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// nilStore satisfies store.Store for tests that never call it.
type nilStore struct{ store.Store }
