-- hint_set.lua: the tenant router's hint refresh (router_hints.go) — set a
-- tenant's hint to the first time read from its namespace, or remove it,
-- only if no lowering was counted since the caller read the count, before
-- it read the namespace, and no call holds the hint down (hold): a call
-- between its two lowerings may commit work the caller's read missed.
--
-- KEYS[1] shard:hint:<what>   KEYS[2] shard:gen:<what>:<T>
-- KEYS[3] shard:hold:<what>:<T>
-- ARGV[1] NS  ARGV[2] tenant  ARGV[3] the count read ('' = none yet)
-- ARGV[4] the hint's score ('' = remove the hint)
-- ARGV[5] now (ms): holds that lapsed by then are dropped
-- Returns {1} when it wrote, {0} when a lowering came in between or a
-- hold stands.

if (redis.call('GET', KEYS[2]) or '') ~= ARGV[3] then return {0} end
if redis.call('EXISTS', KEYS[3]) == 1 then
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', ARGV[5])
  if redis.call('ZCARD', KEYS[3]) > 0 then return {0} end
end
if ARGV[4] == '' then
  redis.call('ZREM', KEYS[1], ARGV[2])
else
  redis.call('ZADD', KEYS[1], ARGV[4], ARGV[2])
end
return {1}
