-- delete_rate_limit.lua: Store.DeleteRateLimit — remove a tenant's limit
-- for one rate key; executions with the key then start freely (deferred
-- ones keep their run_at).
--
-- KEYS[1] ratelimit:<c>
-- ARGV[1] NS
-- Returns {'NOTFOUND'} or {'OK'}.

if redis.call('DEL', KEYS[1]) == 0 then return {'NOTFOUND'} end
return {'OK'}
