// Package arch checks latch's layering: which packages may depend on which.
// Its test loads the module's import graph (go list) and fails on any
// dependency a rule forbids, naming the chain of imports that makes it, so
// the boundaries hold by a test that runs with `go test ./...`, not by
// convention. The rules are in rules.go.
//
// It stays in internal/: its one test checks the whole module, so it has
// no user to stand beside.
package arch

import (
	"slices"
	"strings"
)

// Package is one node of the import graph: a package and what its non-test
// files import.
type Package struct {
	Path     string
	Standard bool // part of the standard library
	Imports  []string
}

// Graph is an import graph: every package of a module and everything they
// depend on, by import path.
type Graph struct {
	Module   string // the module's path; its packages are Module and Module/...
	Packages map[string]*Package
}

// A Match selects packages.
type Match func(*Package) bool

// A Rule forbids the packages From selects to depend on the ones Deny
// selects: through their own imports only when Direct, else through any
// chain of imports. An import Except lists is allowed, and the search does
// not go past it.
type Rule struct {
	Name   string // the rule, as a failure states it
	From   Match
	Deny   Match
	Direct bool
	Except []Import
}

// Import is one package's import of another, by import path.
type Import struct{ From, To string }

// Violation is a dependency a rule forbids and the chain of imports that
// makes it: Chain[0] imports Chain[1], which imports Chain[2], ..., and the
// last is the forbidden package.
type Violation struct {
	Rule  string
	Chain []string
}

// Check returns every violation of rules in g, in a stable order. For each
// package a rule applies to and each forbidden package it reaches, it
// gives one shortest chain; the search does not go past a forbidden
// package (what that one imports is its own rules' business).
func (g *Graph) Check(rules []Rule) []Violation {
	paths := make([]string, 0, len(g.Packages))
	for p := range g.Packages {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	var out []Violation
	for _, r := range rules {
		for _, from := range paths {
			if r.From(g.Packages[from]) {
				out = append(out, g.check(r, from)...)
			}
		}
	}
	return out
}

// check walks the imports of from breadth first, so each chain is a
// shortest one.
func (g *Graph) check(r Rule, from string) []Violation {
	var out []Violation
	parent := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		at := queue[0]
		queue = queue[1:]
		p := g.Packages[at]
		if p == nil {
			continue
		}
		for _, imp := range p.Imports {
			if _, seen := parent[imp]; seen || slices.Contains(r.Except, Import{at, imp}) {
				continue
			}
			parent[imp] = at
			q := g.Packages[imp]
			if q == nil {
				q = &Package{Path: imp}
			}
			if r.Deny(q) {
				out = append(out, Violation{Rule: r.Name, Chain: chain(parent, imp)})
				continue
			}
			if !r.Direct {
				queue = append(queue, imp)
			}
		}
	}
	return out
}

// chain follows parent back from to the start of the walk.
func chain(parent map[string]string, to string) []string {
	var c []string
	for p := to; p != ""; p = parent[p] {
		c = append(c, p)
	}
	slices.Reverse(c)
	return c
}

// Format states v with the module's packages named relative to it (the
// module itself as "latch").
func (g *Graph) Format(v Violation) string {
	c := make([]string, len(v.Chain))
	for i, p := range v.Chain {
		c[i] = g.short(p)
	}
	return v.Rule + ": " + strings.Join(c, " -> ")
}

func (g *Graph) short(path string) string {
	if path == g.Module {
		return "latch"
	}
	if rel, ok := strings.CutPrefix(path, g.Module+"/"); ok {
		return rel
	}
	return path
}
