-- delete_api_key.lua: Store.DeleteAPIKey — remove one of a tenant's keys
-- by its id: from this step on the hash resolves to nothing.
--
-- KEYS[1] keyids:<T>
--   derived: apikey:<hash> of the key
-- ARGV[1] NS  ARGV[2] key id
-- Returns {'NOTFOUND'} or {'OK'}.

local h = redis.call('HGET', KEYS[1], ARGV[2])
if not h then return {'NOTFOUND'} end
redis.call('DEL', k_apikey(h))
redis.call('HDEL', KEYS[1], ARGV[2])
return {'OK'}
