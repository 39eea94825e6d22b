package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The command tree is a cobra tree: it gives -h its help (usage, example,
// flags), `latch help CMD`, and `latch completion bash|zsh|fish`. Each
// command's flags are pflag's, defined in its run function and parsed
// there (parse, flags.go): anywhere on the line, kebab-case, the old
// spellings and -flag still taken. The tree learns a command's flags by
// running it in describe mode (describeFlags): its run function defines
// them and stops at parse.

// runFunc is a command's body: args are the words after the command's name
// (for tenant, schedule and migrate, starting with the subcommand).
type runFunc func(ctx context.Context, args []string, out io.Writer) error

// command is one top-level command.
type command struct {
	name    string
	args    string // the arguments after the flags, for the usage line
	summary string
	run     runFunc
	subs    []subcommand
}

// subcommand is one word of tenant, schedule or migrate.
type subcommand struct {
	path    string // the words after the command: "create", "key rm"
	args    string
	summary string
}

var commands = []command{
	{name: "serve", summary: "run the API, console, scheduler and workers", run: runServe},
	{name: "submit", args: "KIND [PAYLOAD_JSON]", summary: "submit an execution", run: runSubmit},
	{name: "get", args: "EXECUTION_ID", summary: "show one execution", run: runGet},
	{name: "ls", summary: "list executions", run: runList},
	{name: "wait", args: "EXECUTION_ID [EXECUTION_ID...]", summary: "wait until executions are terminal", run: runWait},
	{name: "cancel", args: "EXECUTION_ID", summary: "cancel an execution", run: runCancel},
	{name: "rm", args: "EXECUTION_ID", summary: "delete an execution (--force for one in flight)", run: runDelete},
	{name: "signal", args: "EXECUTION_ID NAME [DATA_JSON]", summary: "send a signal to a flow: EXECUTION_ID NAME [DATA_JSON]", run: runSignal},
	{name: "retry", args: "EXECUTION_ID", summary: "queue a failed execution again, keeping its recorded steps", run: runRetry},
	{name: "steps", args: "EXECUTION_ID", summary: "show the steps a flow recorded", run: runSteps},
	{name: "children", args: "EXECUTION_ID", summary: "list the children a flow spawned, in spawn order, with their statuses", run: runChildren},
	{name: "attempts", args: "EXECUTION_ID", summary: "show an execution's runs: worker, times, outcome, error", run: runAttempts},
	{name: "why", args: "EXECUTION_ID", summary: "show what holds an execution back: limits, time, turns, workers", run: runWhy},
	{name: "version", summary: "print latch's version and the revision it was built from", run: runVersion},
	{name: "tenant", summary: "manage tenants: create, get, update, disable, enable, rm; keys: key, keys, key rm", run: runTenant, subs: []subcommand{
		{"create", "NAME", "create a tenant and its first API key"},
		{"get", "NAME", "show a tenant's settings and usage"},
		{"update", "NAME", "change a tenant's settings"},
		{"disable", "NAME", "refuse the tenant's keys until enabled again"},
		{"enable", "NAME", "accept a disabled tenant's keys again"},
		{"rm", "NAME", "delete a tenant (--force while executions are in flight)"},
		{"key", "NAME", "make another API key for a tenant"},
		{"keys", "NAME", "list a tenant's API keys"},
		{"key rm", "NAME KEY_ID", "revoke one of a tenant's API keys"},
	}},
	{name: "schedule", summary: "manage schedules and rate limits: ls, get, apply -f FILE, trigger, pause, resume, rm", run: runSchedule, subs: []subcommand{
		{"ls", "", "list schedules"},
		{"get", "NAME", "show a schedule"},
		{"apply", "-f FILE", "create or replace the schedules and rate limits of a file"},
		{"trigger", "NAME", "run a schedule now, off its cycle"},
		{"pause", "NAME", "stop a schedule's ticks until it is resumed (trigger still runs it)"},
		{"resume", "NAME", "tick a paused schedule again, from its next tick after now"},
		{"rm", "NAME", "delete a schedule"},
	}},
	{name: "publish", args: "NAME", summary: "publish an event: it resumes the flows waiting for it and starts the subscriptions on its name", run: runPublish},
	{name: "subscriptions", summary: "manage subscriptions, which start an execution for every event of a name: ls, get, put, rm", run: runSubscriptions, subs: []subcommand{
		{"ls", "", "list the tenant's subscriptions"},
		{"get", "NAME", "show a subscription"},
		{"put", "NAME", "create or replace a subscription (--event, --kind and the started executions' settings)"},
		{"rm", "NAME", "delete a subscription; the executions it started stay"},
	}},
	{name: "bench", summary: "measure submit and drain throughput against a store", run: runBench},
	{name: "prove", summary: "soak a store with steady mixed load, then check the invariants and for leaks", run: runProve},
	{name: "migrate", summary: "apply, revert or show a store's schema migrations: up, down, status", run: runMigrate, subs: []subcommand{
		{"up", "", "apply every pending migration"},
		{"down", "", "revert the newest migration (PostgreSQL)"},
		{"status", "", "show the schema version"},
	}},
}

// ctxKey carries, in a run function's context, the cobra command being run
// (its help is the flag set's usage) or, in describe mode, where parse puts
// the flag set.
type (
	cobraKey    struct{}
	describeKey struct{}
)

// ours marks, in a command's annotations, the commands of latch (not
// cobra's help and completion).
const ours = "latch"

// errDescribed stops a run function at parse in describe mode.
var errDescribed = errors.New("described")

// describeFlags returns the flag set run defines for the words path.
func describeFlags(run runFunc, path []string) *pflag.FlagSet {
	var fs *pflag.FlagSet
	ctx := context.WithValue(context.Background(), describeKey{}, &fs)
	if err := run(ctx, path, io.Discard); !errors.Is(err, errDescribed) {
		panic(fmt.Sprintf("latch %s: describing its flags: %v", strings.Join(path, " "), err))
	}
	return fs
}

// addFlags makes fs's flags known to cmd, for help and completion.
func addFlags(cmd *cobra.Command, fs *pflag.FlagSet) { cmd.Flags().AddFlagSet(fs) }

// completeArgs completes a command line: after a flag that takes a value,
// its values (offer), or files for a flag that names one (--file,
// --store, --config); else nothing, not file names either: the arguments
// are names and ids only the server knows. (cobra leaves the flags of a
// command that parses its own to this function.)
func completeArgs(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	n := len(args)
	if n == 0 || !strings.HasPrefix(args[n-1], "-") || strings.Contains(args[n-1], "=") {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	name := strings.TrimLeft(args[n-1], "-")
	var f *pflag.Flag
	if len(name) == 1 {
		f = cmd.Flags().ShorthandLookup(name)
	}
	if f == nil {
		f = cmd.Flags().Lookup(name)
	}
	switch {
	case f == nil || f.NoOptDefVal != "": // not a flag, or one without a value (--force)
		return nil, cobra.ShellCompDirectiveNoFileComp
	case f.Annotations[valuesKey] != nil:
		return f.Annotations[valuesKey], cobra.ShellCompDirectiveNoFileComp
	case f.Name == "file" || f.Name == "store" || f.Name == "config":
		return nil, cobra.ShellCompDirectiveDefault
	}
	return nil, cobra.ShellCompDirectiveNoFileComp
}

// newRoot builds the command tree; out and errOut are the command's
// standard output and error.
func newRoot(out, errOut io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "latch",
		Short:         "the latch job-execution service and its client",
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetOut(out)
	root.SetErr(errOut)
	leaf := func(c command, path []string, use, args, summary string) *cobra.Command {
		if args != "" {
			use += " " + args
		}
		cmd := &cobra.Command{
			Use:                   use,
			Short:                 summary,
			Example:               "  " + examples[strings.Join(path, " ")],
			DisableFlagParsing:    true,
			DisableFlagsInUseLine: true,
			Args:                  cobra.ArbitraryArgs,
			ValidArgsFunction:     completeArgs,
			Annotations:           map[string]string{ours: "1"},
			RunE: func(cmd *cobra.Command, args []string) error {
				ctx := context.WithValue(cmd.Context(), cobraKey{}, cmd)
				return c.run(ctx, append(slices.Clone(path[1:]), args...), out)
			},
		}
		addFlags(cmd, describeFlags(c.run, path[1:]))
		return cmd
	}
	for _, c := range commands {
		if len(c.subs) == 0 {
			root.AddCommand(leaf(c, []string{c.name}, c.name+" [flags]", c.args, c.summary))
			continue
		}
		parent := &cobra.Command{
			Use:                c.name + " COMMAND",
			Short:              c.summary,
			Example:            "  " + examples[c.name],
			DisableFlagParsing: true,
			Args:               cobra.ArbitraryArgs,
			Annotations:        map[string]string{ours: "1"},
			RunE: func(cmd *cobra.Command, args []string) error {
				if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
					cmd.SetOut(cmd.OutOrStdout())
					cmd.Help() //nolint:errcheck // asked for: on stdout
					return errHelp
				}
				if len(args) == 0 {
					var names []string
					for _, sub := range cmd.Commands() {
						names = append(names, sub.Name())
					}
					return fmt.Errorf("%w: want one of its commands: %s", errUsage, strings.Join(names, ", "))
				}
				// An unknown subcommand: the command's own message.
				ctx := context.WithValue(cmd.Context(), cobraKey{}, cmd)
				return c.run(ctx, args, out)
			},
		}
		root.AddCommand(parent)
		byPath := map[string]*cobra.Command{}
		for _, s := range c.subs {
			words := strings.Fields(s.path)
			under := parent
			if len(words) > 1 {
				under = byPath[strings.Join(words[:len(words)-1], " ")]
			}
			cmd := leaf(c, append([]string{c.name}, words...), words[len(words)-1]+" [flags]", s.args, s.summary)
			byPath[s.path] = cmd
			under.AddCommand(cmd)
		}
	}
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, cmd := range root.Commands() {
		if cmd.Name() != "completion" {
			continue
		}
		cmd.Short = "print the shell completion script: bash, zsh, fish or powershell"
		cmd.Example = "  " + completionExamples["bash"]
		var shells []string
		for _, sh := range cmd.Commands() {
			sh.Example = "  " + completionExamples[sh.Name()]
			shells = append(shells, sh.Name())
		}
		// A shell it has no script for (tcsh) is a usage error, not its help.
		cmd.Args = cobra.ArbitraryArgs
		cmd.RunE = func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return fmt.Errorf("%w: want a shell: %s", errUsage, strings.Join(shells, ", "))
			}
			return fmt.Errorf("%w: no completion for %q: want %s", errUsage, args[0], strings.Join(shells, ", "))
		}
	}
	root.SetGlobalNormalizationFunc(normalize)
	return root
}

