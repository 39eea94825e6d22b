-- create_tenant.lua: Store.CreateTenant — the tenant record, its entry in
-- the tenant set and its first API key, together or not at all.
--
-- KEYS[1] tenant:<T>   KEYS[2] tenants   KEYS[3] apikey:<hash> and KEYS[4]
-- keyids:<T>, only when ARGV[7] is not ''
-- ARGV[1] NS  ARGV[2] name  ARGV[3] max_inflight  ARGV[4] dedup_ttl_us
-- ARGV[5] retention_us  ARGV[6] created_us  ARGV[7] key hash ('' = none)
-- ARGV[8] key id  ARGV[9] max_bytes (the storage budget)  ARGV[10]
-- event_ret_us (the event retention)
-- Returns {'EXISTS'}, {'KEYEXISTS'} (nothing written) or {'OK'}.

if redis.call('EXISTS', KEYS[1]) == 1 then return {'EXISTS'} end
if ARGV[7] ~= '' and redis.call('EXISTS', KEYS[3]) == 1 then return {'KEYEXISTS'} end
redis.call('HSET', KEYS[1], 'name', ARGV[2], 'max_inflight', ARGV[3], 'inflight', 0,
  'dedup_ttl', ARGV[4], 'retention', ARGV[5], 'created', ARGV[6], 'max_bytes', ARGV[9], 'stored', 0,
  'event_ret', ARGV[10])
redis.call('SADD', KEYS[2], ARGV[2])
if ARGV[7] ~= '' then
  redis.call('HSET', KEYS[3], 'tenant', ARGV[2], 'created', ARGV[6], 'key_id', ARGV[8])
  redis.call('HSET', KEYS[4], ARGV[8], ARGV[7])
end
return {'OK'}
