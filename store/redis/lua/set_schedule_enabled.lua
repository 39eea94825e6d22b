-- set_schedule_enabled.lua: Store.SetScheduleEnabled — pause or resume a
-- schedule, its other settings untouched, in one step. A resume of a
-- paused schedule takes the given next_run_at and enters the nextrun
-- index, only while its timing (cron, every, tz) is the one next_run_at was
-- computed from; a pause leaves it. A schedule already in the asked state,
-- or whose timing a replace changed, is left as it is.
--
-- KEYS[1] schedule:<s>   KEYS[2] nextrun
-- ARGV[1] NS  ARGV[2] scope <s>  ARGV[3] enabled (0/1)  ARGV[4] next_run_at_us
-- ARGV[5] now_us  ARGV[6] cron  ARGV[7] every_us  ARGV[8] timezone
-- Returns {'NOTFOUND'} or {'OK', the schedule's fields}.

local cur = redis.call('HMGET', KEYS[1], 'enabled', 'cron', 'every', 'tz')
if not cur[1] then return {'NOTFOUND'} end
if cur[1] ~= ARGV[3] then
  if ARGV[3] == '1' then
    if cur[2] ~= ARGV[6] or cur[3] ~= ARGV[7] or cur[4] ~= ARGV[8] then
      return {'OK', redis.call('HGETALL', KEYS[1])}
    end
    redis.call('HSET', KEYS[1], 'enabled', '1', 'next', ARGV[4], 'updated', ARGV[5])
    redis.call('ZADD', KEYS[2], ARGV[4], ARGV[2])
  else
    redis.call('HSET', KEYS[1], 'enabled', '0', 'updated', ARGV[5])
    redis.call('ZREM', KEYS[2], ARGV[2])
  end
end
return {'OK', redis.call('HGETALL', KEYS[1])}
