-- signal.lua: Store.Signal — send a signal to an execution (I11). A
-- repeat of an idempotency key this execution has seen answers the first
-- answer and changes nothing, whatever the status. Otherwise a terminal
-- execution refuses it; one suspended waiting for this name has the wait's
-- step recorded with the data and is queued again at once (a resume:
-- delivered); any other keeps it, buffered at the end of the name's list,
-- for a later wait (suspend.lua consumes the oldest first).
--
-- KEYS[1] exec:<id>   KEYS[2] sigkeys:<id>
--   derived: steps:<id>, sigbuf:<scoped(id, name)>, signames:<id>, wake,
--   the ready indexes, ck:<c>
-- ARGV[1] NS  ARGV[2] id  ARGV[3] tenant ('' = any)  ARGV[4] name
-- ARGV[5] data JSON  ARGV[6] idempotency key ('' = none)  ARGV[7] now_us
-- ARGV[8] ra (now as a queue member part)  ARGV[9] the bound of buffered
-- signals (store.MaxBufferedSignals)  ARGV[10] the journal's bound of
-- bytes (store.MaxJournalBytes)
-- Returns {'NOTFOUND'}, {'NOTACTIVE', status}, {'BUFFERFULL', buffered}
-- (a signal to keep, and the execution keeps its bound: nothing changed),
-- {'JOURNALTOOLARGE', bytes} (a signal that would end the wait, whose step
-- would make the journal pass its bound of bytes: nothing changed),
-- {'STORAGE', bytes} (the data would pass the tenant's storage budget:
-- nothing changed) or {'OK', version, delivered (0/1)}; version 0 when
-- nothing changed.

local name, data, idem, now = ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local e = load(ARGV[2], SUSPEND_FIELDS)
if not e or (ARGV[3] ~= '' and e.tenant ~= ARGV[3]) then return {'NOTFOUND'} end
if idem ~= '' then
  local first = redis.call('HGET', KEYS[2], idem)
  if first then return {'OK', 0, tonumber(first)} end
end
if not in_flight(e.status) then return {'NOTACTIVE', e.status} end
local delivered = 0
local waited = e.status == 'suspended' and e.waiting == name and not e.fcount and not e.esince
if waited then
  if not journal_fits(e.id, e.sstep, #data, ARGV[10]) then
    return {'JOURNALTOOLARGE', journal_size(e.id)}
  end
else
  local n = tonumber(redis.call('HGET', KEYS[1], 'nbuf') or '0')
  if n >= tonumber(ARGV[9]) then return {'BUFFERFULL', n} end
end
-- The data counts in the storage budget, whether it ends a wait or waits.
if not charge(e, #data) then return {'STORAGE', #data} end
if waited then
  record(e, e.sstep, data, '', now)
  resume(e, now, ARGV[8])
  delivered = 1
else
  redis.call('RPUSH', k_sigbuf(scoped(e.id, name)), data)
  redis.call('SADD', k_signames(e.id), name)
  redis.call('HINCRBY', KEYS[1], 'nbuf', 1)
end
if idem ~= '' then redis.call('HSET', KEYS[2], idem, delivered) end
return {'OK', changed(), delivered}
