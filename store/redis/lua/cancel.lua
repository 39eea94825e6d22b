-- cancel.lua: Store.Cancel. Scheduled, queued or suspended: cancelled at
-- once, quota freed. Running: the cancel request is recorded durably on the execution
-- (the worker reads it from its heartbeat; Complete, Fail, Release or
-- Rescue turn it into the cancelled status). Terminal: unchanged. Either
-- way in flight, the children it spawned with 'cancel' are cancelled with
-- it (lib.lua, parent_end), and its end may end its parent's fan-in wait
-- (lib.lua, child_end).
--
-- KEYS[1] exec:<id>
--   derived: sched, wake, the ready indexes, tenant:<T>, done:<T>, ck:<c>,
--   ckparkg:<c>, ckpark:<c>, the waiters of its event (evwait:<c> or
--   evwaitk:<ck>), kids:<id> and the same of each child; of its
--   parent, spawns:<id>, exec:<id> and steps:<id>
-- ARGV[1] NS  ARGV[2] id  ARGV[3] tenant ('' = any)  ARGV[4] now_us
-- Returns {'NOTFOUND'} or {'OK', version, HGETALL, family} (family: the ids
-- of the other executions of its family it changed, lib.lua); version 0 when nothing
-- changed.

local e = owned(ARGV[2], ARGV[3])
if not e then return {'NOTFOUND'} end
local v = 0
if e.status == 'queued' or e.status == 'scheduled' or e.status == 'suspended' then
  finish(e, 'cancelled', ARGV[4], nil, '')
  v = changed()
elseif e.status == 'running' and e.cancel ~= '1' then
  redis.call('HSET', KEYS[1], 'cancel', 1)
  if e.kids then parent_end(e, ARGV[4]) end
  v = changed()
end
return {'OK', v, redis.call('HGETALL', KEYS[1]), family}
