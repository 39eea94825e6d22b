package arch_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/latch-run/latch/internal/arch"
)

// graph builds a Graph of module "example.com/latch" from "path: imports"
// lines: a path is the module's, relative to it ("latch" is its root),
// "std:" and a path of the standard library, or "ext:" and a path of
// another module.
func graph(lines ...string) *arch.Graph {
	const module = "example.com/latch"
	g := &arch.Graph{Module: module, Packages: map[string]*arch.Package{}}
	external := map[string]bool{}
	abs := func(p string) string {
		switch {
		case p == "latch":
			return module
		case strings.HasPrefix(p, "std:"):
			return strings.TrimPrefix(p, "std:")
		case strings.HasPrefix(p, "ext:"):
			external[strings.TrimPrefix(p, "ext:")] = true
			return strings.TrimPrefix(p, "ext:")
		}
		return module + "/" + p
	}
	for _, l := range lines {
		from, imports, _ := strings.Cut(l, ":")
		p := &arch.Package{Path: abs(from)}
		for _, imp := range strings.Fields(imports) {
			p.Imports = append(p.Imports, abs(imp))
		}
		g.Packages[p.Path] = p
	}
	for _, p := range g.Packages {
		for _, imp := range p.Imports {
			if g.Packages[imp] == nil {
				g.Packages[imp] = &arch.Package{Path: imp, Standard: !strings.HasPrefix(imp, module) && !external[imp]}
			}
		}
	}
	return g
}

func check(g *arch.Graph, rules []arch.Rule) []string {
	var got []string
	for _, v := range g.Check(rules) {
		got = append(got, g.Format(v))
	}
	return got
}

