-- wake.lua: Store.Wake — end the suspensions whose wake_at is not after
-- now (up to limit, earliest first): the step is recorded (null after a
-- sleep, timed_out after a wait, the children as they are with timed_out
-- after a fan-in wait: lib.lua, fanin_end) and the execution is queued again at now
-- (a resume). A suspension a signal ended in the meantime has left the
-- wake set in that script: each ends once (I11).
--
-- KEYS[1] wake
--   derived: exec:<id> and steps:<id> of each woken execution, the waiters
--   of its event (evwait:<c> or evwaitk:<ck>), the ready indexes, ck:<c>
-- ARGV[1] NS  ARGV[2] now_us  ARGV[3] limit  ARGV[4] ra (now as a queue
-- member part)  ARGV[5] the result recorded for a wait that timed out
-- Returns {version, id_1, ..., id_n}, the ids woken; version 0 when
-- nothing changed.

local now = ARGV[2]
local out = {0}
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[3]))) do
  local e = load(id, SUSPEND_FIELDS)
  if not e or e.status ~= 'suspended' then
    redis.call('ZREM', KEYS[1], id) -- cannot happen; never block on it
  else
    if fanin_wait(e) then
      fanin_end(e, true, now)
    else
      local result = 'null'
      if e.waiting then result = ARGV[5] end
      record(e, e.sstep, result, '', now)
      resume(e, now, ARGV[4])
    end
    out[#out + 1] = id
  end
end
if #out > 1 then out[1] = changed() end
return out
