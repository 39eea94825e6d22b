package api

import (
	"encoding/json"
	"fmt"
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

// TestOpenAPIStatesBehaviour checks the document says what the server does
// where a client could not guess it.
func TestOpenAPIStatesBehaviour(t *testing.T) {
	t.Parallel()
	var root map[string]any
	if err := json.Unmarshal(openAPIDocument, &root); err != nil {
		t.Fatal(err)
	}
	text := func(keys ...string) string {
		t.Helper()
		s, ok := dig(root, keys...).(string)
		if !ok {
			t.Fatalf("no text at %v", keys)
		}
		return s
	}
	for _, c := range []struct {
		at   []string
		want string
	}{
		{[]string{"paths", "/api/executions/{id}/events", "get", "description"},
			"one event per observed status change; changes between two reads may be merged"},
		{[]string{"paths", "/api/executions/{id}/events", "get", "description"}, "a client that stops reading loses the stream"},
		{[]string{"paths", "/api/executions/batch", "post", "description"}, "is answered 400 with code `payload_too_large`"},
		{[]string{"paths", "/api/executions/batch", "post", "description"}, "`retry_after_seconds`"},
		{[]string{"components", "schemas", "Problem", "properties", "retry_after_seconds", "description"}, "batch item answered 429"},
		{[]string{"paths", "/api/executions", "get", "description"}, "8 MiB"},
		{[]string{"components", "schemas", "TenantPatch", "properties", "inflight", "description"}, "ignored"},
		{[]string{"paths", "/api/tenants/{name}", "patch", "description"}, "`inflight`, read-only, is accepted and ignored"},
		{[]string{"paths", "/api/schedules/{name}", "put", "description"}, "are accepted and ignored"},
		{[]string{"paths", "/api/schedules/{name}", "put", "description"}, "keeps its next_run_at"},
		{[]string{"paths", "/api/schedules/{name}/trigger", "post", "description"}, "Each request is a tick of its own"},
		{[]string{"paths", "/api/schedules/{name}/trigger", "post", "description"}, "dedup_key `schedule:{name}:trigger:{hex SHA-256 of k}`"},
		{[]string{"paths", "/api/schedules/{name}/trigger", "post", "description"}, "status `skipped` (answered 201, no quota taken)"},
		{[]string{"paths", "/api/schedules/{name}/trigger", "post", "description"}, "200 with deduplicated true"},
		{[]string{"paths", "/api/schedules", "get", "description"}, fmt.Sprintf("at most %d, the default", maxListedSchedules)},
		{[]string{"paths", "/api/rate-limits/{key}", "put", "description"}, "Answers 200 whether it created or replaced"},
		{[]string{"components", "schemas", "ScheduleRequest", "properties", "running", "description"}, "ignored"},
		{[]string{"paths", "/api/workers/claim", "post", "description"}, "tenants with ready work take turns"},
		{[]string{"paths", "/api/events", "post", "description"}, "in the same store operation"},
		{[]string{"paths", "/api/events", "post", "description"}, "answers the first answer and changes nothing"},
		{[]string{"paths", "/api/events", "post", "description"}, "does not fail the publish"},
		{[]string{"components", "schemas", "SuspendRequest", "properties", "event", "description"}, "is never missed"},
		{[]string{"paths", "/api/subscriptions/{name}", "put", "description"}, "409 too_many_subscriptions, nothing written"},
		{[]string{"paths", "/api/subscriptions", "get", "description"},
			fmt.Sprintf("default %d, a tenant's every subscription; at most %d", defaultListedSubscriptions, maxListedSubscriptions)},
		{[]string{"paths", "/api/workers/claim", "post", "description"}, "priority orders a tenant's own executions"},
	} {
		if s := text(c.at...); !strings.Contains(s, c.want) {
			t.Errorf("%v does not say %q: %s", c.at, c.want, s)
		}
	}
	statuses := dig(root, "components", "schemas", "BatchItem", "properties", "status", "enum").([]any)
	if fmt.Sprint(statuses) != "[201 200 400 422 429]" {
		t.Errorf("batch item statuses %v, want those of docs/api.md: 201 200 400 422 429", statuses)
	}
}
