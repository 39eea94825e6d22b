-- fail.lua: Store.Fail — end the attempt. Cancelled if a cancel was
-- requested; else queued again (scheduled at run_at) when retry is asked
-- and attempts remain; else failed, freeing the quota slot. Fenced by the
-- lease token and its expiry (I5). The attempt's run ends failed with the
-- error, or cancelled (lib.lua, run_end).
--
-- KEYS[1] exec:<id>
--   derived: running, sched, the ready indexes, tenant:<T>, done:<T>,
--   ck:<c>, ckparkg:<c>, ckpark:<c>, runs:<id>
-- ARGV[1] NS  ARGV[2] id  ARGV[3] tenant ('' = any)  ARGV[4] token
-- ARGV[5] now_us  ARGV[6] error  ARGV[7] retry (0/1)  ARGV[8] run_at_us of
-- the retry  ARGV[9] ra (run_at as a queue member part)
-- The error counts in the tenant's storage budget, never refused.
-- Returns {'LEASELOST'} (nothing changed) or {'OK', version, HGETALL, family} (the ids of
-- the other executions of its family it changed, lib.lua).

local e = fence(ARGV[2], ARGV[3], ARGV[4], ARGV[5])
if not e then return {'LEASELOST'} end
charge(e, #ARGV[6], true) -- counted, never refused: an attempt can always end
if e.cancel == '1' then run_end(e, ARGV[5], 'cancelled') else run_end(e, ARGV[5], 'failed', ARGV[6]) end
if e.cancel == '1' then
  finish(e, 'cancelled', ARGV[5], nil, ARGV[6])
elseif ARGV[7] == '1' and tonumber(e.attempt) < tonumber(e.maxatt) then
  requeue(e, ARGV[8], ARGV[9], ARGV[5], ARGV[6])
else
  finish(e, 'failed', ARGV[5], nil, ARGV[6])
end
return {'OK', changed(), redis.call('HGETALL', KEYS[1]), family}
