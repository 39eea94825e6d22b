package redis

import (
	"context"
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	goredis "github.com/redis/go-redis/v9"
)

//go:embed lua/*.lua
var luaFS embed.FS

// luaScript is the script of one Store operation that changes state:
// lua/lib.lua and the operation's own file. It runs as a function of the
// latch library (FCALL), or as a script of its own (EVALSHA) on a server
// without functions.
//
// Functions are the fast path: a library's top-level code (lib.lua's
// helpers, some sixty closures and tables) runs once, when it is loaded,
// whereas a script that carries lib.lua builds all of it again on every
// call and leaves it to Lua's garbage collector, several times the server
// time of a small script's own work (docs/benchmarks.md has the measure).
type luaScript struct {
	op   string          // its file under lua/, without .lua
	fn   string          // its function's name in the library
	eval *goredis.Script // lib.lua followed by the body, for EVALSHA
	read bool            // writes nothing: its function is flagged no-writes
}

// The Lua scripts, one per Store operation that changes state.
var (
	scriptAdmit           = mustScript("admit")
	scriptClaim           = mustScript("claim")
	scriptHeartbeat       = mustScript("heartbeat")
	scriptComplete        = mustScript("complete")
	scriptFail            = mustScript("fail")
	scriptRelease         = mustScript("release")
	scriptCancel          = mustScript("cancel")
	scriptDelete          = mustScript("delete")
	scriptRescue          = mustScript("rescue")
	scriptPromote         = mustScript("promote")
	scriptPrune           = mustScript("prune")
	scriptCreateTenant    = mustScript("create_tenant")
	scriptUpdateTenant    = mustScript("update_tenant")
	scriptAddAPIKey       = mustScript("add_api_key")
	scriptEnsureAdminKey  = mustScript("ensure_admin_key")
	scriptPutSchedule     = mustScript("put_schedule")
	scriptDeleteSchedule  = mustScript("delete_schedule")
	scriptSetSchedule     = mustScript("set_schedule_enabled")
	scriptFireSchedule    = mustScript("fire_schedule")
	scriptPutRateLimit    = mustScript("put_rate_limit")
	scriptDeleteRateLimit = mustScript("delete_rate_limit")
	scriptDeleteTenant    = mustScript("delete_tenant")
	scriptDeleteAPIKey    = mustScript("delete_api_key")
	scriptTouchAPIKey     = mustScript("touch_api_key")
	scriptBackfill        = mustScript("backfill")
	scriptSeedTurns       = mustScript("seed_turns")
	scriptStep            = mustScript("step")
	scriptSteps           = mustScript("steps")
	scriptSuspend         = mustScript("suspend")
	scriptSignal          = mustScript("signal")
	scriptWake            = mustScript("wake")
	scriptRetry           = mustScript("retry")
	scriptQueueStats      = mustReadScript("queue_stats")
	scriptReportServer    = mustScript("report_server")
	scriptPresence        = mustReadScript("presence")
	scriptActivity        = mustReadScript("activity")
	scriptListRateLimits  = mustReadScript("list_rate_limits")
	scriptConcurrencyKeys = mustReadScript("concurrency_keys")
	scriptExplain         = mustReadScript("explain")
	scriptReadyKinds      = mustReadScript("ready_kinds")
	scriptHintSet         = mustScript("hint_set")
	scriptSpawn           = mustScript("spawn")
	scriptPublish         = mustScript("publish")
	scriptPutSubscription = mustScript("put_subscription")
	scriptDelSubscription = mustScript("delete_subscription")

	allScripts = []*luaScript{
		scriptAdmit, scriptClaim, scriptHeartbeat, scriptComplete, scriptFail, scriptRelease,
		scriptCancel, scriptDelete, scriptRescue, scriptPromote, scriptPrune,
		scriptCreateTenant, scriptUpdateTenant, scriptAddAPIKey, scriptEnsureAdminKey,
		scriptPutSchedule, scriptDeleteSchedule, scriptSetSchedule, scriptFireSchedule, scriptPutRateLimit, scriptDeleteRateLimit,
		scriptDeleteTenant, scriptDeleteAPIKey, scriptTouchAPIKey, scriptBackfill,
		scriptSeedTurns, scriptStep, scriptSteps, scriptSuspend, scriptSignal, scriptWake, scriptRetry,
		scriptQueueStats, scriptReportServer, scriptPresence, scriptActivity, scriptListRateLimits,
		scriptConcurrencyKeys, scriptExplain, scriptReadyKinds, scriptHintSet, scriptSpawn,
		scriptPublish, scriptPutSubscription, scriptDelSubscription,
	}

	// libName and librarySource are the function library that holds every
	// script (buildLibrary).
	libName, librarySource = buildLibrary()
)

// scripter is what running the scripts takes of a client.
type scripter interface {
	goredis.Scripter
	FCall(ctx context.Context, function string, keys []string, args ...any) *goredis.Cmd
	FunctionLoadReplace(ctx context.Context, code string) *goredis.StringCmd
}

