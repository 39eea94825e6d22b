package main

// examples holds, for each command's -h, one command line that works as
// written against a server started with `latch serve` (the key in
// LATCH_KEY). TestEveryCommandHasAnExample keeps it complete.
var examples = map[string]string{
	"serve":            "latch serve --addr 127.0.0.1:8080 --store postgres://latch@db/latch --workers 20",
	"submit":           `latch submit --dedup-key order-124 --max-attempts 5 echo '{"order": 124}'`,
	"get":              "latch get 01a23c8c-7fb7-767a-94da-7e6f26b2d0ac",
	"ls":               "latch ls --status failed --kind http --limit 20",
	"wait":             "latch wait --timeout 5m 01a23c8c-7fb7-767a-94da-7e6f26b2d0ac && echo done",
	"cancel":           "latch cancel 01a23c8c-7fb7-767a-94da-7e6f26b2d0ac",
	"rm":               "latch rm --force 01a23c8c-7fb7-767a-94da-7e6f26b2d0ac",
	"signal":           `latch signal --idempotency-key approve-124 01a23c8c-7fb7-767a-94da-7e6f26b2d0ac approve '{"by": "ann"}'`,
	"retry":            "latch retry 01a23c8c-7fb7-767a-94da-7e6f26b2d0ac",
	"steps":            "latch steps --json 01a23c8c-7fb7-767a-94da-7e6f26b2d0ac",
	"attempts":         "latch attempts 01a23c8c-7fb7-767a-94da-7e6f26b2d0ac",
	"tenant create":    "latch tenant create --max_inflight 500 acme",
	"tenant get":       "latch tenant get acme",
	"tenant update":    "latch tenant update --max_inflight 1000 acme",
	"tenant key":       "latch tenant key acme",
	"tenant keys":      "latch tenant keys acme",
	"tenant key rm":    "latch tenant key rm acme 3f2a9c1e",
	"tenant disable":   "latch tenant disable acme",
	"tenant enable":    "latch tenant enable acme",
	"tenant rm":        "latch tenant rm --force acme",
	"schedule ls":      "latch schedule ls --tenant acme",
	"schedule get":     "latch schedule get sweep-oslo",
	"schedule apply":   "latch schedule apply -f sweeps.yaml",
	"schedule trigger": "latch schedule trigger --idempotency-key deploy-42 sweep-oslo",
	"schedule rm":      "latch schedule rm sweep-oslo",
	"bench":            "latch bench --store sqlite:bench.db -n 10000",
	"prove":            "latch prove --store postgres://latch@db/latch_prove --duration 10m",
	"migrate up":       "latch migrate up --store postgres://latch@db/latch",
	"migrate down":     "latch migrate down --store postgres://latch@db/latch",
	"migrate status":   "latch migrate status --store postgres://latch@db/latch",
}