// The rules fail on the layering latch had before they existed: the store
// benchmarks on the engine and linking testing into the binary, the
// console on the API.
func TestRulesCatchTheOldLayering(t *testing.T) {
	g := graph(
		"store: std:context std:errors",
		"store/sqlite: store std:database/sql",
		"store/storebench: store engine std:testing",
		"engine: store std:context",
		"api: store std:net/http",
		"console: api store",
		"latch: store/sqlite engine",
		"cmd/latch: latch api console store/storebench",
	)
	want := []string{
		"a store package depends on no layer above the store (engine, api, auth, console, kinds, the facade, cmd): store/storebench -> engine",
		"the latch binary links no testing package: cmd/latch -> store/storebench -> testing",
		"the console does not depend on the API (both authenticate through auth): console -> api",
		"a package that imports testing is imported by tests and other test helpers only: cmd/latch -> store/storebench",
	}
	if got := check(g, arch.Rules(g.Module)); !reflect.DeepEqual(got, want) {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Each rule of the layering fails on a graph that breaks it (and a
// storebench of the store alone breaks none).
func TestRulesCatchEachBreach(t *testing.T) {
	base := []string{
		"store: std:context",
		"store/sqlite: store",
		"store/postgres: store",
		"store/storetest: store std:testing",
		"auth: store",
		"engine: store",
		"api: auth store",
		"console: auth store",
		"schedule: std:time ext:github.com/robfig/cron/v3",
		"internal/batch: std:sync",
		"kinds: engine",
		"latch: store/sqlite store/postgres engine kinds",
		"cmd/latch: latch api console",
	}
	for _, c := range []struct{ add, want string }{
		{"store: engine", "package store imports only the standard library: store -> engine"},
		{"store: example.com/dep", "package store imports only the standard library: store -> example.com/dep"},
		{"store/sqlite: store api", "a store package depends on no layer above the store (engine, api, auth, console, kinds, the facade, cmd): store/sqlite -> api"},
		{"store/sqlite: store store/postgres", "a backend depends on no other backend and no store test or benchmark package: store/sqlite -> store/postgres"},
		{"api: auth store store/sqlite", "only the facade (package latch) and the binaries choose a backend: api -> store/sqlite"},
		{"engine: store kinds", "the engine depends on no front end (api, auth, console), kinds or facade: engine -> kinds"},
		{"auth: store api", "auth depends on the store contract only: no engine, front end, kinds or facade: auth -> api"},
		{"api: auth store console", "the API does not depend on the console: api -> console"},
		{"kinds: engine store/storetest", "a package that imports testing is imported by tests and other test helpers only: kinds -> store/storetest"},
		{"store/storebench: store", ""},
		{"schedule: std:time store", "package schedule imports only the standard library and its cron parser: schedule -> store"},
		{"schedule: std:time ext:github.com/other/dep", "package schedule imports only the standard library and its cron parser: schedule -> github.com/other/dep"},
		{"internal/batch: std:sync store", "a leaf internal package (backoff, batch, buildinfo, fault, labels, migration, sse) imports only the standard library: internal/batch -> store"},
		{"internal/sse: std:net/http ext:github.com/other/dep", "a leaf internal package (backoff, batch, buildinfo, fault, labels, migration, sse) imports only the standard library: internal/sse -> github.com/other/dep"},
		{"api: auth store engine", "the API does not depend on the engine: api -> engine"},
		{"api: auth store kinds", "the API does not depend on the engine: api -> kinds -> engine"},
		{"api/sub: engine", "the API does not depend on the engine: api/sub -> engine"},
		{"api: auth store engine/enginebench", "the API does not depend on the engine: api -> engine/enginebench"},
		{"cmd/latch: latch api console store/postgres", "the latch binary and the examples reach a backend through the facade (latch.Open, latch.Migrate), never by import: cmd/latch -> store/postgres"},
		{"examples/orderflow: latch store/sqlite", "the latch binary and the examples reach a backend through the facade (latch.Open, latch.Migrate), never by import: examples/orderflow -> store/sqlite"},
		{"internal/storewrap: store engine", "the store wrapper (internal/storewrap) depends on the store contract only, so any layer may wrap a store: internal/storewrap -> engine"},
		{"engine: store internal/storewrap", ""},
		{"latch: store/sqlite store/postgres engine kinds internal/storemetrics", "the store's Prometheus collectors (internal/storemetrics) are the binaries': the engine and the facade link no metrics of their own: latch -> internal/storemetrics"},
		{"kinds: engine store/storebench", "store/storebench is for benchmark drivers: latch bench, engine/enginebench, storetest.Benchmarks, the peer benchmarks and their reports (internal/benchcmp): kinds -> store/storebench"},
	} {
		lines := append([]string(nil), base...)
		from, _, _ := strings.Cut(c.add, ":")
		replaced := false
		for i, l := range lines {
			if strings.HasPrefix(l, from+":") {
				lines[i], replaced = c.add, true
			}
		}
		if !replaced {
			lines = append(lines, c.add)
		}
		// Other rules may catch a breach too (a chain through it); the
		// rule it breaks must.
		got := check(graph(lines...), arch.Rules("example.com/latch"))
		if c.want == "" && got != nil || c.want != "" && !slices.Contains(got, c.want) {
			t.Errorf("with %q: violations %q, want %q among them", c.add, got, c.want)
		}
	}
	if got := check(graph(base...), arch.Rules("example.com/latch")); got != nil {
		t.Errorf("the base graph breaks rules: %q", got)
	}
}

// Check follows chains of imports (a shortest one), or only direct imports
// for a Direct rule, and does not search past a forbidden package; an
// excepted import is neither a violation nor a way on.
func TestCheck(t *testing.T) {
	g := graph(
		"a: b c",
		"b: d",
		"c: x",
		"d: x",
		"x: y",
		"y:",
	)
	is := func(rels ...string) arch.Match {
		return func(p *arch.Package) bool {
			for _, r := range rels {
				if p.Path == g.Module+"/"+r {
					return true
				}
			}
			return false
		}
	}
	for _, c := range []struct {
		rule arch.Rule
		want []string
	}{
		{arch.Rule{Name: "r", From: is("a"), Deny: is("x")}, []string{"r: a -> c -> x"}},
		{arch.Rule{Name: "r", From: is("a"), Deny: is("x"), Direct: true}, nil},
		{arch.Rule{Name: "r", From: is("a"), Deny: is("c"), Direct: true}, []string{"r: a -> c"}},
		{arch.Rule{Name: "r", From: is("a", "d"), Deny: is("x", "y")}, []string{"r: a -> c -> x", "r: d -> x"}},
		{arch.Rule{Name: "r", From: is("a"), Deny: is("y")}, []string{"r: a -> c -> x -> y"}},
		{arch.Rule{Name: "r", From: is("y"), Deny: is("a")}, nil},
		{arch.Rule{Name: "r", From: is("a"), Deny: is("x"), Except: []arch.Import{{From: g.Module + "/c", To: g.Module + "/x"}}}, []string{"r: a -> b -> d -> x"}},
		{arch.Rule{Name: "r", From: is("a"), Deny: is("y"), Except: []arch.Import{{From: g.Module + "/c", To: g.Module + "/x"}}}, []string{"r: a -> b -> d -> x -> y"}},
	} {
		if got := check(g, []arch.Rule{c.rule}); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q, want %q", got, c.want)
		}
	}
}
