package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"

	"github.com/latch-run/latch/remote"
	"sigs.k8s.io/yaml"
)

// scheduleFile is what `latch schedule apply -f` reads: YAML or JSON, the
// schedules and the rate limits they use, each in the body shape of its
// PUT endpoint plus its name or key.
type scheduleFile struct {
	RateLimits []map[string]any `json:"rate_limits"`
	Schedules  []map[string]any `json:"schedules"`
}

const scheduleUsage = "latch schedule ls|get|apply|trigger|pause|resume|rm [flags] [NAME]"

func runSchedule(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: %s", errUsage, scheduleUsage)
	}
	sub, rest := args[0], args[1:]
	nargs := 1
	if sub == "ls" || sub == "apply" {
		nargs = 0
	}
	fs := newFlags("schedule " + sub)
	c := clientFlags(fs)
	file := ""
	if sub == "apply" {
		fs.StringVarP(&file, "file", "f", "", "YAML or JSON file of schedules and rate limits (- reads stdin)")
	}
	idemKey := ""
	if sub == "trigger" {
		fs.StringVar(&idemKey, "idempotency-key", "",
			"sent as Idempotency-Key: a repeat with the same key answers the first trigger's execution instead of firing again")
	}
	var format *formatValue
	if sub == "ls" || sub == "get" {
		format = outputFlag(fs, false)
	}
	var page remote.PageOptions
	if sub == "ls" {
		fs.Func("limit", "page size, 1-1000 (default 1000)", func(v string) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return fmt.Errorf("want a whole number from 1")
			}
			page.Limit = n
			return nil
		})
		fs.Func("cursor", "next_cursor of the previous page", func(v string) error { page.Cursor = v; return nil })
	}
	if err := parse(ctx, fs, rest, nargs, nargs); err != nil {
		return err
	}
	api := c.client()
	name := fs.Arg(0)
	var res json.RawMessage
	var err error
	switch sub {
	case "ls":
		var p *remote.SchedulePage
		if p, err = api.SchedulesPage(ctx, page); err == nil {
			res = p.JSON()
		}
	case "get":
		var sc *remote.Schedule
		if sc, err = api.GetSchedule(ctx, name); err == nil {
			res = sc.JSON()
		}
	case "trigger":
		var e *remote.Execution
		if e, err = api.TriggerSchedule(ctx, name, remote.TriggerOptions{IdempotencyKey: idemKey}); err == nil {
			res = e.JSON()
		}
	case "pause", "resume":
		// One atomic call: a read and a PUT back could undo a concurrent
		// apply. A resumed schedule's next tick is the next one from now.
		change := api.PauseSchedule
		if sub == "resume" {
			change = api.ResumeSchedule
		}
		var sc *remote.Schedule
		if sc, err = change(ctx, name); err == nil {
			res = sc.JSON()
		}
	case "rm":
		if err = api.DeleteSchedule(ctx, name); err == nil {
			_, err = fmt.Fprintf(out, "schedule %s deleted\n", name)
		}
		return err
	case "apply":
		if file == "" {
			return fmt.Errorf("%w: apply needs -f FILE", errUsage)
		}
		return applySchedules(ctx, api, file, out)
	default:
		return fmt.Errorf("%w: unknown schedule command %q (%s)", errUsage, sub, scheduleUsage)
	}
	if err != nil {
		return err
	}
	switch {
	case format == nil || format.choose(out) == "json":
		return printJSON(out, res)
	case sub == "ls":
		return printItems(out, scheduleColumns, res)
	}
	return printTable(out, scheduleColumns, []json.RawMessage{res})
}

// applySchedules PUTs every rate limit, then every schedule, of the file.
// PUT is create-or-replace and keeps an unchanged schedule's next tick, so
// applying the same file again (every deploy) changes nothing. It stops at
// the first refusal, naming the entry.
func applySchedules(ctx context.Context, c *remote.Client, file string, out io.Writer) error {
	var data []byte
	var err error
	if file == "-" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return err
	}
	var f scheduleFile
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if len(f.Schedules)+len(f.RateLimits) == 0 {
		return fmt.Errorf("%s: no schedules and no rate_limits", file)
	}
	put := func(what, field string, body map[string]any, base string) error {
		name, _ := body[field].(string)
		if name == "" {
			return fmt.Errorf("%s: a %s without a %q", file, what, field)
		}
		// The entry goes as the file has it, through Call rather than
		// PutSchedule's typed spec: the server's validation names a
		// misspelt or misplaced field of the file.
		var res map[string]any
		code, err := c.Call(ctx, remote.Request{Method: http.MethodPut, Path: base + url.PathEscape(name), Body: body, Idempotent: true}, &res)
		if err != nil {
			return fmt.Errorf("%s %s: %w", what, name, err)
		}
		verb := "updated"
		switch {
		case code == 201:
			verb = "created"
		case what == "rate limit": // PUT answers 200 whether it created or replaced
			verb = "set"
		}
		line := fmt.Sprintf("%s %s %s", what, name, verb)
		if next, ok := res["next_run_at"].(string); ok {
			line += ", next run " + next
		}
		_, err = fmt.Fprintln(out, line)
		return err
	}
	for _, rl := range f.RateLimits {
		if err := put("rate limit", "key", rl, "/api/rate-limits/"); err != nil {
			return err
		}
	}
	for _, s := range f.Schedules {
		if err := put("schedule", "name", s, "/api/schedules/"); err != nil {
			return err
		}
	}
	return nil
}
