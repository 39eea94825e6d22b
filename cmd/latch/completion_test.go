package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// complete asks the command tree for the completions of words, as the
// shells' scripts do (cobra's hidden __complete command), and returns the
// words offered.
func complete(t *testing.T, words ...string) []string {
	t.Helper()
	code, out, errOut := cli(t, append([]string{"__complete"}, words...)...)
	if code != 0 {
		t.Fatalf("latch __complete %q: exit %d %s", words, code, errOut)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(line, ":") { // the directive
			continue
		}
		w, _, _ := strings.Cut(line, "\t")
		got = append(got, w)
	}
	return got
}

func TestCompletion(t *testing.T) {
	for _, c := range []struct {
		words []string
		want  []string
	}{
		{[]string{""}, []string{"serve", "submit", "get", "ls", "wait", "cancel", "rm", "signal", "retry", "steps",
			"children", "attempts", "why", "version", "tenant", "schedule", "publish", "subscriptions", "bench", "prove", "migrate", "completion", "help"}},
		{[]string{"tenant", ""}, []string{"create", "get", "update", "disable", "enable", "rm", "key", "keys"}},
		{[]string{"tenant", "key", ""}, []string{"rm"}},
		{[]string{"schedule", ""}, []string{"ls", "get", "apply", "trigger", "pause", "resume", "rm"}},
		{[]string{"migrate", ""}, []string{"up", "down", "status"}},
		{[]string{"subscriptions", ""}, []string{"ls", "get", "put", "rm"}},
		{[]string{"publish", "--"}, []string{"--data", "--correlation-key", "--idempotency-key"}},
		{[]string{"subscriptions", "put", "--"}, []string{"--event", "--kind", "--queue", "--timeout", "--disabled"}},
		{[]string{"completion", ""}, []string{"bash", "zsh", "fish"}},
		{[]string{"ls", "--"}, []string{"--status", "--kind", "--queue", "--limit", "--json", "--url", "--key", "--tenant"}},
		{[]string{"submit", "--"}, []string{"--dedup-key", "--queue", "--max-attempts", "--concurrency-key"}},
		{[]string{"tenant", "create", "--"}, []string{"--max-inflight", "--dedup-ttl-seconds", "--url"}},
		{[]string{"tenant", "rm", "--"}, []string{"--force"}},
		{[]string{"schedule", "apply", "-"}, []string{"-f"}},
		{[]string{"schedule", "trigger", "--"}, []string{"--idempotency-key"}},
		{[]string{"migrate", "up", "--"}, []string{"--store"}},
		{[]string{"serve", "--"}, []string{"--addr", "--store", "--workers", "--config", "--print-config"}},
		{[]string{"wait", "--"}, []string{"--timeout"}},
		{[]string{"get", "-"}, []string{"-o", "--output"}},
		{[]string{"get", "-o", ""}, []string{"json", "table"}},
		{[]string{"tenant", "keys", "--output", ""}, []string{"json", "table"}},
		{[]string{"ls", "--status", ""}, []string{"queued", "running", "suspended", "succeeded", "failed", "cancelled", "skipped"}},
		{[]string{"ls", "--kind", "echo", "--status", ""}, []string{"failed"}},
		{[]string{"serve", "--log-level", ""}, []string{"debug", "info", "warn", "error"}},
		{[]string{"serve", "--log-format", ""}, []string{"auto", "json", "text"}},
		{[]string{"ls", "-o", ""}, []string{"json", "table"}},
	} {
		got := complete(t, c.words...)
		for _, w := range c.want {
			if !slices.Contains(got, w) {
				t.Errorf("latch %s<TAB>: %q lacks %q", strings.Join(c.words, " "), got, w)
			}
		}
		for _, w := range got {
			if strings.HasPrefix(w, "--") && strings.Contains(w, "_") {
				t.Errorf("latch %s<TAB> offers %q: the snake_case spellings are kept for scripts, not shown", strings.Join(c.words, " "), w)
			}
		}
	}
	// A flag's values only after that flag: no file names, no statuses
	// for an id.
	if got := complete(t, "get", ""); len(got) != 0 {
		t.Errorf("latch get <TAB>: %q, want nothing (ids only the server knows)", got)
	}
}

// latch completion refuses a shell it has no script for, as a usage error
// (exit 2), instead of printing its help.
func TestCompletionUnknownShell(t *testing.T) {
	for _, args := range [][]string{{"completion", "tcsh"}, {"completion"}} {
		code, out, errOut := cli(t, args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, "bash, fish, powershell, zsh") {
			t.Errorf("latch %s: exit %d, %q %q; want 2 and the shells named", strings.Join(args, " "), code, out, errOut)
		}
	}
}

