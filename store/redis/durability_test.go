package redis

import (
	"strings"
	"testing"
)

func TestDurabilityWarning(t *testing.T) {
	cases := []struct {
		appendonly, appendfsync, save string
		want                          string // a word the warning must contain; "" = no warning
	}{
		{"no", "everysec", "", "without persistence"},
		{"no", "everysec", "3600 1", "snapshots only"},
		{"yes", "everysec", "", "last second"},
		{"yes", "no", "", "appendfsync no"},
		{"yes", "always", "", ""},
	}
	for _, c := range cases {
		got := durabilityWarning(c.appendonly, c.appendfsync, c.save)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("appendonly=%s appendfsync=%s save=%q: %q, want a warning with %q",
				c.appendonly, c.appendfsync, c.save, got, c.want)
		}
	}
}
