// Package buildinfo names the build of the running program from Go's build
// info: its module version, else its VCS revision. `latch version` prints
// it, and every server reports it (the console's servers page), latch serve
// and programs that embed latch.Worker alike.
package buildinfo

import (
	"runtime/debug"
	"strings"
)

// Build is what the build info says of a program.
type Build struct {
	Version   string // the main module's: v1.2.3 or a pseudo-version; "" when built in its own tree
	Revision  string // the VCS commit
	Time      string // of the commit
	Modified  bool   // built from a tree with changes not committed
	GoVersion string
}

// Read reads bi (nil: a program without build info).
func Read(bi *debug.BuildInfo) Build {
	var b Build
	if bi == nil {
		return b
	}
	b.GoVersion = bi.GoVersion
	if v := bi.Main.Version; v != "(devel)" {
		b.Version = v
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// Short names the build in a word: its module version, else its revision
// (12 digits, "+dirty" when modified), "devel" only when it has neither.
func (b Build) Short() string {
	switch {
	case b.Version != "":
		return b.Version
	case b.Revision != "":
		rev := b.Revision[:min(12, len(b.Revision))]
		if b.Modified {
			rev += "+dirty"
		}
		return rev
	}
	return "devel"
}

// Describe is Short, then the revision, its time and whether the tree was
// modified, then Go's version.
func (b Build) Describe() string {
	parts := []string{b.Short()}
	if b.Revision != "" {
		rev := "revision " + b.Revision
		var notes []string
		if b.Time != "" {
			notes = append(notes, b.Time)
		}
		if b.Modified {
			notes = append(notes, "modified")
		}
		if len(notes) > 0 {
			rev += " (" + strings.Join(notes, ", ") + ")"
		}
		parts = append(parts, rev)
	}
	if b.GoVersion != "" {
		parts = append(parts, b.GoVersion)
	}
	return strings.Join(parts, ", ")
}

// Current is the running program's build.
func Current() Build {
	bi, _ := debug.ReadBuildInfo()
	return Read(bi)
}
