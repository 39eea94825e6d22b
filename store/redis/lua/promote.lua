-- promote.lua: Store.Promote — scheduled executions whose run_at has come
-- become queued (up to limit, oldest run_at first), whether or not a claim
-- has already made them due (lib.lua, leave).
--
-- KEYS[1] sched   KEYS[2] due
--   derived: exec:<id> of each due execution, the ready indexes, ck:<c>
-- ARGV[1] NS  ARGV[2] now_us  ARGV[3] limit
-- Returns {version, promoted}; version 0 when nothing changed.

local n = promote_due(ARGV[2], tonumber(ARGV[3]))
local v = 0
if n > 0 then v = changed() end
return {v, n}
