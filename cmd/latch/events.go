package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/latch-run/latch/remote"
)

// The event commands: publish an event (it resumes the flows waiting for
// it and starts the subscriptions on its name), and manage subscriptions.

func runPublish(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("publish")
	c := clientFlags(fs)
	data := fs.String("data", "", "the event's data: any JSON (default null)")
	// Not --key: that is the API key, as on every command.
	key := fs.String("correlation-key", "", "the event's correlation key (the API's \"key\"): a wait that names a key matches only events published with it")
	idemKey := fs.String("idempotency-key", "",
		"sent as Idempotency-Key: a repeat with the same key, while the event is kept, answers the first publish's answer and publishes nothing")
	if err := parse(ctx, fs, args, 1, 1); err != nil {
		return err
	}
	var body any // none: null
	if fs.Changed("data") {
		if !json.Valid([]byte(*data)) {
			return fmt.Errorf("%w: --data is not valid JSON", errUsage)
		}
		body = json.RawMessage(*data)
	}
	res, err := c.client().Publish(ctx, fs.Arg(0), body, remote.PublishOptions{Key: *key, IdempotencyKey: *idemKey})
	if err != nil {
		return err
	}
	return printJSON(out, res.JSON())
}

const subscriptionsUsage = "latch subscriptions ls|get|put|rm [flags] [NAME]"

var subscriptionColumns = []column{{"NAME", "name"}, {"EVENT", "event"}, {"KIND", "kind"}, {"QUEUE", "queue"},
	{"ENABLED", "enabled"}, {"UPDATED", "updated_at"}}

func runSubscriptions(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: %s", errUsage, subscriptionsUsage)
	}
	sub, rest := args[0], args[1:]
	nargs := 1
	if sub == "ls" {
		nargs = 0
	}
	fs := newFlags("subscriptions " + sub)
	c := clientFlags(fs)
	var spec remote.SubscriptionSpec
	var timeout *int64
	var disabled *bool
	if sub == "put" {
		fs.StringVar(&spec.Event, "event", "", "the name of the events that start an execution (required)")
		fs.StringVar(&spec.Kind, "kind", "", "the kind of the executions it starts (required); their payload is the event")
		fs.StringVar(&spec.Queue, "queue", "", "their queue (default \"default\")")
		fs.IntVar(&spec.Priority, "priority", 0, "their priority")
		fs.IntVar(&spec.MaxAttempts, "max-attempts", 0, "their attempts (default 3)")
		timeout = secondsFlag(fs, "timeout", 0, "each attempt's timeout: a duration (5m) or seconds (default 300)")
		fs.StringVar(&spec.ConcurrencyKey, "concurrency-key", "", "their concurrency key")
		fs.IntVar(&spec.ConcurrencyLimit, "concurrency-limit", 0, "how many with the key may run at once (default 1)")
		disabled = fs.Bool("disabled", false, "put it disabled: it starts nothing until put again without --disabled")
	}
	var format *formatValue
	if sub == "ls" || sub == "get" || sub == "put" {
		format = outputFlag(fs, false)
	}
	if err := parse(ctx, fs, rest, nargs, nargs); err != nil {
		return err
	}
	api := c.client()
	name := fs.Arg(0)
	var res json.RawMessage
	switch sub {
	case "ls":
		// Every page, as one list: a tenant's subscriptions fit in the
		// first; the admin's of every tenant may take more.
		var all struct {
			Items      []json.RawMessage `json:"items"`
			NextCursor *string           `json:"next_cursor"`
		}
		all.Items = []json.RawMessage{}
		for page := (remote.PageOptions{}); ; {
			p, err := api.SubscriptionsPage(ctx, page)
			if err != nil {
				return err
			}
			var items struct {
				Items []json.RawMessage `json:"items"`
			}
			if err := json.Unmarshal(p.JSON(), &items); err != nil {
				return fmt.Errorf("decode answer: %w", err)
			}
			all.Items = append(all.Items, items.Items...)
			if p.NextCursor == nil {
				break
			}
			page.Cursor = *p.NextCursor
		}
		var err error
		if res, err = json.Marshal(all); err != nil {
			return err
		}
	case "get":
		s, err := api.GetSubscription(ctx, name)
		if err != nil {
			return err
		}
		res = s.JSON()
	case "put":
		if spec.Event == "" || spec.Kind == "" {
			return fmt.Errorf("%w: put needs --event and --kind", errUsage)
		}
		spec.TimeoutSeconds = int(*timeout)
		enabled := !*disabled
		spec.Enabled = &enabled
		s, _, err := api.PutSubscription(ctx, name, spec)
		if err != nil {
			return err
		}
		res = s.JSON()
	case "rm":
		if err := api.DeleteSubscription(ctx, name); err != nil {
			return err
		}
		_, err := fmt.Fprintf(out, "subscription %s deleted\n", name)
		return err
	default:
		return fmt.Errorf("%w: unknown subscriptions command %q (%s)", errUsage, sub, subscriptionsUsage)
	}
	switch {
	case format.choose(out) == "json":
		return printJSON(out, res)
	case sub == "ls":
		return printItems(out, subscriptionColumns, res)
	}
	return printTable(out, subscriptionColumns, []json.RawMessage{res})
}
