package arch

import (
	"slices"
	"strings"
)

// backends are the store implementations, by path in the module.
var backends = []string{"store/sqlite", "store/postgres", "store/redis"}

// leaves are the internal packages that are helpers of the standard
// library's kind: they import nothing else, so any layer may use them.
// The other internal packages speak the store contract (storewrap,
// storemetrics, tracing, watch), or are harnesses: arch (this test),
// benchcmp (the peer benchmarks' reports, used by bench/asynq and
// bench/river, two modules of their own) and testdb (every backend's and
// front end's tests).
var leaves = []string{"backoff", "batch", "buildinfo", "fault", "labels", "migration", "sse"}

// cronParser is the one module package schedule builds on: it parses cron
// expressions (schedule checks their fields first, cronfields.go).
const cronParser = "github.com/robfig/cron/v3"

// Rules are latch's layering, for the module whose path is module:
//
//	cmd/latch, bench/...        the binaries
//	examples/...                example programs, built on the facade
//	latch (the facade)          opens a backend by URL; the Go API
//	api, console                the front ends; both authenticate through auth
//	kinds, engine               the built-in kinds; the worker and services
//	auth                        API keys
//	store/sqlite|postgres|redis the backends
//	store                       the contract every layer speaks
//	schedule, internal/<leaves> the standard library's kind of helpers
//
// Each layer depends on the ones below it only, and only the facade and
// the binaries choose a backend. The API does not import the engine at
// all: the binary's wiring feeds its in-process workers' hooks into the
// API's metrics (api.Server.OnWorkerClaim and OnWorkerRun take plain
// values), and a schedule's resume is the store's (store.ResumeSchedule,
// its next tick by schedule.NextTick).
func Rules(module string) []Rule {
	m := matchers{module}
	above := []string{"engine", "api", "auth", "console", "kinds", "cmd"}
	leafPaths := make([]string, len(leaves))
	for i, l := range leaves {
		leafPaths[i] = "internal/" + l
	}
	rules := []Rule{{
		Name:   "package store imports only the standard library",
		From:   m.is("store"),
		Deny:   not(standard),
		Direct: true,
	}, {
		Name:   "package schedule imports only the standard library and its cron parser",
		From:   m.is("schedule"),
		Deny:   not(anyOf(standard, func(p *Package) bool { return p.Path == cronParser })),
		Direct: true,
	}, {
		Name:   "a leaf internal package (" + strings.Join(leaves, ", ") + ") imports only the standard library",
		From:   m.is(leafPaths...),
		Deny:   not(standard),
		Direct: true,
	}, {
		Name: "the API does not depend on the engine",
		From: m.under("api"),
		Deny: m.under("engine"),
	}, {
		Name: "a store package depends on no layer above the store (engine, api, auth, console, kinds, the facade, cmd)",
		From: m.under("store"),
		Deny: anyOf(m.is(""), m.under(above...)),
	}, {
		Name: "only the facade (package latch) and the binaries choose a backend",
		From: m.in(not(anyOf(m.is(""), m.under("cmd", "bench", "test", "examples"), m.under(backends...)))),
		Deny: m.under(backends...),
	}, {
		Name:   "the latch binary and the examples reach a backend through the facade (latch.Open, latch.Migrate), never by import",
		From:   m.under("cmd", "examples"),
		Deny:   m.under(backends...),
		Direct: true,
	}, {
		Name: "the latch binary links no testing package",
		From: m.is("cmd/latch"),
		Deny: func(p *Package) bool { return p.Path == "testing" || strings.HasPrefix(p.Path, "testing/") },
	}, {
		Name: "the console does not depend on the API (both authenticate through auth)",
		From: m.under("console"),
		Deny: m.under("api"),
	}, {
		Name: "the API does not depend on the console",
		From: m.under("api"),
		Deny: m.under("console"),
	}, {
		Name: "auth depends on the store contract only: no engine, front end, kinds or facade",
		From: m.under("auth"),
		Deny: anyOf(m.is(""), m.under("engine", "api", "console", "kinds", "cmd")),
	}, {
		Name: "the engine depends on no front end (api, auth, console), kinds or facade",
		From: m.under("engine"),
		Deny: anyOf(m.is(""), m.under("api", "auth", "console", "kinds", "cmd")),
	}, {
		Name:   "a package that imports testing is imported by tests and other test helpers only",
		From:   m.in(not(importsTesting)),
		Deny:   m.in(importsTesting),
		Direct: true,
	}, {
		Name:   "the store wrapper (internal/storewrap) depends on the store contract only, so any layer may wrap a store",
		From:   m.is("internal/storewrap"),
		Deny:   m.in(not(m.is("store"))),
		Direct: true,
	}, {
		Name:   "the store's Prometheus collectors (internal/storemetrics) are the binaries': the engine and the facade link no metrics of their own",
		From:   m.in(not(anyOf(m.under("cmd", "bench"), m.is("internal/storemetrics")))),
		Deny:   m.is("internal/storemetrics"),
		Direct: true,
	}, {
		Name:   "store/storebench is for benchmark drivers: latch bench, engine/enginebench, storetest.Benchmarks, the peer benchmarks and their reports (internal/benchcmp)",
		From:   m.in(not(anyOf(m.is("cmd/latch", "engine/enginebench", "store/storetest", "internal/benchcmp"), m.under("bench")))),
		Deny:   m.is("store/storebench"),
		Direct: true,
	}}
	for _, b := range backends {
		others := slices.DeleteFunc(slices.Clone(backends), func(o string) bool { return o == b })
		rules = append(rules, Rule{
			Name: "a backend depends on no other backend and no store test or benchmark package",
			From: m.under(b),
			Deny: m.under(append(others, "store/storetest", "store/storebench")...),
		})
	}
	return rules
}

// matchers builds Matches on paths relative to a module.
type matchers struct{ module string }

func (m matchers) abs(rel string) string {
	if rel == "" {
		return m.module
	}
	return m.module + "/" + rel
}

// is matches the module's packages at rels exactly ("" is the module's
// root package).
func (m matchers) is(rels ...string) Match {
	return func(p *Package) bool {
		return slices.ContainsFunc(rels, func(r string) bool { return p.Path == m.abs(r) })
	}
}

// under matches the module's packages at rels and below them.
func (m matchers) under(rels ...string) Match {
	return func(p *Package) bool {
		return slices.ContainsFunc(rels, func(r string) bool {
			return p.Path == m.abs(r) || strings.HasPrefix(p.Path, m.abs(r)+"/")
		})
	}
}

// in matches the module's packages that match also.
func (m matchers) in(also Match) Match {
	inModule := m.under("")
	return func(p *Package) bool { return inModule(p) && also(p) }
}

func standard(p *Package) bool { return p.Standard }

func importsTesting(p *Package) bool { return slices.Contains(p.Imports, "testing") }

func not(a Match) Match { return func(p *Package) bool { return !a(p) } }

func anyOf(ms ...Match) Match {
	return func(p *Package) bool { return slices.ContainsFunc(ms, func(m Match) bool { return m(p) }) }
}
