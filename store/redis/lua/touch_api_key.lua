-- touch_api_key.lua: Store.TouchAPIKey — record a key's use, at most once
-- per interval, and never for a key that is gone (no record is made anew).
--
-- KEYS[1] apikey:<hash>
-- ARGV[1] NS  ARGV[2] now_us  ARGV[3] interval_us
-- Returns {1} when it wrote, {0} otherwise.

local used = redis.call('HGET', KEYS[1], 'used')
if redis.call('EXISTS', KEYS[1]) == 0 then return {0} end
if used and tonumber(used) > tonumber(ARGV[2]) - tonumber(ARGV[3]) then return {0} end
redis.call('HSET', KEYS[1], 'used', ARGV[2])
return {1}
