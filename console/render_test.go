package console

import (
	"testing"
	"time"
)

func TestSpan(t *testing.T) {
	for d, want := range map[time.Duration]string{
		350 * time.Millisecond: "350ms", 4200 * time.Millisecond: "4.2s", 45 * time.Second: "45s",
		185 * time.Second: "3m 05s", 2*time.Hour + 10*time.Minute: "2h 10m", 76 * time.Hour: "3d 4h", -90 * time.Second: "1m 30s",
	} {
		if got := span(d); got != want {
			t.Errorf("span(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestShorten(t *testing.T) {
	for _, c := range []struct {
		s    string
		max  int
		want string
	}{{"abc", 5, "abc"}, {"abcde", 5, "abcde"}, {"abcdef", 5, "ab..."}, {"ééééééé", 6, "ééé..."}, {"", 4, ""}} {
		if got := shorten(c.s, c.max); got != c.want {
			t.Errorf("shorten(%q, %d) = %q, want %q", c.s, c.max, got, c.want)
		}
	}
}
