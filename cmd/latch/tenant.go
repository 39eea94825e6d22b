package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/latch-run/latch/remote"
)

const tenantUsage = "latch tenant create|get|update|keys|key|disable|enable|rm NAME [flags]; latch tenant key rm NAME KEY_ID"

// tenantSettings are the settings tenant create and update take: each
// flag is sent only when given. The ones in seconds take a duration too.
var tenantSettings = []struct {
	flag, field string
	seconds     bool
	usage       string
}{
	{"max-inflight", "max_inflight", false, "executions the tenant may have queued, running or suspended at once"},
	{"dedup-ttl-seconds", "dedup_ttl_seconds", true, "how long a dedup key is kept: a duration (168h) or seconds"},
	{"retention-seconds", "retention_seconds", true, "how long a terminal execution is kept: a duration (168h) or seconds"},
	{"event-retention-seconds", "event_retention_seconds", true, "how long a published event is kept for the waits that begin later: a duration (24h) or seconds"},
}

func runTenant(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: %s", errUsage, tenantUsage)
	}
	sub, rest := args[0], args[1:]
	if sub == "key" && len(rest) > 0 && rest[0] == "rm" {
		return runTenantKeyRemove(ctx, rest[1:], out)
	}
	fs := newFlags("tenant " + sub)
	c := clientFlags(fs)
	settings := map[string]any{}
	var values []func()
	if sub == "create" || sub == "update" {
		for _, s := range tenantSettings {
			if s.seconds {
				v := secondsFlag(fs, s.flag, 0, s.usage)
				values = append(values, func() {
					if fs.Changed(s.flag) {
						settings[s.field] = *v
					}
				})
				continue
			}
			v := fs.Int64(s.flag, 0, s.usage)
			values = append(values, func() {
				if fs.Changed(s.flag) {
					settings[s.field] = *v
				}
			})
		}
		fs.Func("max-stored-bytes", "tenant setting max_stored_bytes: its storage budget in bytes", func(v string) error {
			var n int64
			if _, err := fmt.Sscan(v, &n); err != nil {
				return fmt.Errorf("max-stored-bytes: want a whole number")
			}
			settings["max_stored_bytes"] = n
			return nil
		})
	}
	var format *formatValue
	if sub == "get" || sub == "keys" {
		format = outputFlag(fs, false)
	}
	var force *bool
	if sub == "rm" {
		force = fs.Bool("force", false, "delete even while executions are in flight: they are removed and their workers' leases lost")
	}
	if err := parse(ctx, fs, rest, 1, 1); err != nil {
		return err
	}
	for _, set := range values {
		set()
	}
	name := fs.Arg(0)
	setting := func(field string) *int64 {
		if v, ok := settings[field].(int64); ok {
			return &v
		}
		return nil
	}
	var maxInflight *int
	if v := setting("max_inflight"); v != nil {
		n := int(*v)
		maxInflight = &n
	}
	api := c.client()
	var res json.RawMessage
	var err error
	keep := func(a interface{ JSON() json.RawMessage }, e error) {
		if err = e; e == nil {
			res = a.JSON()
		}
	}
	switch sub {
	case "create":
		keep(api.CreateTenant(ctx, remote.TenantSpec{Name: name, MaxInflight: maxInflight, DedupTTLSeconds: setting("dedup_ttl_seconds"),
			RetentionSeconds: setting("retention_seconds"), MaxStoredBytes: setting("max_stored_bytes"),
			EventRetentionSeconds: setting("event_retention_seconds")}))
	case "get":
		keep(api.GetTenant(ctx, name))
	case "update":
		keep(api.UpdateTenant(ctx, name, remote.TenantPatch{MaxInflight: maxInflight, DedupTTLSeconds: setting("dedup_ttl_seconds"),
			RetentionSeconds: setting("retention_seconds"), MaxStoredBytes: setting("max_stored_bytes"),
			EventRetentionSeconds: setting("event_retention_seconds")}))
	case "key":
		keep(api.AddKey(ctx, name))
	case "keys":
		keep(api.Keys(ctx, name))
	case "disable", "enable":
		disabled := sub == "disable"
		keep(api.UpdateTenant(ctx, name, remote.TenantPatch{Disabled: &disabled}))
	case "rm":
		if err := api.DeleteTenant(ctx, name, remote.DeleteOptions{Force: *force}); err != nil {
			return err
		}
		fmt.Fprintln(out, "deleted tenant", name)
		return nil
	default:
		return fmt.Errorf("%w: unknown tenant command %q (%s)", errUsage, sub, tenantUsage)
	}
	if err != nil {
		return err
	}
	switch {
	case format == nil || format.choose(out) == "json":
		return printJSON(out, res)
	case sub == "keys":
		return printItems(out, keyColumns, res)
	}
	return printTable(out, tenantColumns, []json.RawMessage{res})
}

// runTenantKeyRemove is `latch tenant key rm NAME KEY_ID`: the key is
// refused on every server from then on.
func runTenantKeyRemove(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("tenant key rm")
	c := clientFlags(fs)
	if err := parse(ctx, fs, args, 2, 2); err != nil {
		return err
	}
	name, id := fs.Arg(0), fs.Arg(1)
	if err := c.client().DeleteKey(ctx, name, id); err != nil {
		return err
	}
	fmt.Fprintln(out, "deleted key", id, "of tenant", name)
	return nil
}
