-- put_schedule.lua: Store.PutSchedule — create a tenant's schedule or
-- replace its settings, with its entries in the tenant's name index and the
-- nextrun index, in one step. A replace that keeps the timing (cron, every,
-- time zone) of a schedule that was and stays enabled keeps its stored
-- next_run_at; otherwise next_run_at becomes the one given. last_run,
-- last_exec and created survive a replace.
--
-- KEYS[1] schedule:<s>   KEYS[2] schedules:<T>   KEYS[3] nextrun
-- KEYS[4] tenant:<T>
-- ARGV[1] NS  ARGV[2] tenant  ARGV[3] name  ARGV[4] now_us
-- ARGV[5] next_run_at_us  ARGV[6] enabled (0/1)  ARGV[7] cron
-- ARGV[8] every_us  ARGV[9] timezone  ARGV[10] max schedules of the tenant
-- (0: no bound)  ARGV[11 ..] the other settings, as field, value pairs (see
-- schedule.go)
-- Returns {'NOTFOUND'} for an unknown tenant (nothing written),
-- {'LIMIT', count} when creating it would pass the bound (nothing written)
-- or {'OK', created (0/1), HGETALL}.

if redis.call('EXISTS', KEYS[4]) == 0 then return {'NOTFOUND'} end
local s = scoped(ARGV[2], ARGV[3])
local old = redis.call('HMGET', KEYS[1], 'created', 'enabled', 'cron', 'every', 'tz', 'next')
local created = not old[1]
local maxn = tonumber(ARGV[10])
if created and maxn > 0 then
  local n = redis.call('ZCARD', KEYS[2])
  if n >= maxn then return {'LIMIT', n} end
end
local enabled = ARGV[6] == '1'
local next = ARGV[5]
if not created and old[2] == '1' and enabled
    and old[3] == ARGV[7] and old[4] == ARGV[8] and old[5] == ARGV[9] then
  next = old[6]
end
local h = {'tenant', ARGV[2], 'name', ARGV[3], 'enabled', ARGV[6], 'cron', ARGV[7], 'every', ARGV[8],
  'tz', ARGV[9], 'next', next, 'updated', ARGV[4]}
if created then h[#h + 1] = 'created'; h[#h + 1] = ARGV[4] end
for i = 11, #ARGV do h[#h + 1] = ARGV[i] end
redis.call('HSET', KEYS[1], unpack(h))
redis.call('ZADD', KEYS[2], 0, ARGV[3])
if enabled then
  redis.call('ZADD', KEYS[3], next, s)
else
  redis.call('ZREM', KEYS[3], s)
end
local c = 0
if created then c = 1 end
return {'OK', c, redis.call('HGETALL', KEYS[1])}