// completionExamples are the install lines of the completion scripts.
var completionExamples = map[string]string{
	"bash":       "latch completion bash > /etc/bash_completion.d/latch",
	"zsh":        `latch completion zsh > "${fpath[1]}/_latch"`,
	"fish":       "latch completion fish > ~/.config/fish/completions/latch.fish",
	"powershell": "latch completion powershell | Out-String | Invoke-Expression",
}

func run(ctx context.Context, args []string, out, errOut io.Writer) int {
	root := newRoot(out, errOut)
	if len(args) == 0 || len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help" || args[0] == "help") {
		if len(args) == 0 {
			usage(root, errOut) // a command line missing its command
			return exitUsage
		}
		usage(root, out) // asked for: on stdout, as a command's -h
		return exitOK
	}
	if args[0] == "--version" || args[0] == "-version" {
		args = append([]string{"version"}, args[1:]...)
	}
	if cmd, _, err := root.Find(args); err != nil || cmd == root {
		if !strings.HasPrefix(args[0], "__complete") {
			fmt.Fprintf(errOut, "latch: unknown command %q\nrun 'latch -h' for the commands\n", args[0])
			return exitUsage
		}
	}
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if errors.Is(err, errHelp) {
		return exitOK // -h or --help: the help, on standard output, is the answer
	}
	if err != nil {
		// The library's errors start with "latch: "; the line already says
		// "latch <command>: ", once is enough.
		msg := strings.TrimPrefix(err.Error(), "latch: ")
		if _, ok := cmd.Annotations[ours]; !ok || errors.Is(err, errUsage) {
			// A wrong command line (for cobra's own commands, help and
			// completion, every error is one): one line, and where the
			// usage is.
			fmt.Fprintf(errOut, "%s: %s\nrun '%s -h' for usage\n", cmd.CommandPath(),
				strings.TrimPrefix(msg, errUsage.Error()+": "), cmd.CommandPath())
			return exitUsage
		}
		fmt.Fprintf(errOut, "%s: %s\n", cmd.CommandPath(), msg)
		return exitCode(err)
	}
	return exitOK
}

// usage is `latch -h`: the commands and where the client finds its server.
func usage(root *cobra.Command, w io.Writer) {
	fmt.Fprintln(w, "usage: latch <command> [flags]")
	fmt.Fprintln(w)
	for _, c := range root.Commands() {
		if c.IsAvailableCommand() && c.Name() != "help" {
			fmt.Fprintf(w, "  %-11s %s\n", c.Name(), c.Short)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Client commands read LATCH_URL (default http://127.0.0.1:8080) and LATCH_KEY.")
	fmt.Fprintln(w, "Run 'latch <command> -h' for its flags and an example.")
}
