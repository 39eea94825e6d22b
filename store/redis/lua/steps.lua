-- steps.lua: Store.Steps — one page of an execution's journal in record
-- order (lib.lua, journal_page): the names are read in order and the
-- entries of the steps the page keeps only, so a page reads at most its
-- bound of bytes and one step more. It writes only to build the order and
-- size of a journal an older latch recorded (journal_size).
--
-- KEYS[1] exec:<id>   KEYS[2] steps:<id>   KEYS[3] steporder:<id>
-- ARGV[1] NS  ARGV[2] id  ARGV[3] tenant ('' = any)  ARGV[4] after (a
-- previous page's next, 0 = the first page)  ARGV[5] limit (0 = all)
-- ARGV[6] the page's bound of bytes (0 = none)
-- Returns {'NOTFOUND'} or {'OK', next, name, entry, ...}: next 0 when the
-- journal holds no step after the page.

local t = redis.call('HGET', KEYS[1], 'tenant')
if not t or (ARGV[3] ~= '' and t ~= ARGV[3]) then return {'NOTFOUND'} end
local next, page = journal_page(ARGV[2], tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]))
local out = {'OK', next}
for _, v in ipairs(page) do out[#out + 1] = v end
return out
