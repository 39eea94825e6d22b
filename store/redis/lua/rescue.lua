-- rescue.lua: Store.Rescue — end every lease that expired before now
-- (up to limit, earliest first): cancelled if a cancel was requested, queued
-- again (claimable at once) while attempts remain, else failed. An
-- execution is in the running set exactly while it holds a lease, and this
-- script is atomic, so one that completed in the meantime is not touched.
-- Each lease's run ends expired, whatever follows (lib.lua, run_end).
--
-- KEYS[1] running
--   derived: exec:<id> of each expired lease, the ready indexes,
--   tenant:<T>, done:<T>, ck:<c>, ckparkg:<c>, ckpark:<c>, runs:<id>
-- ARGV[1] NS  ARGV[2] now_us  ARGV[3] limit  ARGV[4] ra (now as a queue
-- member part)  ARGV[5] the error recorded for a lost lease
-- Returns {version, requeued, failed, cancelled}; version 0 when nothing
-- changed.

local now = ARGV[2]
local requeued, failed, cancelled = 0, 0, 0
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. now, 'LIMIT', 0, tonumber(ARGV[3]))) do
  local e = load(id)
  if not e or e.status ~= 'running' then
    redis.call('ZREM', KEYS[1], id) -- cannot happen; never block on it
  else
    run_end(e, now, 'expired')
    if e.cancel == '1' then
      finish(e, 'cancelled', now, nil, '')
      cancelled = cancelled + 1
    elseif tonumber(e.attempt) < tonumber(e.maxatt) then
      requeue(e, now, ARGV[4], now, ARGV[5])
      requeued = requeued + 1
    else
      finish(e, 'failed', now, nil, ARGV[5])
      failed = failed + 1
    end
  end
end
local v = 0
if requeued + failed + cancelled > 0 then v = changed() end
return {v, requeued, failed, cancelled}
