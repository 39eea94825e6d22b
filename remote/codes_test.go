package remote

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestSentinelsMatchServerCodes reads the problem codes of api/problem.go
// and fails unless each has exactly one sentinel here, and each sentinel a
// code there.
func TestSentinelsMatchServerCodes(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "../api/problem.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Names) != 1 || !strings.HasPrefix(vs.Names[0].Name, "Code") || len(vs.Values) != 1 {
			return true
		}
		if lit, ok := vs.Values[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
			code, _ := strconv.Unquote(lit.Value)
			codes = append(codes, code)
		}
		return true
	})
	if len(codes) < 20 {
		t.Fatalf("read %d codes from api/problem.go", len(codes))
	}
	var ours []string
	for _, s := range sentinels {
		ours = append(ours, s.Code())
	}
	for _, c := range codes {
		if n := count(ours, c); n != 1 {
			t.Errorf("code %q has %d sentinels, want 1", c, n)
		}
	}
	for _, c := range ours {
		if !slices.Contains(codes, c) {
			t.Errorf("sentinel of %q: no such code in api/problem.go", c)
		}
	}
}

func count(s []string, v string) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}

// TestErrorIsMatchesOneSentinel: an answer of each code is its sentinel and
// no other.
func TestErrorIsMatchesOneSentinel(t *testing.T) {
	for _, s := range sentinels {
		e := &Error{Status: 409, Code: s.Code()}
		for _, other := range sentinels {
			if got, want := e.Is(other), other == s; got != want {
				t.Errorf("%s Is %v: %v", e.Code, other, got)
			}
		}
	}
}
