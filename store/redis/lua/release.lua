-- release.lua: Store.Release — hand a running attempt back (graceful
-- shutdown): queued again at once, or cancelled if a cancel was requested.
-- The attempt still counts as a start, unless the handler never started
-- (unstarted): then the claim's start is given back, and a resume's claim,
-- which counted none, stays a resume. Fenced by the lease token and its
-- expiry (I5). The attempt's run ends released, or cancelled (lib.lua,
-- run_end).
--
-- KEYS[1] exec:<id>
--   derived: running, the ready indexes, tenant:<T>, done:<T>, ck:<c>,
--   ckparkg:<c>, ckpark:<c>, runs:<id>
-- ARGV[1] NS  ARGV[2] id  ARGV[3] tenant ('' = any)  ARGV[4] token
-- ARGV[5] now_us  ARGV[6] ra (now as a queue member part)
-- ARGV[7] unstarted ('1' or '0')
-- Returns {'LEASELOST'} (nothing changed) or {'OK', version, HGETALL, family} (the ids of
-- the other executions of its family it changed, lib.lua).

local e = fence(ARGV[2], ARGV[3], ARGV[4], ARGV[5])
if not e then return {'LEASELOST'} end
local unstarted = ARGV[7] == '1'
local was_resume = e.resume
if unstarted and not was_resume then redis.call('HINCRBY', KEYS[1], 'attempt', -1) end
if e.cancel == '1' then run_end(e, ARGV[5], 'cancelled') else run_end(e, ARGV[5], 'released') end
if e.cancel == '1' then
  finish(e, 'cancelled', ARGV[5], nil, '')
elseif unstarted and was_resume then
  resume(e, ARGV[5], ARGV[6])
else
  requeue(e, ARGV[5], ARGV[6], ARGV[5], '')
end
return {'OK', changed(), redis.call('HGETALL', KEYS[1]), family}
