-- list_rate_limits.lua: Store.ListRateLimits — a read, in one script: the
-- rate limits of one tenant or of every tenant, from each tenant's index
-- of its rate keys (ratelimits:<T>).
--
-- KEYS[1] tenants
--   derived: ratelimits:<T> of each tenant, ratelimit:<c> of each key
-- ARGV[1] NS  ARGV[2] tenant ('' = every tenant)
-- Returns the HGETALL of each limit, in no particular order.

local tenants = {ARGV[2]}
if ARGV[2] == '' then tenants = redis.call('SMEMBERS', KEYS[1]) end
local out = {}
for _, t in ipairs(tenants) do
  for _, rk in ipairs(redis.call('SMEMBERS', k_ratelimits(t))) do
    local h = redis.call('HGETALL', k_ratelimit(scoped(t, rk)))
    if #h > 0 then out[#out + 1] = h end
  end
end
return out
