package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/kinds"
)

// writeConfig writes a config file in the test's directory and returns its
// name.
func writeConfig(t *testing.T, text string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "latch.yaml")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// clearServeEnv unsets every setting's environment variable for the test.
func clearServeEnv(t *testing.T) {
	t.Helper()
	for _, s := range serveSettings {
		t.Setenv(s.env, "")
	}
	t.Setenv(configEnv, "")
}

// One rule for every setting: the flag, else the environment variable, else
// the config file, else the default; checked on an int, a duration, a
// string and a bool.
func TestServeConfigPrecedence(t *testing.T) {
	clearServeEnv(t)
	file := writeConfig(t, `
workers: 3
max-streams: 4
shutdown-grace: 7s
log-level: warn
console: false
`)
	t.Setenv("LATCH_WORKERS", "5")
	t.Setenv("LATCH_SHUTDOWN_GRACE", "9s")
	cfg, err := serveFlags([]string{"--config", file, "--workers", "6"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want any
		from      string
	}{
		{"workers", cfg.workers, 6, "flag"},                           // flag > env > file
		{"shutdown-grace", cfg.shutdownGrace, 9 * time.Second, "env"}, // env > file
		{"max-streams", cfg.maxStreams, 4, "file"},                    // file > default
		{"log-level", cfg.logLevel, "warn", "file"},
		{"console", cfg.console, false, "file"},
		{"max-long-polls", cfg.maxLongPolls, 100, "default"},
		{"prune-interval", cfg.pruneEvery, time.Minute, "default"},
	} {
		if c.got != c.want || cfg.resolved.from[c.name].kind != c.from {
			t.Errorf("%s = %v from %s, want %v from %s", c.name, c.got, cfg.resolved.from[c.name].kind, c.want, c.from)
		}
	}

	// LATCH_CONFIG names the file when --config does not.
	t.Setenv(configEnv, file)
	cfg, err = serveFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.maxStreams != 4 || cfg.workers != 5 {
		t.Errorf("with LATCH_CONFIG: max-streams %d, workers %d; want 4 (file) and 5 (env)", cfg.maxStreams, cfg.workers)
	}
}

// The secrets without a flag come from the file when the environment does
// not set them, and the environment wins.
func TestServeConfigSecretsFromTheFile(t *testing.T) {
	clearServeEnv(t)
	file := writeConfig(t, "admin-key: "+testAdminKey+"\nconsole-secret: "+strings.Repeat("s", 32)+
		"\nhttp-allow: [api.example.com, '*.internal.example']\n")
	cfg, err := serveFlags([]string{"--config", file})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.adminKey != testAdminKey || string(cfg.consoleSecret) != strings.Repeat("s", 32) ||
		strings.Join(cfg.httpAllow, ",") != "api.example.com,*.internal.example" {
		t.Errorf("admin key %q, console secret %q, allow %q", cfg.adminKey, cfg.consoleSecret, cfg.httpAllow)
	}
	t.Setenv(adminKeyEnv, testAdminKey+"-env")
	if cfg, err = serveFlags([]string{"--config", file}); err != nil || cfg.adminKey != testAdminKey+"-env" {
		t.Errorf("with %s set: admin key %q, %v", adminKeyEnv, cfg.adminKey, err)
	}
}

// A file that cannot be taken whole is refused as a usage error naming the
// file and the key, before the store is opened.
func TestServeConfigRefusals(t *testing.T) {
	clearServeEnv(t)
	missing := filepath.Join(t.TempDir(), "nope.yaml")
	for _, c := range []struct {
		name, text string
		want       []string
	}{
		{"unknown key", "addr: 127.0.0.1:0\nworker: 3\n", []string{`unknown key "worker"`}},
		{"flag only", "config: other.yaml\n", []string{`unknown key "config"`}},
		{"bad int", "workers: ten\n", []string{"workers in ", "latch.yaml"}},
		{"bad duration", "shutdown-grace: soon\n", []string{"shutdown-grace in ", "latch.yaml"}},
		{"bad bool", "console: maybe\n", []string{"console in ", "latch.yaml"}},
		{"out of range", "lease-seconds: 0\n", []string{"lease-seconds in ", "latch.yaml", ">= 1"}},
		{"bad log level", "log-level: loud\n", []string{"log-level in ", "latch.yaml"}},
		{"not a scalar", "addr: {host: x}\n", []string{"addr in ", "latch.yaml"}},
		{"repeated key", "workers: 1\nworkers: 2\n", []string{"latch.yaml", "workers"}},
		{"not a mapping", "- workers\n", []string{"latch.yaml"}},
		{"short admin key", "admin-key: short\n", []string{"admin-key in ", "at least 32 bytes"}},
		{"bad allow list", "http-allow: 'bad:pattern:'\n", []string{"http-allow in "}},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := testdb.SQLite(t)
			code, out, errOut := cli(t, "serve", "--store", "sqlite:"+db, "--config", writeConfig(t, c.text))
			for _, w := range c.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("message %q does not name %q", errOut, w)
				}
			}
			if code != 2 || out != "" {
				t.Errorf("exit %d, printed %q; want 2 and nothing", code, out)
			}
			if _, err := os.Stat(db); err == nil {
				t.Error("the store was opened")
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		code, _, errOut := cli(t, "serve", "--config", missing, "--print-config")
		if code != 2 || !strings.Contains(errOut, missing) {
			t.Errorf("exit %d, %q; want 2 naming the file", code, errOut)
		}
	})
}