// TestLatchAsMain is the latch command when the shell tests run this test
// binary as latch (latchOnPath): its arguments follow "--".
func TestLatchAsMain(t *testing.T) {
	if os.Getenv("LATCH_TEST_AS_MAIN") == "" {
		t.Skip("runs only as the latch of the shell completion tests")
	}
	i := slices.Index(os.Args, "--")
	os.Args = append([]string{"latch"}, os.Args[i+1:]...)
	main()
}

// latchOnPath puts a latch on PATH that is this test binary running main,
// for the shells' completion scripts to call.
func latchOnPath(t *testing.T) {
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\nLATCH_TEST_AS_MAIN=1 exec '" + self + "' -test.run='^TestLatchAsMain$' -- \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "latch"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// missing reports a shell or package the completion test needs and this
// machine lacks: it skips the test, or fails it when LATCH_REQUIRE_SHELLS
// is set (as .ci/run sets it, having installed them).
func missing(t *testing.T, what string, err error) {
	t.Helper()
	msg := fmt.Sprintf("%s is not installed (apt-get install %s): %v", what, what, err)
	if os.Getenv("LATCH_REQUIRE_SHELLS") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg + "; set LATCH_REQUIRE_SHELLS to make this a failure")
}

// shell runs script with sh and returns its output.
func shell(t *testing.T, sh, script string) string {
	t.Helper()
	path, err := exec.LookPath(sh)
	if err != nil {
		missing(t, sh, err)
	}
	cmd := exec.Command(path, "-c", script)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s -c %q: %v\n%s", sh, script, err, out)
	}
	return string(out)
}

// TestCompletionScripts loads each shell's script in that shell and, for
// bash and fish, completes a command line through it.
func TestCompletionScripts(t *testing.T) {
	latchOnPath(t)
	for _, sh := range []string{"bash", "zsh", "fish"} {
		if code, out, errOut := cli(t, "completion", sh); code != 0 || len(out) < 1000 {
			t.Fatalf("latch completion %s: exit %d, %d bytes %s", sh, code, len(out), errOut)
		}
	}
	// cobra's bash script needs the bash-completion package, as most
	// bash completions do (apt-get install bash-completion).
	const bashCompletion = "/usr/share/bash-completion/bash_completion"
	if _, err := os.Stat(bashCompletion); err != nil {
		missing(t, "bash-completion", err)
	}
	out := shell(t, "bash", `source `+bashCompletion+` && source <(latch completion bash) && complete -p latch &&
COMP_WORDS=(latch tenant ''); COMP_CWORD=2; COMP_LINE='latch tenant '; COMP_POINT=${#COMP_LINE}
__start_latch && printf '%s\n' "${COMPREPLY[@]}"`)
	if !strings.Contains(out, "complete -o default -F __start_latch latch") {
		t.Errorf("bash: latch has no completion:\n%s", out)
	}
	for _, w := range []string{"create", "keys", "disable"} {
		if !strings.Contains(out, "\n"+w+"\n") {
			t.Errorf("bash: latch tenant <TAB> lacks %s:\n%s", w, out)
		}
	}

	// A flag's values, through the script: the statuses after ls --status.
	out = shell(t, "bash", `source `+bashCompletion+` && source <(latch completion bash) &&
COMP_WORDS=(latch ls --status ''); COMP_CWORD=3; COMP_LINE='latch ls --status '; COMP_POINT=${#COMP_LINE}
__start_latch && printf '%s\n' "${COMPREPLY[@]}"`)
	for _, w := range []string{"queued", "succeeded", "failed"} {
		if !strings.Contains(out, w+"\n") {
			t.Errorf("bash: latch ls --status <TAB> lacks %s:\n%s", w, out)
		}
	}

	out = shell(t, "fish", `latch completion fish | source; and complete -C 'latch schedule '`)
	for _, w := range []string{"ls", "apply", "trigger"} {
		if !strings.Contains(out, "\n"+w+"\t") && !strings.HasPrefix(out, w+"\t") {
			t.Errorf("fish: latch schedule <TAB> lacks %s:\n%s", w, out)
		}
	}

	shell(t, "zsh", `autoload -U compinit && compinit -u && source <(latch completion zsh) && (( $+functions[_latch] ))`)
}
