package store

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestEverySentinelIsClassified fails when the package declares a sentinel
// that is neither in Refusals nor named here as a failure, so a new one
// cannot be counted as a store failure by metrics (or retried by workers)
// by omission.
func TestEverySentinelIsClassified(t *testing.T) {
	failures := map[string]bool{"ErrUnavailable": true}
	refusals := map[error]bool{}
	for _, r := range Refusals {
		refusals[r] = true
	}
	byName := map[string]error{}
	for name, err := range sentinels() {
		byName[name] = err
	}
	var decls []ast.Decl
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		decls = append(decls, f.Decls...)
	}
	n := 0
	for _, d := range decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			continue
		}
		for _, spec := range g.Specs {
			for _, id := range spec.(*ast.ValueSpec).Names {
				if !strings.HasPrefix(id.Name, "Err") {
					continue
				}
				n++
				e, known := byName[id.Name]
				switch {
				case failures[id.Name]:
					if known && IsRefusal(e) {
						t.Errorf("%s is a failure but IsRefusal holds for it", id.Name)
					}
				case !known:
					t.Errorf("%s: add it to sentinels() below, and to Refusals or the failures", id.Name)
				case !IsRefusal(e):
					t.Errorf("%s is neither in Refusals nor a failure", id.Name)
				}
			}
		}
	}
	if n < 10 {
		t.Fatalf("found %d sentinels: the parse went wrong", n)
	}
}

// sentinels names every sentinel of the package for the test above.
func sentinels() map[string]error {
	return map[string]error{
		"ErrNotFound": ErrNotFound, "ErrExists": ErrExists, "ErrTenantExists": ErrTenantExists,
		"ErrQuotaExceeded": ErrQuotaExceeded, "ErrDedupKeyReused": ErrDedupKeyReused,
		"ErrLeaseLost": ErrLeaseLost, "ErrNotTerminal": ErrNotTerminal, "ErrNotActive": ErrNotActive,
		"ErrTooManySteps": ErrTooManySteps, "ErrJournalTooLarge": ErrJournalTooLarge,
		"ErrSignalBufferFull": ErrSignalBufferFull, "ErrStorageExceeded": ErrStorageExceeded,
		"ErrNotFailed": ErrNotFailed, "ErrScheduleLimit": ErrScheduleLimit, "ErrInvalid": ErrInvalid,
		"ErrUnavailable": ErrUnavailable, "ErrTooManyChildren": ErrTooManyChildren,
		"ErrTooManySubscriptions": ErrTooManySubscriptions,
	}
}
