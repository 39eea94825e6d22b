package api

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDocsMatchRoutes keeps docs/api.md true to the server: every route is
// written there, every "METHOD /path" it writes is a route, and every
// problem code is listed.
func TestDocsMatchRoutes(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	// Tables write "| GET | `/api/x` |", prose "`GET /api/x`": both read
	// "GET /api/x" once backticks and cell bars are gone.
	text := strings.Join(strings.Fields(strings.NewReplacer("`", "", "|", " ").Replace(string(raw))), " ")
	var registered []string
	for _, rt := range New(Config{Store: nilStore{}}).routes() {
		registered = append(registered, rt.pattern)
		if !strings.Contains(text, rt.pattern) {
			t.Errorf("route %q is not in docs/api.md", rt.pattern)
		}
	}
	for _, m := range regexp.MustCompile(`\b(GET|POST|PUT|PATCH|DELETE) (/[A-Za-z0-9/{}_.-]*)`).FindAllString(text, -1) {
		m = strings.TrimRight(m, ".")
		if !slices.Contains(registered, m) {
			t.Errorf("docs/api.md writes %q, which is not a route", m)
		}
	}
	for code := range codeInfo {
		if !strings.Contains(string(raw), "`"+string(code)+"`") {
			t.Errorf("problem code %q is not in docs/api.md", code)
		}
	}
}
