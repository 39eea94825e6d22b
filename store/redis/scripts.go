package redis

import (
	"context"
	"embed"
	"fmt"

	goredis "github.com/redis/go-redis/v9"
)

//go:embed lua/*.lua
var luaFS embed.FS

// The Lua scripts, one per Store operation that changes state. Each is
// lua/lib.lua followed by the operation's own file, loaded as one script.
var (
	scriptAdmit           = mustScript("admit.lua")
	scriptClaim           = mustScript("claim.lua")
	scriptHeartbeat       = mustScript("heartbeat.lua")
	scriptComplete        = mustScript("complete.lua")
	scriptFail            = mustScript("fail.lua")
	scriptRelease         = mustScript("release.lua")
	scriptCancel          = mustScript("cancel.lua")
	scriptDelete          = mustScript("delete.lua")
	scriptRescue          = mustScript("rescue.lua")
	scriptPromote         = mustScript("promote.lua")
	scriptPrune           = mustScript("prune.lua")
	scriptCreateTenant    = mustScript("create_tenant.lua")
	scriptUpdateTenant    = mustScript("update_tenant.lua")
	scriptAddAPIKey       = mustScript("add_api_key.lua")
	scriptEnsureAdminKey  = mustScript("ensure_admin_key.lua")
	scriptPutSchedule     = mustScript("put_schedule.lua")
	scriptDeleteSchedule  = mustScript("delete_schedule.lua")
	scriptFireSchedule    = mustScript("fire_schedule.lua")
	scriptPutRateLimit    = mustScript("put_rate_limit.lua")
	scriptDeleteRateLimit = mustScript("delete_rate_limit.lua")

	allScripts = []*goredis.Script{
		scriptAdmit, scriptClaim, scriptHeartbeat, scriptComplete, scriptFail, scriptRelease,
		scriptCancel, scriptDelete, scriptRescue, scriptPromote, scriptPrune,
		scriptCreateTenant, scriptUpdateTenant, scriptAddAPIKey, scriptEnsureAdminKey,
		scriptPutSchedule, scriptDeleteSchedule, scriptFireSchedule, scriptPutRateLimit, scriptDeleteRateLimit,
	}
)

func luaSource(name string) string {
	lib, err := luaFS.ReadFile("lua/lib.lua")
	if err != nil {
		panic(err)
	}
	body, err := luaFS.ReadFile("lua/" + name)
	if err != nil {
		panic(err)
	}
	return string(lib) + "\n" + string(body)
}

func mustScript(name string) *goredis.Script {
	return goredis.NewScript(luaSource(name))
}

// loadScripts loads every script into the server's script cache, so that a
// Lua error shows at Open and the first calls need not send the source.
// Script.Run still falls back to EVAL if the cache is flushed later
// (NOSCRIPT), for example by a Redis restart.
func loadScripts(ctx context.Context, c goredis.Scripter) error {
	for _, s := range allScripts {
		if err := s.Load(ctx, c).Err(); err != nil {
			return fmt.Errorf("redis: load scripts: %w", err)
		}
	}
	return nil
}
