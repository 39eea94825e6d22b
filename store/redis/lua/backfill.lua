-- backfill.lua: Open's upgrade of records stored before key ids and the
-- per-tenant rate-limit index: each run fixes one record, idempotently, so
-- servers starting together may all run it.
--
-- KEYS[1] apikey:<hash> or ratelimit:<c>
-- ARGV[1] NS  ARGV[2] 'key' or 'rate'  ARGV[3] the key hash (for 'key')
-- ARGV[4] a new key id (for 'key')
-- Returns {1} when it changed something, {0} otherwise.

if ARGV[2] == 'key' then
  local v = redis.call('HMGET', KEYS[1], 'tenant', 'key_id')
  if v[2] or redis.call('EXISTS', KEYS[1]) == 0 then return {0} end
  redis.call('HSET', KEYS[1], 'key_id', ARGV[4])
  if v[1] then redis.call('HSET', k_keyids(v[1]), ARGV[4], ARGV[3]) end
  return {1}
end
local v = redis.call('HMGET', KEYS[1], 'tenant', 'key')
if not v[1] or not v[2] then return {0} end
return {redis.call('SADD', k_ratelimits(v[1]), v[2])}
