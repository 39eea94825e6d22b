package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestEveryCommandHasAnExample walks the command tree: every command and
// subcommand (completion's too) has an example its --help prints, the
// example invokes that command (or, for tenant, schedule and migrate, one
// of its subcommands), and the example's flags are ones the command knows
// (run with them and -h, it stops at -h, not at an unknown flag).
func TestEveryCommandHasAnExample(t *testing.T) {
	root := newRoot(io.Discard, io.Discard)
	var walk func(c *cobra.Command)
	seen := map[string]bool{}
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" {
				continue
			}
			path := strings.TrimPrefix(sub.CommandPath(), "latch ")
			seen[path] = true
			t.Run(path, func(t *testing.T) { checkExample(t, root, sub, path) })
			walk(sub)
		}
	}
	walk(root)
	for _, want := range []string{"tenant key rm", "tenant keys", "schedule apply", "migrate status", "completion fish", "wait"} {
		if !seen[want] {
			t.Errorf("the walk missed latch %s", want)
		}
	}
	for cmd := range examples {
		if !seen[cmd] {
			t.Errorf("example for %q, which is no command", cmd)
		}
	}
}

func checkExample(t *testing.T, root, cmd *cobra.Command, path string) {
	args := append(strings.Fields(path), "--help")
	code, out, errOut := cli(t, args...)
	help := out + errOut
	if code != exitOK || errOut != "" {
		t.Errorf("latch %s --help: exit %d, stderr %q; want the help on stdout and exit 0", path, code, errOut)
	}
	_, ex, ok := strings.Cut(help, "\nExamples:\n  ")
	if !ok {
		t.Fatalf("latch %s --help has no example:\n%s", path, help)
	}
	ex, _, _ = strings.Cut(ex, "\n")
	if !strings.HasPrefix(ex+" ", "latch "+path+" ") {
		t.Fatalf("latch %s: the example %q is not an invocation of it", path, ex)
	}
	// The command the example runs: this one or, for a command of
	// subcommands, one of them.
	fields := strings.Fields(ex)[1:]
	target, rest, err := root.Find(fields)
	if err != nil || !strings.HasPrefix(target.CommandPath()+" ", cmd.CommandPath()+" ") {
		t.Fatalf("latch %s: the example %q runs %s (%v)", path, ex, target.CommandPath(), err)
	}
	if _, ours := cmd.Annotations["latch"]; !ours {
		return
	}
	targetPath := strings.TrimPrefix(target.CommandPath(), "latch ")
	if err := parseOnly(targetPath, rest); err != nil {
		t.Errorf("latch %s: the example %q: %v", path, ex, err)
	}
}

// parseOnly parses fields (the example's words after the command, up to a
// shell's &&) with cmd's flag set by running cmd with -h after them: a
// flag cmd does not know fails the parse before -h is seen.
func parseOnly(cmd string, fields []string) error {
	if i := slices.Index(fields, "&&"); i >= 0 {
		fields = fields[:i]
	}
	args := slices.Concat(strings.Fields(cmd), fields, []string{"-h"})
	var errOut strings.Builder
	if code := run(context.Background(), args, io.Discard, &errOut); code != exitOK {
		return fmt.Errorf("exit %d: %s", code, strings.SplitN(errOut.String(), "\n", 2)[0])
	}
	return nil
}
