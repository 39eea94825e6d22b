package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"

	"github.com/latch-run/latch/kinds"
)

// configEnv names the config file when --config is not given.
const configEnv = "LATCH_CONFIG"

// A setting of latch serve: a config-file key and an environment variable,
// and a flag of the key's name unless envOnly (a secret on a command line
// is visible to every user of the machine). Its value comes from the first
// of: the flag, the environment variable, the config file, the default.
type setting struct {
	key     string
	env     string
	envOnly bool
	secret  bool
}

// serveSettings is every setting, in the order --print-config shows them.
var serveSettings = []setting{
	{key: "addr", env: "LATCH_ADDR"},
	{key: "store", env: "LATCH_STORE", secret: true}, // its password only
	{key: "workers", env: "LATCH_WORKERS"},
	{key: "tenant-slots", env: "LATCH_TENANT_SLOTS"},
	{key: "lease-seconds", env: "LATCH_LEASE_SECONDS"},
	{key: "rescue-interval", env: "LATCH_RESCUE_INTERVAL"},
	{key: "prune-interval", env: "LATCH_PRUNE_INTERVAL"},
	{key: "shutdown-grace", env: "LATCH_SHUTDOWN_GRACE"},
	{key: "log-level", env: "LATCH_LOG_LEVEL"},
	{key: "log-format", env: "LATCH_LOG_FORMAT"},
	{key: "console", env: "LATCH_CONSOLE"},
	{key: "max-streams", env: "LATCH_MAX_STREAMS"},
	{key: "max-long-polls", env: "LATCH_MAX_LONG_POLLS"},
	{key: "body-budget-mib", env: "LATCH_BODY_BUDGET_MIB"},
	{key: "max-schedules", env: "LATCH_MAX_SCHEDULES"},
	{key: "min-schedule-interval", env: "LATCH_MIN_SCHEDULE_INTERVAL"},
	{key: "admin-key", env: adminKeyEnv, envOnly: true, secret: true},
	{key: "metrics-token", env: "LATCH_METRICS_TOKEN", envOnly: true, secret: true},
	{key: "console-secret", env: consoleSecretEnv, envOnly: true, secret: true},
	{key: "http-allow", env: kinds.AllowEnv, envOnly: true},
}

// origin is where a setting's value came from.
type origin struct {
	kind   string // "flag", "env", "file" or "default"
	detail string // --addr, LATCH_ADDR, the file's name
	key    string
}

// String names the origin in messages: "--addr", "LATCH_ADDR",
// "addr in latch.yaml", or "addr" for a default.
func (o origin) String() string {
	switch o.kind {
	case "file":
		return o.key + " in " + o.detail
	case "default":
		return o.key
	}
	return o.detail
}

// resolved is the outcome of applying the settings: where each came from,
// and the values of the settings without a flag.
type resolved struct {
	from    map[string]origin
	envOnly map[string]string
}

// resolveSettings applies the environment and the config file to fs, whose
// flags are already parsed from the command line, and returns where each
// setting came from. file is the config file's name ("" for none).
func resolveSettings(fs *pflag.FlagSet, file string) (*resolved, error) {
	fileValues, err := readConfigFile(file)
	if err != nil {
		return nil, err
	}
	onCommandLine := map[string]bool{}
	fs.Visit(func(f *pflag.Flag) { onCommandLine[f.Name] = true })
	r := &resolved{from: map[string]origin{}, envOnly: map[string]string{}}
	for _, s := range serveSettings {
		var o origin
		var v string
		fv, inFile := fileValues[s.key]
		ev, inEnv := os.LookupEnv(s.env)
		switch {
		case onCommandLine[s.key]:
			r.from[s.key] = origin{kind: "flag", detail: "--" + s.key, key: s.key}
			continue
		case inEnv && ev != "":
			o, v = origin{kind: "env", detail: s.env, key: s.key}, ev
		case inFile:
			o, v = origin{kind: "file", detail: file, key: s.key}, fv
		default:
			r.from[s.key] = origin{kind: "default", key: s.key}
			continue
		}
		r.from[s.key] = o
		if s.envOnly {
			r.envOnly[s.key] = v
			continue
		}
		if err := fs.Set(s.key, v); err != nil {
			if o.kind == "env" {
				return nil, fmt.Errorf("%w: %s=%q: %w", errUsage, o, v, err)
			}
			return nil, fmt.Errorf("%w: %s: %q: %w", errUsage, o, v, err)
		}
	}
	return r, nil
}

// readConfigFile reads a config file into each key's value as the text its
// environment variable would hold (a list is joined with commas). Unknown
// and repeated keys are errors naming the key and the file.
func readConfigFile(file string) (map[string]string, error) {
	if file == "" {
		return nil, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("%w: config file: %w", errUsage, err)
	}
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", errUsage, file, err)
	}
	var raw map[string]json.RawMessage
	if len(bytes.TrimSpace(js)) > 0 && string(bytes.TrimSpace(js)) != "null" {
		if err := json.Unmarshal(js, &raw); err != nil {
			return nil, fmt.Errorf("%w: %s: want a mapping of settings: %w", errUsage, file, err)
		}
	}
	values := make(map[string]string, len(raw))
	for key, msg := range raw {
		if !slices.ContainsFunc(serveSettings, func(s setting) bool { return s.key == key }) {
			return nil, fmt.Errorf("%w: %s: unknown key %q", errUsage, file, key)
		}
		v, err := scalarText(msg)
		if err != nil {
			return nil, fmt.Errorf("%w: %s in %s: %w", errUsage, key, file, err)
		}
		values[key] = v
	}
	return values, nil
}

// scalarText is a YAML value (as JSON) as the text of an environment
// variable: a string as is, a number or boolean as written, a list of
// strings joined with commas.
func scalarText(msg json.RawMessage) (string, error) {
	var v any
	d := json.NewDecoder(bytes.NewReader(msg))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return "", err
	}
	switch v := v.(type) {
	case string:
		return v, nil
	case json.Number:
		return v.String(), nil
	case bool:
		return fmt.Sprint(v), nil
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			s, ok := e.(string)
			if !ok {
				return "", errors.New("want a list of strings")
			}
			parts[i] = s
		}
		return strings.Join(parts, ","), nil
	}
	return "", fmt.Errorf("want a string, number or boolean, not %s", msg)
}

// printConfig writes every setting's effective value and where it came
// from, as a config file (the comments name the source); secrets are
// masked and a store URL's password redacted.
func printConfig(w io.Writer, fs *pflag.FlagSet, r *resolved) error {
	for _, s := range serveSettings {
		var v string
		if s.envOnly {
			v = r.envOnly[s.key]
		} else {
			v = fs.Lookup(s.key).Value.String()
		}
		switch {
		case s.key == "store":
			v = redact(v)
		case s.secret && v != "":
			v = "********"
		}
		q, _ := json.Marshal(v)
		if _, err := fmt.Fprintf(w, "%s: %s # %s\n", s.key, q, describe(r.from[s.key])); err != nil {
			return err
		}
	}
	return nil
}

// describe is an origin as --print-config shows it.
func describe(o origin) string {
	if o.kind == "default" {
		return "default"
	}
	return o.kind + " " + o.detail
}
