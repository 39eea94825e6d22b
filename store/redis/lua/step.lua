-- step.lua: Store.RecordStep — record a step in a running execution's
-- journal (I10), fenced by the lease token and its expiry like Complete
-- (I5). The first record of a name wins: a name recorded already changes
-- nothing and is answered as recorded.
--
-- KEYS[1] exec:<id>   KEYS[2] steps:<id>
-- ARGV[1] NS  ARGV[2] id  ARGV[3] tenant ('' = any)  ARGV[4] token
-- ARGV[5] now_us  ARGV[6] name  ARGV[7] result JSON  ARGV[8] started_us
-- ('' = not given)  ARGV[9] the journal's bound (store.MaxSteps)
-- ARGV[10] its bound of bytes (store.MaxJournalBytes)
-- Returns {'LEASELOST'}, {'TOOMANYSTEPS', steps} (a new name and the
-- journal holds its bound: nothing changed), {'JOURNALTOOLARGE', bytes} (a
-- new name whose step would make the journal pass its bound of bytes:
-- nothing changed), {'STORAGE', bytes} (the result would pass the
-- tenant's storage budget: nothing changed) or {'OK', version, recorded
-- (0/1), the step's entry (lib.lua, record)}; version 0 when nothing
-- changed.

local e = fence(ARGV[2], ARGV[3], ARGV[4], ARGV[5])
if not e then return {'LEASELOST'} end
if redis.call('HEXISTS', KEYS[2], ARGV[6]) == 0 then
  local n = redis.call('HLEN', KEYS[2])
  if n >= tonumber(ARGV[9]) then return {'TOOMANYSTEPS', n} end
  if not journal_fits(e.id, ARGV[6], #ARGV[7], ARGV[10]) then
    return {'JOURNALTOOLARGE', journal_size(e.id)}
  end
  if not charge(e, #ARGV[7]) then return {'STORAGE', #ARGV[7]} end
end
local v, recorded = 0, 0
if record(e, ARGV[6], ARGV[7], ARGV[8], ARGV[5]) then
  v, recorded = changed(), 1
end
return {'OK', v, recorded, redis.call('HGET', KEYS[2], ARGV[6])}
