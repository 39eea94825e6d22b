-- publish.lua: Store.Publish — publish an event of a tenant (I14) in one
-- step. A repeat of an idempotency key the tenant keeps for a retained
-- event answers that publish's answer and changes nothing. Otherwise,
-- refusing with nothing written an unknown tenant, or an event that with
-- its copies (the step each wait it ends records) would pass the tenant's
-- storage budget:
--
--   the event        its hash and indexes (lib.lua's events section),
--                    expiring at now + the tenant's event retention, its
--                    bytes counted in the tenant's stored
--   waits            every wait for the event's name its key and since
--                    match (evwait:<c> from -inf to now, and evwaitk:<ck>
--                    for its key) ends: the event recorded as its step
--                    (lib.lua, ev_step), its bytes counted in the
--                    execution's and the tenant's stored, the event
--                    consumed (ev_consume), the execution queued again
--   subscriptions    each enabled one on the name, in name order, starts
--                    an execution admitted as Admit admits it (lib.lua,
--                    admit_new): dedup key event:<id>:<subscription>,
--                    the event's step as payload, its template's fields;
--                    one the quota or the storage budget refuses is
--                    answered with its refusal and the publish goes on
--
-- and the answer kept under the idempotency key.
--
-- KEYS[1] tenant:<T>   KEYS[2] evidem:<T>   KEYS[3] event:<id>
-- KEYS[4] evname:<c>   KEYS[5] evkey:<ck>   KEYS[6] evexp:<T>
-- KEYS[7] evwait:<c>   KEYS[8] evwaitk:<ck>   KEYS[9] subev:<c>
--   derived: event:<id> of a kept answer's event, sub:<sc> of each
--   subscription, exec:<id>, steps:<id>, steporder:<id>, evdone:<id> of
--   each waiting execution, the ready indexes, wake, ck:<c>, the queue
--   statistics' keys, and what admit_new writes for each start (list,
--   list:<T>, dedup:<T>, dedupexp, readykinds, turns)
-- ARGV[1] NS  ARGV[2] tenant  ARGV[3] event id  ARGV[4] name  ARGV[5] key
-- ('' = none)  ARGV[6] idempotency key ('' = none)  ARGV[7] now_us
-- ARGV[8] ra (now as a queue member part)  ARGV[9] step (store.EventStep)
-- ARGV[10] lean (store.EventStepWithin, data omitted)  ARGV[11] bytes
-- (store.EventSize)  ARGV[12] the default event retention_us (a tenant
-- without event_ret)  ARGV[13] trace_parent ('' = none)  ARGV[14] n, then
-- n execution ids for the starts
-- Returns {'NOTFOUND'}, {'STORAGE', bytes} (the event's and its copies'),
-- {'MOREIDS', needed} (more enabled subscriptions than ids: nothing
-- changed), {'REPLAY', answer} or {'OK', version, answer, started, id_1,
-- ...}: started the count of executions admitted, then their ids and the
-- ids of the waits it ended.

local t, id, name, key, idem, now, ra = ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local step, lean, size = ARGV[9], ARGV[10], tonumber(ARGV[11])
local q = quota(t)
if not q then return {'NOTFOUND'} end
if idem ~= '' then
  local a = redis.call('HGET', KEYS[2], idem)
  if a then
    local eid = string.match(a, '^{"event_id":"([^"]*)"')
    local exp = eid and redis.call('HGET', k_event(eid), 'exp')
    if exp and tonumber(exp) > tonumber(now) then return {'REPLAY', a} end
  end
end

