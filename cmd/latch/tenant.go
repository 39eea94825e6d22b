package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
)

func runTenant(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: latch tenant create|get|update|key NAME [flags]", errUsage)
	}
	sub, rest := args[0], args[1:]
	fs := newFlags("tenant "+sub, "NAME")
	c := clientFlags(fs)
	settings := map[string]any{}
	if sub == "create" || sub == "update" {
		for _, name := range []string{"max_inflight", "dedup_ttl_seconds", "retention_seconds"} {
			fs.Func(name, "tenant setting "+name, func(v string) error {
				var n int64
				if _, err := fmt.Sscan(v, &n); err != nil {
					return fmt.Errorf("%s: want a whole number", name)
				}
				settings[name] = n
				return nil
			})
		}
	}
	if err := parse(fs, rest, 1); err != nil {
		return err
	}
	name := fs.Arg(0)
	path := "/api/tenants/" + url.PathEscape(name)
	var res json.RawMessage
	var err error
	switch sub {
	case "create":
		settings["name"] = name
		_, err = c.do(ctx, "POST", "/api/tenants", settings, nil, &res)
	case "get":
		_, err = c.do(ctx, "GET", path, nil, nil, &res)
	case "update":
		_, err = c.do(ctx, "PATCH", path, settings, nil, &res)
	case "key":
		_, err = c.do(ctx, "POST", path+"/keys", nil, nil, &res)
	default:
		return fmt.Errorf("%w: unknown tenant command %q (create, get, update, key)", errUsage, sub)
	}
	if err != nil {
		return err
	}
	return printJSON(out, res)
}
