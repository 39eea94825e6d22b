-- put_rate_limit.lua: Store.PutRateLimit — create or replace a tenant's
-- limit for one rate key. A replace keeps the bucket's TAT (and CreatedAt):
-- only claim.lua moves the TAT, in the step that starts an execution.
--
-- KEYS[1] ratelimit:<c>   KEYS[2] tenant:<T>   KEYS[3] ratelimits:<T>
-- ARGV[1] NS  ARGV[2] tenant  ARGV[3] rate key  ARGV[4] rate
-- ARGV[5] per_us  ARGV[6] burst  ARGV[7] interval_us (per/rate, whole
-- microseconds rounded up)  ARGV[8] now_us
-- Returns {'NOTFOUND'} for an unknown tenant (nothing written) or
-- {'OK', HGETALL}.

if redis.call('EXISTS', KEYS[2]) == 0 then return {'NOTFOUND'} end
redis.call('HSETNX', KEYS[1], 'created', ARGV[8])
redis.call('HSET', KEYS[1], 'tenant', ARGV[2], 'key', ARGV[3], 'rate', ARGV[4], 'per', ARGV[5],
  'burst', ARGV[6], 'iv', ARGV[7], 'updated', ARGV[8])
redis.call('SADD', KEYS[3], ARGV[3])
return {'OK', redis.call('HGETALL', KEYS[1])}
