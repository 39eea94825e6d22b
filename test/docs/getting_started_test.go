// Package docs runs the documentation's walkthroughs as tests: each shell
// block of a document, in order, in one bash, and each shown output
// compared with what the commands print.
package docs

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A walkthrough is read from the Markdown's fenced blocks:
//
//   - a block fenced as ```sh is run;
//   - a block fenced as ```text that follows it, with only blank lines
//     between, is what it prints (stdout and stderr), compared line by
//     line with trailing spaces ignored; "…" in a line stands for any
//     text, and a line of only "…" for any number of lines;
//   - other blocks (```go, ```yaml, ...) are not run.

// block is one ```sh block and the output shown after it ("" when none).
type block struct {
	line   int // the line of its opening fence, for messages
	script string
	want   string
	hasOut bool
}

var fence = regexp.MustCompile("^```\\s*([A-Za-z0-9_-]*)\\s*$")

// parseBlocks reads the runnable blocks of a Markdown document.
func parseBlocks(doc string) ([]block, error) {
	var blocks []block
	lines := strings.Split(doc, "\n")
	lastShEnd := -2 // the line of the closing fence of the last sh block
	for i := 0; i < len(lines); i++ {
		m := fence.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		lang, start := m[1], i
		var body []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			body = append(body, lines[i])
		}
		if i == len(lines) {
			return nil, fmt.Errorf("line %d: the block is not closed", start+1)
		}
		text := strings.Join(body, "\n")
		switch lang {
		case "sh":
			blocks = append(blocks, block{line: start + 1, script: text})
			lastShEnd = i
		case "text":
			follows := lastShEnd >= 0 && strings.TrimSpace(strings.Join(lines[lastShEnd+1:start], "")) == ""
			if !follows {
				return nil, fmt.Errorf("line %d: an output block that does not follow a sh block", start+1)
			}
			b := &blocks[len(blocks)-1]
			if b.hasOut {
				return nil, fmt.Errorf("line %d: a second output block for the sh block of line %d", start+1, b.line)
			}
			b.want, b.hasOut = text, true
		}
	}
	return blocks, nil
}

// outputPattern turns an output block into a regexp matching the whole
// output (trailing spaces trimmed, ending in a newline).
func outputPattern(want string) *regexp.Regexp {
	var re strings.Builder
	re.WriteString(`\A`)
	for l := range strings.SplitSeq(want, "\n") {
		l = strings.TrimRight(l, " \t")
		if strings.TrimSpace(l) == "…" {
			re.WriteString(`(?:[^\n]*\n)*?`)
			continue
		}
		parts := strings.Split(l, "…")
		for i, p := range parts {
			parts[i] = regexp.QuoteMeta(p)
		}
		re.WriteString(strings.Join(parts, `[^\n]*`) + `\n`)
	}
	re.WriteString(`\z`)
	return regexp.MustCompile(re.String())
}

// normalize trims each line's trailing spaces and the output's blank lines
// at either end, and ends it with one newline.
func normalize(out string) string {
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t\r")
	}
	s := strings.Trim(strings.Join(lines, "\n"), "\n")
	return s + "\n"
}

func TestOutputPattern(t *testing.T) {
	want := "{\n  \"id\": \"…\",\n  …\n  \"status\": \"succeeded\"\n}"
	for out, ok := range map[string]bool{
		"{\n  \"id\": \"01a2\",\n  \"status\": \"succeeded\"\n}\n":                           true,
		"{\n  \"id\": \"01a2\",\n  \"a\": 1,\n  \"b\": 2,\n  \"status\": \"succeeded\"\n}\n": true,
		"{\n  \"id\": \"01a2\",\n  \"status\": \"failed\"\n}\n":                              false,
		"{\n  \"id\": \"01a2\",\n  \"status\": \"succeeded\"\n}\nmore\n":                     false,
		"{\n  \"key\": \"01a2\",\n  \"status\": \"succeeded\"\n}\n":                          false,
	} {
		if got := outputPattern(want).MatchString(out); got != ok {
			t.Errorf("%q matched %q: %v, want %v", want, out, got, ok)
		}
	}
}