local subs = {}
for _, sname in ipairs(redis.call('ZRANGE', KEYS[9], 0, -1)) do
  local v = redis.call('HMGET', k_sub(scoped(t, sname)), 'enabled', 'kind', 'x_queue', 'prio', 'qp', 'x_maxatt',
    'x_timeout', 'x_ckey', 'x_climit')
  if v[1] == '1' then subs[#subs + 1] = {name = sname, v = v} end
end
if #subs > tonumber(ARGV[14]) then return {'MOREIDS', #subs} end

-- The waits it matches, each with the step it would record (ev_step),
-- read before anything is written: the event and every copy of it count
-- in the storage budget together.
local waits, stale, copies = {}, {}, 0
local function match_waits(k)
  for _, wid in ipairs(redis.call('ZRANGEBYSCORE', k, '-inf', now)) do
    local p = load(wid, SUSPEND_FIELDS)
    if p and p.status == 'suspended' and p.esince and p.waiting == EVENT_WAIT .. name
        and (k == KEYS[7] or p.ekey == key) then
      local result = ev_step(p, p.sstep, step, lean, p.fbytes)
      waits[#waits + 1] = {p = p, result = result}
      copies = copies + #result
    else
      stale[#stale + 1] = {k, wid}
    end
  end
end
match_waits(KEYS[7])
if key ~= '' then match_waits(KEYS[8]) end
if not q_fits(q, size + copies) then return {'STORAGE', size + copies} end

-- The event.
local exp = istr(now_num(now) + tonumber(redis.call('HGET', KEYS[1], 'event_ret') or ARGV[12]))
local seq = redis.call('HINCRBY', KEYS[1], 'evseq', 1)
local m = ev_member(seq, id)
redis.call('HSET', KEYS[3], 'id', id, 'tenant', t, 'name', name, 'pub', now, 'exp', exp, 'seq', seq,
  'bytes', size, 'step', step, 'lean', lean)
if key ~= '' then redis.call('HSET', KEYS[3], 'key', key) end
if idem ~= '' then redis.call('HSET', KEYS[3], 'idem', idem) end
redis.call('ZADD', KEYS[4], now, m)
if key ~= '' then redis.call('ZADD', KEYS[5], now, m) end
redis.call('ZADD', KEYS[6], exp, id)
q.bytes = q.bytes + size

-- The waits it ends, each counting its copy (charge, in ev_consume).
for _, w in ipairs(stale) do
  redis.call('ZREM', w[1], w[2]) -- cannot happen; never block on it
end
for _, w in ipairs(waits) do
  ev_consume(w.p, w.p.sstep, id, w.result, now)
  q.stored = q.stored + #w.result
  family[#family + 1] = w.p.id
end
local resumed = #waits

-- The subscriptions' starts.
local parts, admitted = {}, {}
for i, s in ipairs(subs) do
  local v = s.v
  local x = {id = ARGV[14 + i], tenant = t, kind = v[2], queue = v[3], prio = v[4], qp = v[5], payload = step,
    dkey = 'event:' .. id .. ':' .. s.name, ckey = v[8] or '', climit = v[9] or '', rkey = '', maxatt = v[6],
    timeout = v[7], schedule = '', run_at = now, ra = ra, trace = ARGV[13]}
  local part = '{"subscription":"' .. s.name .. '"'
  local xid = dedup_live(t, x.dkey, now)
  if xid and redis.call('EXISTS', k_exec(xid)) == 1 then
    part = part .. ',"execution_id":"' .. xid .. '"'
  elseif q.inflight + 1 > q.max then
    part = part .. ',"error":"quota_exceeded"'
  elseif not q_fits(q, #step) then
    part = part .. ',"error":"storage_exceeded"'
  else
    admit_new(x, nil, now, q)
    admitted[#admitted + 1] = x.id
    part = part .. ',"execution_id":"' .. x.id .. '"'
  end
  parts[#parts + 1] = part .. '}'
end
quota_flush()

-- The answer, as store.MarshalPublishAnswer encodes it.
local answer = '{"event_id":"' .. id .. '","resumed":' .. resumed .. ',"started":[' .. table.concat(parts, ',') .. ']}'
if idem ~= '' then redis.call('HSET', KEYS[2], idem, answer) end
local out = {'OK', changed(), answer, #admitted}
for _, x in ipairs(admitted) do out[#out + 1] = x end
for _, w in ipairs(family) do out[#out + 1] = w end
return out
