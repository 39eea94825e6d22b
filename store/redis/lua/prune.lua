-- prune.lua: Store.Prune — delete terminal executions finished more than
-- their tenant's retention ago (up to limit), each with its dedup key if the
-- key still names it and with its family (lib.lua, drop: a child has no
-- retention entry of its own, so it goes with its parent only), then dedup
-- keys whose TTL has passed (up to limit), then events whose expiry has
-- come (up to limit; lib.lua, ev_drop: with their index entries and
-- idempotency keys, their bytes given back);
-- forget the names of empty queues, servers and workers not seen for
-- store.PresenceKept and activity minutes older than store.ActivityKept
-- (bounds computed by the caller).
--
-- KEYS[1] tenants   KEYS[2] dedupexp
--   derived: tenant:<T> and done:<T> of every tenant, exec:<id> and the
--   list entries, flow records and runs:<id> of each pruned execution,
--   dedup:<T> of each expired key, evexp:<T> of every tenant, event:<id>
--   and the indexes and evidem:<T> of each expired event, queues:<T> and
--   the queue statistics'
--   keys of every tenant, servers, server:<id>, workers, activity,
--   activity:<minute>
-- ARGV[1] NS  ARGV[2] now_us  ARGV[3] limit  ARGV[4] presence bound_us
-- (servers and workers last seen before it go)  ARGV[5] activity
-- bound_us (minutes before it go)
-- Returns {version, executions, dedup_keys, events}; version 0 when no
-- execution was deleted.

local now, limit = tonumber(ARGV[2]), tonumber(ARGV[3])
local pruned = 0
for _, t in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  if pruned >= limit then break end
  local retention = tonumber(redis.call('HGET', k_tenant(t), 'retention'))
  if retention then
    local bound = '(' .. istr(now - retention)
    for _, id in ipairs(redis.call('ZRANGEBYSCORE', k_done(t), '-inf', bound, 'LIMIT', 0, limit - pruned)) do
      local e = load(id)
      if e then
        pruned = pruned + drop(e)
      else
        redis.call('ZREM', k_done(t), id)
        pruned = pruned + 1
      end
    end
  end
end

local keys = 0
for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[2], 'LIMIT', 0, limit)) do
  local sep = string.find(m, ':', 1, true)
  local tlen = tonumber(string.sub(m, 1, sep - 1))
  local t = string.sub(m, sep + 1, sep + tlen)
  redis.call('HDEL', k_dedup(t), string.sub(m, sep + tlen + 1))
  redis.call('ZREM', KEYS[2], m)
  keys = keys + 1
end

local events = 0
for _, t in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  if events >= limit then break end
  for _, eid in ipairs(redis.call('ZRANGEBYSCORE', k_evexp(t), '-inf', ARGV[2], 'LIMIT', 0, limit - events)) do
    if not ev_drop(eid) then redis.call('ZREM', k_evexp(t), eid) end
    events = events + 1
  end
end

-- A tenant's queue that holds nothing leaves queues:<T> (lib.lua,
-- qs_enter); it comes back with its next execution.
for _, t in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  for _, q in ipairs(redis.call('SMEMBERS', k_queues(t))) do
    local c = scoped(t, q)
    if redis.call('EXISTS', k_qqueued(c), k_qsched(c), k_qsusp(c)) == 0 then
      redis.call('SREM', k_queues(t), q)
    end
  end
end

-- Servers and workers not seen since the presence bound, activity
-- minutes before the activity bound.
local bound = '(' .. ARGV[4]
for _, id in ipairs(redis.call('ZRANGEBYSCORE', k_servers(), '-inf', bound)) do
  redis.call('DEL', k_server(id))
end
redis.call('ZREMRANGEBYSCORE', k_servers(), '-inf', bound)
for _, m in ipairs(redis.call('ZRANGEBYSCORE', k_workers(), '-inf', bound)) do
  redis.call('HDEL', k_workerclaims(), m)
end
redis.call('ZREMRANGEBYSCORE', k_workers(), '-inf', bound)
bound = '(' .. ARGV[5]
for _, m in ipairs(redis.call('ZRANGEBYSCORE', k_activity(), '-inf', bound)) do
  redis.call('DEL', k_activity_m(m))
end
redis.call('ZREMRANGEBYSCORE', k_activity(), '-inf', bound)

local v = 0
if pruned > 0 then v = changed() end
return {v, pruned, keys, events}
