package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/latch-run/latch/internal/buildinfo"
)

// flagSets is every command's flag set, by command path.
func flagSets() map[string]*pflag.FlagSet {
	sets := map[string]*pflag.FlagSet{}
	for _, c := range commands {
		if len(c.subs) == 0 {
			sets[c.name] = describeFlags(c.run, nil)
		}
		for _, s := range c.subs {
			sets[c.name+" "+s.path] = describeFlags(c.run, strings.Fields(s.path))
		}
	}
	return sets
}

// timeFlag: a flag whose name says it is a time.
var timeFlag = regexp.MustCompile(`timeout|seconds|interval|duration|delay|grace|every|ttl|retention`)

// TestOneFlagConvention: every flag of every command is kebab-case; every
// time flag takes a Go duration and plain seconds alike; the snake_case
// spellings of before are taken but shown in no help.
func TestOneFlagConvention(t *testing.T) {
	kebab := regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	for path, fs := range flagSets() {
		fs.VisitAll(func(f *pflag.Flag) {
			if !kebab.MatchString(f.Name) {
				t.Errorf("latch %s --%s: not kebab-case", path, f.Name)
			}
			if !timeFlag.MatchString(f.Name) {
				return
			}
			for in, want := range map[string]time.Duration{"2s": 2 * time.Second, "2": 2 * time.Second, "1m30s": 90 * time.Second, "90": 90 * time.Second} {
				if err := f.Value.Set(in); err != nil {
					t.Errorf("latch %s --%s %s: %v", path, f.Name, in, err)
					continue
				}
				got, err := parseSeconds(f.Value.String())
				if err != nil || got != want {
					t.Errorf("latch %s --%s %s: holds %s, want %s", path, f.Name, in, f.Value, want)
				}
			}
		})
		code, out, _ := cli(t, append(strings.Fields(path), "-h")...)
		if code != exitOK || regexp.MustCompile(`--[a-z]+_[a-z_]+`).MatchString(out) {
			t.Errorf("latch %s -h: exit %d, shows a snake_case flag:\n%s", path, code, out)
		}
	}
	// The old spelling and a single dash still work, for the scripts
	// written before.
	code, out, errOut := cli(t, "serve", "-print-config", "-addr", "127.0.0.1:9999", "--max_streams", "7")
	if code != 0 || !strings.Contains(out, `addr: "127.0.0.1:9999" # flag --addr`) || !strings.Contains(out, `max-streams: "7" # flag --max-streams`) {
		t.Errorf("serve -print-config -addr ... --max_streams 7: exit %d %q %q", code, out, errOut)
	}
	if code, out, errOut := cli(t, "get", "--key", "k", "--url", "http://127.0.0.1:1", "--o", "yaml", "x"); code != exitUsage || !strings.Contains(errOut, "want json or table") {
		t.Errorf("get --o yaml: exit %d %q %q; want --o taken as -o", code, out, errOut)
	}
	if code, _, errOut := cli(t, "wait", "--timeout", "soon", "x"); code != exitUsage || !strings.Contains(errOut, "want a duration (90s, 1m30s) or seconds (90)") {
		t.Errorf("wait --timeout soon: exit %d %q", code, errOut)
	}
}

// TestUsageErrorIsOneLine: a wrong command line prints one line naming
// what is wrong (flags with --) and one line saying where the usage is, on
// stderr, and exits 2.
func TestUsageErrorIsOneLine(t *testing.T) {
	t.Setenv("LATCH_URL", "http://127.0.0.1:1") // nothing may be sent; if it were, it fails otherwise
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"submit", "echo", "--bogus-flag", "5"}, "latch submit: unknown flag: --bogus-flag\nrun 'latch submit -h' for usage\n"},
		{[]string{"tenant", "update", "acme", "--max-inflight", "many"}, "latch tenant update: invalid argument \"many\" for \"--max-inflight\" flag"},
		{[]string{"tenant", "create"}, "latch tenant create: want 1 argument, got no arguments\nrun 'latch tenant create -h' for usage\n"},
		{[]string{"submit", "echo", "{}", "extra1", "extra2"}, "latch submit: want 1 or 2 arguments, got 4: \"extra1\" is one too many\nrun 'latch submit -h' for usage\n"},
		{[]string{"tenant"}, "latch tenant: want one of its commands: "},
		{[]string{"frobnicate"}, "latch: unknown command \"frobnicate\"\nrun 'latch -h' for the commands\n"},
		{[]string{"get", "x", "-o", "yaml"}, "latch get: invalid argument \"yaml\" for \"-o, --output\" flag: want json or table\n"},
	} {
		code, out, errOut := cli(t, c.args...)
		if code != exitUsage || out != "" || !strings.HasPrefix(errOut, c.want) || strings.Count(errOut, "\n") != 2 ||
			!strings.HasSuffix(errOut, " for usage\n") && !strings.HasSuffix(errOut, " for the commands\n") {
			t.Errorf("latch %s: exit %d, stdout %q, stderr %q; want 2 and two lines starting %q", strings.Join(c.args, " "), code, out, errOut, c.want)
		}
		if regexp.MustCompile(`(^|\s|")-[a-z]{2,}`).MatchString(errOut) {
			t.Errorf("latch %s: %q names a flag with one dash", strings.Join(c.args, " "), errOut)
		}
	}
}

// TestVersion: latch version and latch --version print the build as
// internal/buildinfo describes it (its cases are tested there).
func TestVersion(t *testing.T) {
	code, out, errOut := cli(t, "version")
	code2, out2, _ := cli(t, "--version")
	if code != 0 || code2 != 0 || out != out2 || !strings.HasPrefix(out, "latch ") || strings.Count(out, "\n") != 1 {
		t.Fatalf("latch version: %d %q %q; --version: %d %q", code, out, errOut, code2, out2)
	}
	if want := "latch " + buildinfo.Current().Describe() + "\n"; out != want {
		t.Errorf("latch version: %q, want %q", out, want)
	}
}
