-- complete.lua: Store.Complete — end the attempt as succeeded, or as
-- cancelled when a cancel was requested, and free the quota slot. Fenced by
-- the lease token and its expiry (I5). One or more calls (a group gathered
-- by the Store from concurrent callers), each decided on its own. The
-- attempt's run ends with the same outcome (lib.lua, run_end).
--
-- Group protocol (group.go, lib.lua each_call).
-- KEYS[1] running
-- each call's keys: exec:<id>
--   derived: tenant:<T>, done:<T>, the ready indexes, ck:<c>, ckparkg:<c>,
--   ckpark:<c>, runs:<id>
-- each call's ARGV: id, tenant ('' = any), token, now_us, has_result (0/1),
--   result JSON
-- Returns {version, reply_1, ...}; a reply is {'LEASELOST'}, {'STORAGE',
-- bytes} (the result would pass the tenant's storage budget; nothing
-- changed, the lease kept) or {'OK', HGETALL of the execution, family} (the
-- ids of the other executions of its family it changed, lib.lua).

-- The retention entries and freed quota slots of the group are written
-- once per tenant at the end (lib.lua, finish): nothing in the run reads
-- them.
local ended = {}
local res = each_call(1, function(k, a)
  local e = fence(ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3])
  if not e then return {'LEASELOST'}, false end
  if ARGV[a + 4] == '1' and not charge(e, #ARGV[a + 5]) then return {'STORAGE', #ARGV[a + 5]}, false end
  local status = 'succeeded'
  if e.cancel == '1' then status = 'cancelled' end
  run_end(e, ARGV[a + 3], status) -- the outcomes are named as the statuses
  local result = nil
  if ARGV[a + 4] == '1' then result = ARGV[a + 5] end
  local f0 = #family
  finish(e, status, ARGV[a + 3], result, '', ended)
  return {'OK', redis.call('HGETALL', KEYS[k]), family_since(f0)}, true
end)
ended_flush(ended)
return res
