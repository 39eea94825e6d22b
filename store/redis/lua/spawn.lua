-- spawn.lua: Store.Spawn — admit children of a running execution under a
-- step, all or none, once per (parent, step) (I13), fenced by the lease
-- token and its expiry like RecordStep (I5). In order, each refusal
-- writing nothing and keeping the lease:
--
--   step recorded        a spawn's: its children answered, nothing admitted;
--                        another step's: refused (INVALID)
--   bounds               more items than the bound, more children of the
--                        parent than its bound with them, or children
--                        deeper than the bound of depth (TOOMANYCHILDREN)
--   journal              the step past the journal's bounds of steps or bytes
--   ids                  an explicit id taken (IDEXISTS)
--   quota, storage       the tenant's quota for every child in flight, its
--                        storage budget for the payloads and the step
--
-- Then every child is admitted as Admit admits a submission (lib.lua,
-- admit_new) in the parent's tenant, with parent, pstep, ponend and depth;
-- into the parent's kids list, in item order, and its spawn's counters
-- (lib.lua, the children section); and the step is recorded with their
-- ids. A parent whose cancel was requested spawns its 'cancel' children
-- cancelled at once (finished now, no quota slot, ended in the counters).
--
-- KEYS[1] exec:<id>   KEYS[2] steps:<id>   KEYS[3] kids:<id>
-- KEYS[4] spawns:<id>   KEYS[5..] exec:<child id> of each item
--   derived: tenant:<T>, list, list:<T>, sched, the ready indexes and lanes
--   of each child's tenant, queue and kind, readykinds, turns, ck:<c>,
--   qqueued:<c> or qsched:<c> and queues:<T> (lib.lua, qs_enter),
--   steporder:<id>
-- ARGV[1] NS  ARGV[2] id  ARGV[3] tenant ('' = any)  ARGV[4] token
-- ARGV[5] now_us  ARGV[6] step  ARGV[7] on_parent_end ('cancel' or
-- 'abandon')  ARGV[8] the step's result (store.SpawnStep of the ids)
-- ARGV[9] the bound of items  ARGV[10] of an execution's children
-- ARGV[11] of depth  ARGV[12] the journal's bound of steps  ARGV[13] of
-- bytes  ARGV[14] n (items), and 17 per item as admit.lua's: id,
-- explicit_id (0/1), kind, queue, priority, qp, payload, dedup_key (''),
-- concurrency_key, concurrency_limit, rate_key, max_attempts,
-- timeout_seconds, schedule (''), run_at_us, ra, trace_parent ('' = none)
-- Returns {'LEASELOST'}, {'INVALID', why}, {'TOOMANYCHILDREN', why},
-- {'TOOMANYSTEPS', steps}, {'JOURNALTOOLARGE', bytes}, {'IDEXISTS', id},
-- {'QUOTA', inflight}, {'STORAGE', bytes} (nothing changed), or
-- {'RECORDED', entry, status_1, ...} (the step was a spawn's already:
-- nothing changed) or {'OK', version, entry, status_1, ...}: entry the
-- step's journal entry (lib.lua, record), the statuses of its children in
-- spawn order ('deleted' for one that is gone).

local W = 17 -- ARGV per item
local now, step, ponend, result = ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local n = tonumber(ARGV[14])
local e = fence(ARGV[2], ARGV[3], ARGV[4], now)
if not e then return {'LEASELOST'} end

local function statuses(out, ids)
  for _, cid in ipairs(ids) do
    out[#out + 1] = redis.call('HGET', k_exec(cid), 'status') or 'deleted'
  end
  return out
end

local entry = redis.call('HGET', KEYS[2], step)
if entry then
  local ids = spawn_ids(e.id, step)
  if not ids then return {'INVALID', 'step ' .. step .. ' is recorded, and not by a spawn'} end
  return statuses({'RECORDED', entry}, ids)
end

if n > tonumber(ARGV[9]) then
  return {'TOOMANYCHILDREN', n .. ' items, more than ' .. ARGV[9] .. ' in one spawn'}
end
local had = tonumber(redis.call('HGET', KEYS[4], 'n') or 0)
if had + n > tonumber(ARGV[10]) then
  return {'TOOMANYCHILDREN', 'the execution has ' .. had .. ' children; ' .. n .. ' more would pass ' .. ARGV[10]}
end
local depth = tonumber(redis.call('HGET', KEYS[1], 'depth') or 0) + 1
if depth > tonumber(ARGV[11]) then
  return {'TOOMANYCHILDREN', 'children at depth ' .. depth .. ', deeper than ' .. ARGV[11]}
end

local steps = redis.call('HLEN', KEYS[2])
if steps >= tonumber(ARGV[12]) then return {'TOOMANYSTEPS', steps} end
if not journal_fits(e.id, step, #result, ARGV[13]) then
  return {'JOURNALTOOLARGE', journal_size(e.id)}
end

for i = 1, n do
  local b = 14 + (i - 1) * W
  if ARGV[b + 2] == '1' and redis.call('EXISTS', KEYS[4 + i]) == 1 then
    return {'IDEXISTS', ARGV[b + 1]}
  end
end

-- A parent whose cancel was requested would cancel its 'cancel' children
-- at once: they are spawned cancelled.
local cancelled = e.cancel == '1' and ponend == 'cancel'
local q = quota(e.tenant)
if not q then return {'LEASELOST'} end -- no tenant: cannot happen to a leased execution
if not cancelled and q.inflight + n > q.max then return {'QUOTA', q.inflight} end
local bytes = #result
for i = 1, n do bytes = bytes + #ARGV[14 + (i - 1) * W + 7] end
if not q_fits(q, bytes) then return {'STORAGE', bytes} end

local status = nil
if cancelled then status = 'cancelled' end
local out = {'OK', 0, ''}
local members = {}
for i = 1, n do
  local b = 14 + (i - 1) * W
  local x = {id = ARGV[b + 1], tenant = e.tenant, kind = ARGV[b + 3], queue = ARGV[b + 4],
    prio = ARGV[b + 5], qp = ARGV[b + 6], payload = ARGV[b + 7], dkey = '',
    ckey = ARGV[b + 9], climit = ARGV[b + 10], rkey = ARGV[b + 11], maxatt = ARGV[b + 12],
    timeout = ARGV[b + 13], schedule = '', run_at = ARGV[b + 15], ra = ARGV[b + 16],
    trace = ARGV[b + 17], parent = e.id, pstep = step, ponend = ponend, depth = depth}
  admit_new(x, status, now, q)
  members[#members + 1] = had + i
  members[#members + 1] = x.id
  out[#out + 1] = redis.call('HGET', KEYS[4 + i], 'status')
end
zadd_pairs(KEYS[3], members)
redis.call('HINCRBY', KEYS[4], 'n', n)
redis.call('HINCRBY', KEYS[4], 't:' .. step, n)
if cancelled then redis.call('HINCRBY', KEYS[4], 'e:' .. step, n) end
redis.call('HSET', KEYS[1], 'kids', 1)
record(e, step, result, '', now)
charge(e, #result, true)
quota_flush()
out[2] = changed()
out[3] = redis.call('HGET', KEYS[2], step)
return out
