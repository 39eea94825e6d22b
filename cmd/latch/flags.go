package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The flags of every command are pflag's, parsed by the command's run
// function (parse) so that they may come before, between and after its
// arguments, and "--" ends them. One convention for all: kebab-case names
// (--dedup-key); the snake_case spellings of before (--max_inflight) are
// the same flags (normalize), shown nowhere; a single dash before a long
// name (-store) still works (longDashes). A time flag takes a Go duration
// or plain seconds (durationValue, secondsValue).

// newFlags is a command's flag set: name is its path ("tenant create").
func newFlags(name string) *pflag.FlagSet {
	fs := pflag.NewFlagSet("latch "+name, pflag.ContinueOnError)
	fs.SetNormalizeFunc(normalize)
	fs.SortFlags = false
	fs.Usage = func() {} // the command's help is cobra's; an error is one line (cli.go)
	return fs
}

// normalize makes --max_inflight the flag --max-inflight, and --f and --o
// (the standard library took a one-letter flag with two dashes too) --file
// and --output.
func normalize(_ *pflag.FlagSet, name string) pflag.NormalizedName {
	if long, ok := oneLetter[name]; ok {
		name = long
	}
	return pflag.NormalizedName(strings.ReplaceAll(name, "_", "-"))
}

// oneLetter are the one-letter flags of before that are now shorthands.
var oneLetter = map[string]string{"f": "file", "o": "output"}

// longDashes turns -name into --name for the long flags of fs, as the
// standard library's flag package took them, up to "--".
func longDashes(fs *pflag.FlagSet, args []string) []string {
	out := make([]string, len(args))
	copy(out, args)
	for i, a := range out {
		if a == "--" {
			break
		}
		if len(a) < 3 || a[0] != '-' || a[1] == '-' {
			continue
		}
		name, _, _ := strings.Cut(a[1:], "=")
		if len(name) > 1 && fs.Lookup(name) != nil {
			out[i] = "-" + a
		}
	}
	return out
}

// parse parses args with fs: flags anywhere, at least min and (max >= 0)
// at most max arguments, which fs.Args() then holds. Run by the command
// tree (cli.go), -h shows the command's help; in describe mode, parse
// hands fs over and stops the command.
func parse(ctx context.Context, fs *pflag.FlagSet, args []string, min, max int) error {
	if d, ok := ctx.Value(describeKey{}).(**pflag.FlagSet); ok {
		*d = fs
		return errDescribed
	}
	err := fs.Parse(longDashes(fs, args))
	if errors.Is(err, pflag.ErrHelp) {
		// -h or --help: the help is the answer, on standard output.
		if cmd, ok := ctx.Value(cobraKey{}).(*cobra.Command); ok {
			cmd.SetOut(cmd.OutOrStdout())
			cmd.Help() //nolint:errcheck // written to standard output
		}
		return errHelp
	}
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	switch n := fs.NArg(); {
	case n < min:
		return fmt.Errorf("%w: want %s, got %s", errUsage, count(min, max), count(n, n))
	case max >= 0 && n > max:
		return fmt.Errorf("%w: want %s, got %d: %q is one too many", errUsage, count(min, max), n, fs.Arg(max))
	}
	return nil
}

// count says how many arguments: "1 argument", "2 or 3 arguments", "0 to
// 3 arguments", "at least 1 argument", "no arguments".
func count(min, max int) string {
	word := func(n int) string {
		if n == 1 {
			return "argument"
		}
		return "arguments"
	}
	switch {
	case max < 0:
		return fmt.Sprintf("at least %d %s", min, word(min))
	case max == 0:
		return "no arguments"
	case min == max:
		return fmt.Sprintf("%d %s", min, word(min))
	case max == min+1:
		return fmt.Sprintf("%d or %d arguments", min, max)
	}
	return fmt.Sprintf("%d to %d arguments", min, max)
}

// valuesKey annotates a flag with the values completion offers.
const valuesKey = "latch_values"

// offer makes completion offer values for fs's flag name.
func offer(fs *pflag.FlagSet, name string, values ...string) {
	if err := fs.SetAnnotation(name, valuesKey, values); err != nil {
		panic(err) // a flag the command does not define: a bug
	}
}

// parseSeconds reads a Go duration (90s, 1m30s) or plain seconds (90, 1.5).
func parseSeconds(s string) (time.Duration, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return d, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > math.MaxInt64/float64(time.Second) {
		return 0, fmt.Errorf("want a duration (90s, 1m30s) or seconds (90)")
	}
	return time.Duration(f * float64(time.Second)), nil
}

// durationValue is a time flag: a Go duration or plain seconds.
type durationValue time.Duration

func durationFlag(fs *pflag.FlagSet, name string, def time.Duration, usage string) *time.Duration {
	d := def
	fs.Var((*durationValue)(&d), name, usage)
	if def == 0 {
		fs.Lookup(name).DefValue = "0" // help shows no "(default 0s)"
	}
	return &d
}

func (d *durationValue) Set(s string) error {
	v, err := parseSeconds(s)
	if err != nil {
		return err
	}
	*d = durationValue(v)
	return nil
}

func (d *durationValue) String() string { return time.Duration(*d).String() }
func (d *durationValue) Type() string   { return "duration" }

// secondsValue is a time flag kept in whole seconds (the API's
// *_seconds fields): a Go duration or plain seconds, whole.
type secondsValue int64

func secondsFlag(fs *pflag.FlagSet, name string, def int64, usage string) *int64 {
	n := def
	fs.Var((*secondsValue)(&n), name, usage)
	return &n
}

func (n *secondsValue) Set(s string) error {
	d, err := parseSeconds(s)
	if err != nil {
		return err
	}
	if d%time.Second != 0 {
		return fmt.Errorf("want whole seconds, not %s", d)
	}
	*n = secondsValue(d / time.Second)
	return nil
}

func (n *secondsValue) String() string { return strconv.FormatInt(int64(*n), 10) }
func (n *secondsValue) Type() string   { return "seconds" }
