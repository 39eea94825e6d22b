-- fire_schedule.lua: Store.FireSchedule — fire one tick of a schedule (I6),
-- every step below in this one script:
--
--  1. A regular fire (not trigger) goes on only while the schedule is
--     enabled, its next_run_at equals the expected one (compare and set:
--     of any number of servers firing one tick, one gets past here) and
--     its tenant is not disabled;
--     with drop it then only moves next_run_at on.
--  2. If the tick's dedup key maps to an execution, that is the tick's,
--     and the hit is counted on it (dhits, dhit_at).
--  3. Else, with overlap skip, if an execution of the schedule is not
--     terminal (sched_busy: its live set, each member's status read here,
--     in the same step as the insert), the tick is written as a skipped
--     execution under its dedup key.
--  4. Else the tick is admitted as admit.lua admits an item (lib.lua:
--     quota, dedup_live, admit_new), under the tenant's quota and dedup
--     TTL; over quota or over the storage budget nothing at all is
--     written. A skipped tick keeps no payload and counts no bytes.
--  5. last_run and last_exec become the tick's unless last_run is later;
--     a regular fire moves next_run_at on.
--
-- The tick's execution is built from the schedule's tick template (the x_
-- fields and qp, which PutSchedule computes in Go with store.TickSubmission
-- and store.NewExecution), its dedup key and id, at now.
--
-- KEYS[1] schedule:<s>   KEYS[2] nextrun   KEYS[3] tenant:<T>
-- KEYS[4] dedup:<T>   KEYS[5] exec:<id>   KEYS[6] schedlive:<s>
-- KEYS[7] list:<T>   KEYS[8] list   KEYS[9] dedupexp   KEYS[10] sched
-- KEYS[11] readykinds
--   derived: exec:<id> of the execution the dedup key maps to and of each
--   member of the live set, the ready indexes of the tick's tenant, queue
--   and kind, done:<T>, ck:<c>
-- ARGV[1] NS  ARGV[2] tenant  ARGV[3] name  ARGV[4] tick_us
-- ARGV[5] trigger (0/1)  ARGV[6] expected_us  ARGV[7] next_us
-- ARGV[8] drop (0/1)  ARGV[9] now_us  ARGV[10] ra (now as a queue member
-- part)  ARGV[11] the new execution's id  ARGV[12] the tick's dedup key
-- ('' for a trigger without an idempotency key: a tick of its own)
-- Returns {'NOTFOUND'}, {'QUOTA', inflight} or {'STORAGE', stored bytes}
-- (over the storage budget; nothing written either) or
-- {'OK', version, code, HGETALL, advanced (0/1)} where code is
--   'N' admitted, 'S' skipped, 'D' deduplicated, '' nothing fired (and the
--   HGETALL is '').

local tenant, name, tick, now = ARGV[2], ARGV[3], ARGV[4], ARGV[9]
local s = scoped(tenant, name)
local f = redis.call('HMGET', KEYS[1], 'enabled', 'next', 'last_run', 'overlap', 'kind', 'payload', 'prio',
  'qp', 'rkey', 'x_queue', 'x_maxatt', 'x_timeout', 'x_ckey', 'x_climit')
if not f[1] then return {'NOTFOUND'} end

local regular = ARGV[5] ~= '1'
local function advance()
  redis.call('HSET', KEYS[1], 'next', ARGV[7])
  redis.call('ZADD', KEYS[2], ARGV[7], s)
end
if regular then
  if f[1] ~= '1' or tonumber(f[2]) ~= tonumber(ARGV[6]) then return {'OK', 0, '', '', 0} end
  -- A disabled tenant's tick stays due until the tenant is enabled.
  if redis.call('HGET', KEYS[3], 'disabled') == '1' then return {'OK', 0, '', '', 0} end
  if ARGV[8] == '1' then
    advance()
    return {'OK', 0, '', '', 1}
  end
end

local q = quota(tenant)
if not q then return {'NOTFOUND'} end -- cannot happen: a tenant's delete takes its schedules
local code, id
local xid = dedup_live(tenant, ARGV[12], now)
if xid and redis.call('EXISTS', k_exec(xid)) == 1 then
  code, id = 'D', xid
  dedup_hit(xid, now)
else
  local x = {id = ARGV[11], tenant = tenant, kind = f[5], queue = f[10], prio = f[7], qp = f[8],
    payload = f[6], dkey = ARGV[12], ckey = f[13], climit = f[14], rkey = f[9], maxatt = f[11],
    timeout = f[12], schedule = name, run_at = now, ra = ARGV[10]}
  -- Read for every policy: the read also drops ended members, keeping the
  -- set as small as the schedule's work in flight.
  local busy = sched_busy(s)
  if f[4] == 'skip' and busy then
    x.payload = 'null' -- a skipped tick keeps no copy (store.SkippedPayload)
    admit_new(x, 'skipped', now, q)
    code = 'S'
  elseif q.inflight + 1 > q.max then
    return {'QUOTA', q.inflight}
  elseif not q_fits(q, #x.payload) then
    return {'STORAGE', q.stored}
  else
    admit_new(x, nil, now, q)
    code = 'N'
  end
  id = x.id
end

if not f[3] or tonumber(tick) >= tonumber(f[3]) then
  redis.call('HSET', KEYS[1], 'last_run', tick, 'last_exec', id)
end
local adv = 0
if regular then
  advance()
  adv = 1
end
quota_flush()
local v = 0
if code ~= 'D' then v = changed() end
return {'OK', v, code, redis.call('HGETALL', k_exec(id)), adv}