// --print-config shows every effective value and where it came from, with
// the secrets masked and the store URL's password redacted, and opens
// nothing.
func TestServePrintConfig(t *testing.T) {
	clearServeEnv(t)
	secret := strings.Repeat("c", 40)
	file := writeConfig(t, "console-secret: "+secret+"\nmax-schedules: 12\n"+
		"store: 'postgres://latch:hunter2@db.example:5432/latch'\n")
	t.Setenv(adminKeyEnv, testAdminKey)
	code, out, errOut := cli(t, "serve", "--config", file, "--print-config", "--addr", "127.0.0.1:9999")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, %q", code, errOut)
	}
	for _, secret := range []string{testAdminKey, secret, "hunter2"} {
		if strings.Contains(out, secret) {
			t.Errorf("a secret is printed:\n%s", out)
		}
	}
	for _, want := range []string{
		`addr: "127.0.0.1:9999" # flag --addr`,
		`admin-key: "********" # env LATCH_ADMIN_KEY`,
		`console-secret: "********" # file ` + file,
		`max-schedules: "12" # file ` + file,
		`store: "postgres://latch:xxxxx@db.example:5432/latch" # file ` + file,
		`workers: "10" # default`,
		`http-allow: "" # default`,
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("no line %q in:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "\n"); n != len(serveSettings) {
		t.Errorf("%d lines, want one per setting (%d)", n, len(serveSettings))
	}
}

// latch serve runs with the settings of its config file.
func TestServeStartsFromAConfigFile(t *testing.T) {
	clearServeEnv(t)
	t.Setenv(kinds.AllowEnv, "")
	file := writeConfig(t, "addr: 127.0.0.1:0\nstore: sqlite:"+testdb.SQLite(t)+"\nworkers: 0\nconsole: false\n"+
		"admin-key: "+testAdminKey+"\n")
	base := startServeConfig(t, "--config", file)
	if newTenant(t, base, testAdminKey) == "" { // the admin key of the file
		t.Fatal("no tenant key")
	}
	res, err := http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("GET / with console: false: %d, want 404", res.StatusCode)
	}
}

// LATCH_METRICS_TOKEN reaches the API's config and is masked when printed.
func TestServeMetricsToken(t *testing.T) {
	t.Setenv("LATCH_METRICS_TOKEN", "scrape-secret")
	cfg, err := serveFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.metricsToken != "scrape-secret" {
		t.Fatalf("metrics token %q", cfg.metricsToken)
	}
	if err := cfg.flags.Parse([]string{"--metrics-token", "x"}); err == nil {
		t.Error("--metrics-token is a flag: a secret on the command line")
	}
}
