package buildinfo

import (
	"runtime/debug"
	"slices"
	"testing"
)

// TestShortAndDescribe: the module version wins, else the revision (cut to
// 12, +dirty when modified); "devel" only when the build info has neither.
func TestShortAndDescribe(t *testing.T) {
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.time", Value: "2026-12-01T10:00:00Z"}}
	for _, c := range []struct {
		bi          *debug.BuildInfo
		short, long string
	}{
		{&debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.4.0"}, Settings: vcs},
			"v1.4.0", "v1.4.0, revision 0123456789abcdef0123 (2026-12-01T10:00:00Z), go1.26.0"},
		{&debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}, Settings: vcs},
			"0123456789ab", "0123456789ab, revision 0123456789abcdef0123 (2026-12-01T10:00:00Z), go1.26.0"},
		{&debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"},
			Settings: append(slices.Clone(vcs), debug.BuildSetting{Key: "vcs.modified", Value: "true"})},
			"0123456789ab+dirty", "0123456789ab+dirty, revision 0123456789abcdef0123 (2026-12-01T10:00:00Z, modified), go1.26.0"},
		{&debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}}, "devel", "devel, go1.26.0"},
		{nil, "devel", "devel"},
	} {
		b := Read(c.bi)
		if got := b.Short(); got != c.short {
			t.Errorf("Short: %q, want %q", got, c.short)
		}
		if got := b.Describe(); got != c.long {
			t.Errorf("Describe: %q, want %q", got, c.long)
		}
	}
}

// TestCurrent reads this test binary's own build info.
func TestCurrent(t *testing.T) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		t.Fatal("a test binary has build info")
	}
	if got, want := Current(), Read(bi); got != want {
		t.Fatalf("Current %+v, Read of the build info %+v", got, want)
	}
	if Current().GoVersion == "" {
		t.Fatal("Current has no Go version")
	}
}
