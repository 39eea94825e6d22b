-- put_subscription.lua: Store.PutSubscription — create or replace a
-- tenant's subscription (CreatedAt kept by a replace), in its tenant's
-- index and its event's, out of its former event's when the event
-- changed.
--
-- KEYS[1] tenant:<T>   KEYS[2] sub:<sc>   KEYS[3] subs:<T>
--   derived: subev:<c> of its event and its former event
-- ARGV[1] NS  ARGV[2] tenant  ARGV[3] name  ARGV[4] event  ARGV[5] now_us
-- ARGV[6] the bound of a tenant's subscriptions  ARGV[7..] field, value
-- pairs: its settings and its start's template (events.go)
-- Returns {'NOTFOUND'}, {'TOOMANY', n} (nothing written) or
-- {'OK', created (0/1), HGETALL}.

local t, name, ev, now = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
if redis.call('EXISTS', KEYS[1]) == 0 then return {'NOTFOUND'} end
local old = redis.call('HMGET', KEYS[2], 'event', 'created')
local created = 0
if not old[1] then
  local n = redis.call('ZCARD', KEYS[3])
  if n >= tonumber(ARGV[6]) then return {'TOOMANY', n} end
  created = 1
elseif old[1] ~= ev then
  redis.call('ZREM', k_subev(scoped(t, old[1])), name)
end
local h = {'tenant', t, 'name', name, 'event', ev, 'created', old[2] or now, 'updated', now}
for i = 7, #ARGV do h[#h + 1] = ARGV[i] end
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[2], unpack(h))
redis.call('ZADD', KEYS[3], 0, name)
redis.call('ZADD', k_subev(scoped(t, ev)), 0, name)
return {'OK', created, redis.call('HGETALL', KEYS[2])}