func luaFile(name string) string {
	b, err := luaFS.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic(err)
	}
	return string(b)
}

func mustScript(op string) *luaScript {
	// The body runs as a function, as in the library, so that the run's
	// end (lanes_flush) follows every return.
	return &luaScript{op: op, eval: goredis.NewScript(luaFile("lib") + "\nlocal function body()\n" + luaFile(op) +
		"\nend\nlocal out = body()\nlanes_flush()\nreturn out\n")}
}

// mustReadScript is mustScript for a read: its function is registered
// with the no-writes flag, so that the server runs it even when it
// refuses writes (maxmemory reached) and fails it if it ever wrote.
func mustReadScript(op string) *luaScript {
	sc := mustScript(op)
	sc.read = true
	return sc
}

// buildLibrary makes the function library: lib.lua once, then each
// script's body as the body of a Lua function registered as
// <libName>_<op>. The library's name carries a hash of its source, so that
// Stores of different latch versions on one server each call their own
// functions (function names are global to the server) and loading one
// never replaces another's.
//
// lib.lua and the bodies read KEYS, ARGV and NS as in a script; here they
// are locals of the library that each call sets from FCALL's keys and
// arguments before it runs its body. Redis runs one function at a time, to
// the end, so no two calls share them.
func buildLibrary() (string, string) {
	sum := sha1.New()
	sum.Write([]byte(luaFile("lib")))
	for _, sc := range allScripts {
		sum.Write([]byte("\x00" + sc.op + "\x00" + luaFile(sc.op)))
	}
	name := "latch_" + hex.EncodeToString(sum.Sum(nil))[:16]
	var b strings.Builder
	b.WriteString("#!lua name=" + name + "\n")
	b.WriteString("local KEYS, ARGV = {}, {}\n")
	b.WriteString(luaFile("lib"))
	b.WriteString(`
local function entry(body)
  return function(keys, args)
    KEYS, ARGV, NS = keys, args, args[1]
    run_reset()
    local out = body()
    lanes_flush()
    return out
  end
end
`)
	for _, sc := range allScripts {
		sc.fn = name + "_" + sc.op
		if sc.read {
			fmt.Fprintf(&b, "\nredis.register_function{function_name='%s', flags={'no-writes'}, callback=entry(function()\n%s\nend)}\n",
				sc.fn, luaFile(sc.op))
			continue
		}
		fmt.Fprintf(&b, "\nredis.register_function('%s', entry(function()\n%s\nend))\n", sc.fn, luaFile(sc.op))
	}
	return name, b.String()
}

// loadScripts makes the scripts ready on the server, so that a Lua error
// shows at Open: it loads the function library and reports true, or, on a
// server that has no FUNCTION command or does not let this user load a
// library (ACL), or when useFunctions is false, loads every script into the
// script cache (so that the first calls need not send the source) and
// reports false.
func loadScripts(ctx context.Context, c scripter, useFunctions bool) (functions bool, err error) {
	if useFunctions {
		err = loadLibrary(ctx, c)
		if err == nil {
			return true, nil
		}
		if !isUnknownCommand(err) && !isNoPerm(err) {
			return false, err
		}
	}
	for _, s := range allScripts {
		if err := s.eval.Load(ctx, c).Err(); err != nil {
			return false, fmt.Errorf("redis: load scripts: %w", err)
		}
	}
	return false, nil
}

// loadLibrary loads (or loads again: REPLACE) the function library.
func loadLibrary(ctx context.Context, c scripter) error {
	if err := c.FunctionLoadReplace(ctx, librarySource).Err(); err != nil {
		return fmt.Errorf("redis: load function library: %w", err)
	}
	return nil
}

// runScript runs sc with FCALL when functions is set, else with EVALSHA
// (which go-redis follows with EVAL when the server has lost its script
// cache). A server that lost the library — a restart without persistence,
// FUNCTION FLUSH, a cluster's new primary after a resharding — answers
// that the function is missing without running anything, so it is loaded
// again (load: on the server, or on every primary of a cluster) and the
// call made once more.
func runScript(ctx context.Context, c scripter, functions bool, load func(context.Context) error,
	sc *luaScript, keys []string, args ...any) (any, error) {
	if !functions {
		return sc.eval.Run(ctx, c, keys, args...).Result()
	}
	res, err := c.FCall(ctx, sc.fn, keys, args...).Result()
	if err != nil && isNoFunction(err) {
		if err := load(ctx); err != nil {
			return nil, err
		}
		res, err = c.FCall(ctx, sc.fn, keys, args...).Result()
	}
	return res, err
}

func isNoFunction(err error) bool {
	var re goredis.Error
	return errors.As(err, &re) && strings.Contains(re.Error(), "Function not found")
}

func isUnknownCommand(err error) bool {
	var re goredis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := strings.ToLower(re.Error())
	return strings.Contains(msg, "unknown command") || strings.Contains(msg, "unknown subcommand")
}

func isNoPerm(err error) bool {
	var re goredis.Error
	return errors.As(err, &re) && strings.HasPrefix(re.Error(), "NOPERM")
}
