package main

import (
	"strings"
	"testing"
)

// latch prove on its default store, a temporary SQLite file: progress
// lines, the checks, the verdict, exit 0.
func TestProveShort(t *testing.T) {
	code, out, errOut := cli(t, "prove", "--duration", "3s", "--rate", "20", "--report-every", "1s")
	t.Log("\n" + out + errOut)
	if code != 0 {
		t.Fatalf("latch prove: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"(temporary)", "submits/s", "goroutines", "inflight", "checks:", "ok   I2", "\nPASS: no breach in 3"} {
		if !strings.Contains(out, want) {
			t.Errorf("the output has no %q", want)
		}
	}
}

func TestProveUsage(t *testing.T) {
	for _, args := range [][]string{
		{"prove", "--rate", "0"},
		{"prove", "--duration", "-1s"},
		{"prove", "--no-such-flag"},
	} {
		if code, _, errOut := cli(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errOut)
		}
	}
	code, _, errOut := cli(t, "prove", "--duration", "1s", "--store", "mysql://nowhere")
	if code != 1 || !strings.Contains(errOut, "store URL") {
		t.Errorf("an unknown store: exit %d, %q", code, errOut)
	}
}
