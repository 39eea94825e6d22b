package main

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
)

// runVersion is `latch version` (and `latch --version`): the module
// version and the VCS revision this binary was built from.
func runVersion(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("version")
	if err := parse(ctx, fs, args, 0, 0); err != nil {
		return err
	}
	bi, _ := debug.ReadBuildInfo()
	_, err := fmt.Fprintln(out, "latch "+describeBuild(bi))
	return err
}

// build is what the build info says of this binary.
type build struct {
	version  string // the module's: v1.2.3 or a pseudo-version; "" when built in its own tree
	revision string // the VCS commit
	time     string // of the commit
	modified bool   // built from a tree with changes not committed
	goVer    string
}

func readBuild(bi *debug.BuildInfo) build {
	var b build
	if bi == nil {
		return b
	}
	b.goVer = bi.GoVersion
	if v := bi.Main.Version; v != "(devel)" {
		b.version = v
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.revision = s.Value
		case "vcs.time":
			b.time = s.Value
		case "vcs.modified":
			b.modified = s.Value == "true"
		}
	}
	return b
}

// shortVersion names a build in a word: its module version, else its
// revision (12 digits, "+dirty" when modified), "devel" only when the
// build info has neither. The server reports it (the console shows it).
func shortVersion(bi *debug.BuildInfo) string {
	b := readBuild(bi)
	switch {
	case b.version != "":
		return b.version
	case b.revision != "":
		rev := b.revision[:min(12, len(b.revision))]
		if b.modified {
			rev += "+dirty"
		}
		return rev
	}
	return "devel"
}

// describeBuild is the line of latch version after "latch ": the short
// version, then the revision, its time and whether the tree was modified,
// then Go's version.
func describeBuild(bi *debug.BuildInfo) string {
	b := readBuild(bi)
	parts := []string{shortVersion(bi)}
	if b.revision != "" {
		rev := "revision " + b.revision
		var notes []string
		if b.time != "" {
			notes = append(notes, b.time)
		}
		if b.modified {
			notes = append(notes, "modified")
		}
		if len(notes) > 0 {
			rev += " (" + strings.Join(notes, ", ") + ")"
		}
		parts = append(parts, rev)
	}
	if b.goVer != "" {
		parts = append(parts, b.goVer)
	}
	return strings.Join(parts, ", ")
}
