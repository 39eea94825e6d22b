-- seed_turns.lua: run by Open — puts in turns (lib.lua) every tenant whose
-- ready:t index holds executions but that turns lacks: executions queued
-- by a latch from before turns existed. Changes nothing when turns is
-- whole; O(tenants).
--
-- KEYS[1] tenants   KEYS[2] turns
-- ARGV[1] NS
-- Returns {the number of tenants it added}.

local n = 0
for _, t in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  if redis.call('ZCARD', k_ready_t(t)) > 0 and not redis.call('ZSCORE', KEYS[2], t) then
    turn_enter(t)
    n = n + 1
  end
end
return {n}
