-- ensure_admin_key.lua: Store.EnsureAdminKey — store the admin key hash if
-- no admin key exists yet. The check and the write are this one script, so
-- of any number of racing servers exactly one stores its key.
--
-- KEYS[1] admin (string: the admin key's hash)   KEYS[2] apikey:<hash>
-- ARGV[1] NS  ARGV[2] key hash  ARGV[3] created_us  ARGV[4] key id
-- Returns {1} when this call stored the key, {0} otherwise.

if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('EXISTS', KEYS[2]) == 1 then return {0} end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('HSET', KEYS[2], 'admin', 1, 'created', ARGV[3], 'key_id', ARGV[4])
return {1}