func TestParseBlocks(t *testing.T) {
	doc := "intro\n\n```sh\necho hi\n```\n\n```text\nhi\n```\n\n```go\nx := 1\n```\n\n```sh\ntrue\n```\n"
	blocks, err := parseBlocks(doc)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 2 || blocks[0].script != "echo hi" || !blocks[0].hasOut || blocks[0].want != "hi" ||
		blocks[1].script != "true" || blocks[1].hasOut {
		t.Fatalf("parsed %+v", blocks)
	}
	for name, bad := range map[string]string{
		"output after prose": "```sh\necho hi\n```\nIt prints:\n```text\nhi\n```\n",
		"output first":       "```text\nhi\n```\n",
		"two outputs":        "```sh\necho hi\n```\n```text\nhi\n```\n```text\nhi\n```\n",
		"not closed":         "```sh\necho hi\n",
	} {
		if _, err := parseBlocks(bad); err == nil {
			t.Errorf("%s: parsed without an error", name)
		}
	}
}

const marker = "@@doctest block"

var markerLine = regexp.MustCompile(`(?m)^` + marker + ` (\d+)@@$`)

// walkthroughLimit bounds the walkthrough's run: its server steps, and a
// build step with nothing left to build (TestMain built latch first).
const walkthroughLimit = 3 * time.Minute

// installArgs is the document's build command (its first block). TestMain
// runs it before any test, into gobin, with no deadline of its own: with
// empty Go caches on a busy machine it takes minutes. The walkthrough then
// runs the same command with the same GOBIN and finds latch up to date.
var installArgs = []string{"install", "./cmd/latch"}

// gobin is where TestMain installed latch (the walkthrough's GOBIN), and
// built the latch binary's SHA-256.
var gobin, built string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "latch-docs-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	gobin = filepath.Join(dir, "bin")
	root, err := repoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	start := time.Now()
	cmd := exec.Command("go", installArgs...)
	cmd.Dir = root
	cmd.Env = docEnv("GOBIN="+gobin, "PATH="+os.Getenv("PATH"))
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go %s: %v\n%s", strings.Join(installArgs, " "), err, out)
		return 1
	}
	if built, err = fileSum(filepath.Join(gobin, "latch")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "test/docs: go %s took %v\n", strings.Join(installArgs, " "), time.Since(start).Round(time.Second))
	return m.Run()
}

// repoRoot is the repository's root, the directory the document starts in.
func repoRoot() (string, error) {
	return filepath.Abs(filepath.Join("..", ".."))
}

// docEnv is the environment the document runs in: the caller's, without
// its LATCH_* settings, GOBIN, PATH and TMPDIR, and with extra. When the
// tests run with the race detector, GOFLAGS adds -race: the document's
// build then compiles nothing the suite's own test binaries compiled
// already (with empty caches, a build without it compiles every package
// of latch a second time, minutes on a busy machine).
func docEnv(extra ...string) []string {
	var env []string
	goflags := os.Getenv("GOFLAGS")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LATCH_") && !strings.HasPrefix(kv, "GOBIN=") &&
			!strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "TMPDIR=") &&
			!strings.HasPrefix(kv, "GOFLAGS=") {
			env = append(env, kv)
		}
	}
	if raceEnabled {
		goflags = strings.TrimSpace(goflags + " -race")
	}
	if goflags != "" {
		env = append(env, "GOFLAGS="+goflags)
	}
	return append(env, extra...)
}

