-- delete.lua: Store.Delete — remove a terminal execution, or with force any
-- execution: the hash, its list and retention entries, its queue, lease or
-- wake entry, its quota slot when it was in flight, its dedup key when the
-- key still names it (compare-and-delete), its attempt history, and its
-- journal, buffered signals and signal idempotency keys, all in this one
-- script. A worker holding its lease is fenced from then on: the hash (and
-- token) are gone. A parent goes with its family (lib.lua, drop); a child
-- deleted in flight ends (lib.lua, child_end), which may end its parent's
-- fan-in wait.
--
-- KEYS[1] exec:<id>
--   derived: list, list:<T>, done:<T>, dedup:<T>, dedupexp, tenant:<T>,
--   sched, running, wake, the ready indexes, ck:<c>, ckparkg:<c>,
--   ckpark:<c>, steps:<id>, signames:<id>, sigbuf:<scoped(id, name)>,
--   sigkeys:<id>, runs:<id>, kids:<id>, spawns:<id>, evdone:<id>, the
--   waiters of its event (evwait:<c> or evwaitk:<ck>), and those of each
--   child dropped with it; of its parent, kids:<id>, spawns:<id>, exec:<id>
--   and steps:<id> (a fan-in wait's end)
-- ARGV[1] NS  ARGV[2] id  ARGV[3] tenant ('' = any)  ARGV[4] force (0/1)
-- ARGV[5] now_us
-- Returns {'NOTFOUND'}, {'NOTTERMINAL', status} (nothing changed) or
-- {'OK', version, family} (the ids of the other executions of its family
-- it changed or deleted, lib.lua).

local e = owned(ARGV[2], ARGV[3])
if not e then return {'NOTFOUND'} end
local inflight = in_flight(e.status)
if inflight and ARGV[4] ~= '1' then return {'NOTTERMINAL', e.status} end
if inflight then
  leave(e)
  redis.call('HINCRBY', k_tenant(e.tenant), 'inflight', -1)
end
drop(e)
if e.ckey then ck_settle(ck_of(e)) end
if inflight and e.parent then child_end(e, ARGV[5]) end
return {'OK', changed(), family}
