// Package changelog checks that CHANGELOG.md keeps the form of Keep a
// Changelog 1.1.0, which readers and release tooling rely on.
package changelog

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// kinds are Keep a Changelog's headings, in its order.
var kinds = []string{"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}

var (
	releaseRe = regexp.MustCompile(`^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$`)
	linkRe    = regexp.MustCompile(`^\[([^\]]+)\]: (\S+)$`)
	fileRe    = regexp.MustCompile(`\]\(([^)#:]+)(#[^)]*)?\)`)
)

// section is one `## ` heading of the changelog and what follows it.
type section struct {
	name  string   // "Unreleased" or a version
	date  string   // of a release
	lines []string // after the heading, up to the next one
}

func TestChangelogForm(t *testing.T) {
	text, err := os.ReadFile("../../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range fileRe.FindAllStringSubmatch(string(text), -1) {
		if _, err := os.Stat("../../" + m[1]); err != nil {
			t.Errorf("link to %s: %v", m[1], err)
		}
	}
	sections, links := parse(t, string(text))
	if len(sections) == 0 || sections[0].name != "Unreleased" {
		t.Fatalf("the first version heading must be ## [Unreleased]")
	}
	for i, s := range sections {
		if i > 0 && s.name == "Unreleased" {
			t.Errorf("## [Unreleased] appears more than once")
		}
		if i > 1 && !newer(sections[i-1].name, s.name) {
			t.Errorf("## [%s] follows ## [%s]: releases go newest first", s.name, sections[i-1].name)
		}
		if s.date != "" {
			if _, err := time.Parse(time.DateOnly, s.date); err != nil {
				t.Errorf("## [%s]: date %q: %v", s.name, s.date, err)
			}
		}
		checkKinds(t, s)
		if _, ok := links[s.name]; !ok {
			t.Errorf("## [%s] has no link reference at the bottom ([%s]: URL)", s.name, s.name)
		}
	}
	if len(sections) > 1 {
		latest := "v" + sections[1].name
		if u := links["Unreleased"]; !strings.HasSuffix(u, "/compare/"+latest+"...HEAD") {
			t.Errorf("[Unreleased] links to %q; want a comparison from %s to HEAD", u, latest)
		}
	}
}

// parse cuts text into its `## ` sections and its link references.
func parse(t *testing.T, text string) ([]section, map[string]string) {
	var sections []section
	links := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if m := linkRe.FindStringSubmatch(line); m != nil {
			links[m[1]] = m[2]
			continue
		}
		if !strings.HasPrefix(line, "## ") {
			if len(sections) > 0 {
				last := &sections[len(sections)-1]
				last.lines = append(last.lines, line)
			}
			continue
		}
		if line == "## [Unreleased]" {
			sections = append(sections, section{name: "Unreleased"})
			continue
		}
		m := releaseRe.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("heading %q: want ## [Unreleased] or ## [X.Y.Z] - YYYY-MM-DD", line)
			continue
		}
		sections = append(sections, section{name: m[1], date: m[2]})
	}
	return sections, links
}

// checkKinds checks that s uses Keep a Changelog's headings, each at most
// once, in its order, none empty, and that an entry takes at most two lines.
func checkKinds(t *testing.T, s section) {
	t.Helper()
	last, entries, entryLines := -1, 0, 0
	closeKind := func(kind string) {
		if kind != "" && entries == 0 {
			t.Errorf("## [%s]: ### %s has no entries", s.name, kind)
		}
	}
	kind := ""
	for _, line := range s.lines {
		switch {
		case strings.HasPrefix(line, "### "):
			closeKind(kind)
			kind, entries = strings.TrimPrefix(line, "### "), 0
			i := slices.Index(kinds, kind)
			switch {
			case i < 0:
				t.Errorf("## [%s]: ### %s is not one of %v", s.name, kind, kinds)
			case i <= last:
				t.Errorf("## [%s]: ### %s repeated or out of order (want %v)", s.name, kind, kinds)
			default:
				last = i
			}
		case strings.HasPrefix(line, "- "):
			if kind == "" {
				t.Errorf("## [%s]: entry before any ### heading: %q", s.name, line)
			}
			entries, entryLines = entries+1, 1
		case strings.HasPrefix(line, "  ") && entryLines > 0:
			entryLines++
			if entryLines == 3 {
				t.Errorf("## [%s] ### %s: an entry takes more than two lines: %q", s.name, kind, line)
			}
		default:
			entryLines = 0
		}
	}
	closeKind(kind)
}

// newer reports whether version a is newer than b (both X.Y.Z).
func newer(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := range 3 {
		na, _ := strconv.Atoi(pa[i])
		nb, _ := strconv.Atoi(pb[i])
		if na != nb {
			return na > nb
		}
	}
	return false
}
