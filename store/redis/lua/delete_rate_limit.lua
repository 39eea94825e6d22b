-- delete_rate_limit.lua: Store.DeleteRateLimit — remove a tenant's limit
-- for one rate key; executions with the key then start freely (deferred
-- ones keep their run_at).
--
-- KEYS[1] ratelimit:<c>   KEYS[2] ratelimits:<T>
-- ARGV[1] NS  ARGV[2] rate key
-- Returns {'NOTFOUND'} or {'OK'}.

if redis.call('DEL', KEYS[1]) == 0 then return {'NOTFOUND'} end
redis.call('SREM', KEYS[2], ARGV[2])
return {'OK'}
