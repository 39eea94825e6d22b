-- update_tenant.lua: Store.UpdateTenant — change the given settings and
-- read the record back in one step.
--
-- KEYS[1] tenant:<T>
--   derived: turns and ready:t:<T> (a change of disabled)
-- ARGV[1] NS  ARGV[2..3] has_max_inflight (0/1), max_inflight
-- ARGV[4..5] has_dedup_ttl, dedup_ttl_us  ARGV[6..7] has_retention,
-- retention_us  ARGV[8..9] has_disabled, disabled (0/1)  ARGV[10..11]
-- has_max_bytes, max_bytes  ARGV[12..13] has_event_ret, event_ret_us
-- Returns {'NOTFOUND'} or {'OK', HGETALL}.

if redis.call('EXISTS', KEYS[1]) == 0 then return {'NOTFOUND'} end
if ARGV[2] == '1' then redis.call('HSET', KEYS[1], 'max_inflight', ARGV[3]) end
if ARGV[4] == '1' then redis.call('HSET', KEYS[1], 'dedup_ttl', ARGV[5]) end
if ARGV[6] == '1' then redis.call('HSET', KEYS[1], 'retention', ARGV[7]) end
if ARGV[10] == '1' then redis.call('HSET', KEYS[1], 'max_bytes', ARGV[11]) end
if ARGV[12] == '1' then redis.call('HSET', KEYS[1], 'event_ret', ARGV[13]) end
if ARGV[8] == '1' then
  -- Absent means enabled: the field is there only while it is "1".
  -- A disabled tenant leaves turns (lib.lua), so claims pass its work by;
  -- enabled again, it comes back with its turn if it has ready work.
  local t = redis.call('HGET', KEYS[1], 'name')
  if ARGV[9] == '1' then
    redis.call('HSET', KEYS[1], 'disabled', '1')
    turn_leave(t)
  else
    redis.call('HDEL', KEYS[1], 'disabled')
    if redis.call('ZCARD', k_ready_t(t)) > 0 then turn_enter(t) end
  end
end
return {'OK', redis.call('HGETALL', KEYS[1])}
