-- add_api_key.lua: Store.AddAPIKey — store another key hash for an existing
-- tenant, under its key id.
--
-- KEYS[1] tenant:<T>   KEYS[2] apikey:<hash>   KEYS[3] keyids:<T>
-- ARGV[1] NS  ARGV[2] tenant  ARGV[3] created_us  ARGV[4] key id
-- ARGV[5] key hash
-- Returns {'NOTFOUND'}, {'KEYEXISTS'} (nothing written) or {'OK'}.

if redis.call('EXISTS', KEYS[1]) == 0 then return {'NOTFOUND'} end
if redis.call('EXISTS', KEYS[2]) == 1 then return {'KEYEXISTS'} end
redis.call('HSET', KEYS[2], 'tenant', ARGV[2], 'created', ARGV[3], 'key_id', ARGV[4])
redis.call('HSET', KEYS[3], ARGV[4], ARGV[5])
return {'OK'}
