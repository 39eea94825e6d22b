package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
)

// TestEveryCommandHasAnExample: every command and subcommand has an
// example its -h prints, and the example's flags are ones the command
// knows (run with them and -h, it stops at -h, not at an unknown flag).
func TestEveryCommandHasAnExample(t *testing.T) {
	var names []string
	for name := range commands {
		names = append(names, name)
	}
	subs := map[string][]string{
		"tenant":   {"create", "get", "update", "key", "keys", "key rm", "disable", "enable", "rm"},
		"schedule": {"ls", "get", "apply", "trigger", "rm"},
		"migrate":  {"up", "down", "status"},
	}
	var all []string
	for _, name := range names {
		if s, ok := subs[name]; ok {
			for _, sub := range s {
				all = append(all, name+" "+sub)
			}
			continue
		}
		all = append(all, name)
	}
	for _, cmd := range all {
		ex, ok := examples[cmd]
		if !ok {
			t.Errorf("latch %s has no example", cmd)
			continue
		}
		var usage strings.Builder
		fs := newFlags(cmd, "")
		fs.SetOutput(&usage)
		fs.Usage()
		if !strings.Contains(usage.String(), "example:\n  "+ex+"\n") {
			t.Errorf("latch %s -h: want the example %q in:\n%s", cmd, ex, usage.String())
		}
		// The example's flags (up to its arguments) parse.
		fields := strings.Fields(ex)[1+len(strings.Fields(cmd)):]
		if err := parseOnly(cmd, fields); err != nil {
			t.Errorf("latch %s: the example %q: %v", cmd, ex, err)
		}
	}
	for cmd := range examples {
		if !slices.Contains(all, cmd) {
			t.Errorf("example for %q, which is no command", cmd)
		}
	}
}

// parseOnly parses fields with cmd's flag set by running cmd with -h after
// the flags: a flag cmd does not know fails the parse before -h is seen.
func parseOnly(cmd string, fields []string) error {
	var flags []string
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if !strings.HasPrefix(f, "-") {
			break
		}
		flags = append(flags, f)
		if !strings.Contains(f, "=") && i+1 < len(fields) && !strings.HasPrefix(fields[i+1], "-") &&
			!isBoolFlag(f) {
			flags = append(flags, fields[i+1])
			i++
		}
	}
	args := append(strings.Fields(cmd), flags...)
	args = append(args, "-h")
	if code := run(context.Background(), args, io.Discard, io.Discard); code != exitUsage {
		return fmt.Errorf("exit %d", code)
	}
	var errOut strings.Builder
	run(context.Background(), args, io.Discard, &errOut)
	if strings.Contains(errOut.String(), "flag provided but not defined") {
		return fmt.Errorf("%s", strings.SplitN(errOut.String(), "\n", 2)[0])
	}
	return nil
}

func isBoolFlag(f string) bool { return f == "--force" || f == "-force" || f == "--json" }
