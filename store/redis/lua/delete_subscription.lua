-- delete_subscription.lua: Store.DeleteSubscription — remove a tenant's
-- subscription and its index entries; the executions it started stay.
--
-- KEYS[1] sub:<sc>   KEYS[2] subs:<T>
--   derived: subev:<c> of its event
-- ARGV[1] NS  ARGV[2] tenant  ARGV[3] name
-- Returns {'NOTFOUND'} or {'OK'}.

local ev = redis.call('HGET', KEYS[1], 'event')
if not ev then return {'NOTFOUND'} end
redis.call('ZREM', k_subev(scoped(ARGV[2], ev)), ARGV[3])
redis.call('ZREM', KEYS[2], ARGV[3])
redis.call('DEL', KEYS[1])
return {'OK'}