// fileSum is the SHA-256 of a file's content, in hex.
func fileSum(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// TestGettingStarted runs docs/getting-started.md: it installs latch from
// this checkout (into a temporary GOBIN, first on the PATH, where TestMain
// installed it already), starts the server in a temporary directory on a
// free port (LATCH_ADDR, which the document keeps), submits and waits, logs
// in to the console, reads /metrics and stops the server, checking every
// output the document shows.
func TestGettingStarted(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "openssl", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("docs/getting-started.md needs %s on the PATH: %v", tool, err)
		}
	}
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "getting-started.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := parseBlocks(string(doc))
	if err != nil {
		t.Fatalf("docs/getting-started.md: %v", err)
	}
	if len(blocks) < 10 {
		t.Fatalf("docs/getting-started.md: %d sh blocks; the walkthrough has more", len(blocks))
	}
	if !strings.Contains(blocks[0].script, "go "+strings.Join(installArgs, " ")) {
		t.Fatalf("docs/getting-started.md's first block does not run `go %s`, the build TestMain runs first:\n%s",
			strings.Join(installArgs, " "), blocks[0].script)
	}

	// The port is free when chosen; if another process takes it before the
	// server listens, the run is repeated on another.
	for try := 1; ; try++ {
		out, logs, err := runWalkthrough(t, root, blocks)
		if err != nil && try < 3 && strings.Contains(logs, "address already in use") {
			t.Logf("the port was taken before the server listened; again on another")
			continue
		}
		checkWalkthrough(t, blocks, out, err, logs)
		break
	}
	// The document's build found nothing to do: nothing was built under
	// the walkthrough's deadline.
	if sum, err := fileSum(filepath.Join(gobin, "latch")); err != nil || sum != built {
		t.Errorf("the document's `go %s` rebuilt latch (%v): TestMain's build no longer matches it, "+
			"so the walkthrough's deadline would include a build", strings.Join(installArgs, " "), err)
	}
}

// runWalkthrough runs the blocks in one bash, from the repository's root
// (the clone the document starts in), and answers the output and the
// server's log (latch.log, in the directory the document makes).
func runWalkthrough(t *testing.T, root string, blocks []block) (out, logs string, err error) {
	tmp := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()

	var script strings.Builder
	script.WriteString("set -euo pipefail\n")
	for i, b := range blocks {
		fmt.Fprintf(&script, "printf '\\n%s %d@@\\n'\n%s\n", marker, i, b.script)
	}
	scriptFile := filepath.Join(tmp, "walkthrough.sh")
	if err := os.WriteFile(scriptFile, []byte(script.String()), 0o600); err != nil {
		t.Fatal(err)
	}

	env := docEnv("GOBIN="+gobin, "PATH="+gobin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"TMPDIR="+tmp, "LATCH_ADDR="+addr)

	ctx, cancel := context.WithTimeout(t.Context(), walkthroughLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", scriptFile)
	cmd.Dir = root
	cmd.Env = env
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	// Its own process group: the server it starts in the background is
	// killed with it, whatever happens.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	err = cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("%w (after %v)", err, walkthroughLimit)
	}
	logFiles, _ := filepath.Glob(filepath.Join(tmp, "*", "latch.log"))
	for _, f := range logFiles {
		b, _ := os.ReadFile(f)
		logs += string(b)
	}
	return buf.String(), logs, err
}

// checkWalkthrough splits the output by block and compares each with the
// document.
func checkWalkthrough(t *testing.T, blocks []block, out string, runErr error, logs string) {
	t.Helper()
	locs := markerLine.FindAllStringSubmatchIndex(out, -1)
	outputs := make([]string, len(locs))
	for i, loc := range locs {
		end := len(out)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		outputs[i] = out[loc[1]:end]
	}
	if runErr != nil {
		n := len(outputs) - 1
		if n < 0 {
			t.Fatalf("bash: %v, before the first block:\n%s", runErr, out)
		}
		t.Fatalf("the sh block of line %d failed (%v):\n%s\n-- its output:\n%s\n-- latch.log:\n%s",
			blocks[n].line, runErr, blocks[n].script, outputs[n], tailLines(logs, 30))
	}
	if len(outputs) != len(blocks) {
		t.Fatalf("%d blocks ran of %d:\n%s", len(outputs), len(blocks), out)
	}
	for i, b := range blocks {
		if !b.hasOut {
			continue
		}
		got := normalize(outputs[i])
		if !outputPattern(b.want).MatchString(got) {
			t.Errorf("the sh block of line %d:\n%s\n-- printed:\n%s-- the document shows:\n%s",
				b.line, b.script, got, b.want)
		}
	}
}

func tailLines(s string, n int) string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
