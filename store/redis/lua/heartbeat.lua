-- heartbeat.lua: Store.Heartbeat — extend a running execution's lease,
-- fenced by its lease token and its expiry (I5): a lease that expired
-- before now is lost, whether or not Rescue has ended it yet.
--
-- KEYS[1] exec:<id>   KEYS[2] running
-- ARGV[1] NS  ARGV[2] id  ARGV[3] tenant ('' = any)  ARGV[4] token
-- ARGV[5] lease_expires_us  ARGV[6] now_us
-- Returns {'LEASELOST'} (nothing changed) or {'OK', cancel_requested (0/1),
-- the lease's expiry before it}.

local e = fence(ARGV[2], ARGV[3], ARGV[4], ARGV[6])
if not e then return {'LEASELOST'} end
redis.call('HSET', KEYS[1], 'lease_exp', ARGV[5])
redis.call('ZADD', KEYS[2], ARGV[5], e.id)
return {'OK', tonumber(e.cancel), e.lease_exp}
