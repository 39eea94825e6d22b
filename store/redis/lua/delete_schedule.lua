-- delete_schedule.lua: Store.DeleteSchedule — remove a schedule and its
-- index entries. The executions it fired stay as they are, and so do the
-- in-flight ones' entries in its live set: they are still executions of a
-- schedule of that name, which a schedule put again under the name counts
-- (overlap skip, Running). Ended ones are dropped from the set here.
--
-- KEYS[1] schedule:<s>   KEYS[2] schedules:<T>   KEYS[3] nextrun
-- KEYS[4] schedlive:<s>
--   derived: exec:<id> of each member of the live set
-- ARGV[1] NS  ARGV[2] tenant  ARGV[3] name
-- Returns {'NOTFOUND'} or {'OK'}.

if redis.call('DEL', KEYS[1]) == 0 then return {'NOTFOUND'} end
local s = scoped(ARGV[2], ARGV[3])
redis.call('ZREM', KEYS[2], ARGV[3])
redis.call('ZREM', KEYS[3], s)
sched_busy(s)
return {'OK'}
