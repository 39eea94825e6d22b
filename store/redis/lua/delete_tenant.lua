-- delete_tenant.lua: Store.DeleteTenant — the tenant and everything it
-- owns, in this one step: its executions (each left as Delete leaves one:
-- out of its queue, lease and concurrency-key places, its list, retention
-- and dedup entries), its concurrency-key counters and parks, every dedup
-- mapping, its schedules with their index entries and live sets, its rate
-- limits, its events (with their indexes and idempotency keys) and
-- subscriptions, its API keys, its workers and activity counts and the tenant
-- record. Without force, refused while
-- an execution is in flight, before anything is written.
--
-- KEYS[1] tenant:<T>   KEYS[2] tenants   KEYS[3] list:<T>   KEYS[4] dedup:<T>
-- KEYS[5] dedupexp   KEYS[6] schedules:<T>   KEYS[7] nextrun
-- KEYS[8] ratelimits:<T>   KEYS[9] keyids:<T>
--   derived: exec:<id> of each execution, the ready indexes, sched, due,
--   running, wake, ck:<c>, ckparkg:<c> and ckpark:<c> of its keys, list,
--   done:<T>, each execution's flow records (steps, signames, sigbuf, sigkeys),
--   attempt history (runs) and children's list and counters (kids, spawns),
--   schedule:<s> and schedlive:<s> of its schedules, ratelimit:<c>,
--   apikey:<hash>, evexp:<T>, evidem:<T>, event:<id> and the indexes of
--   its events, subs:<T>, sub:<sc> and subev:<c> of its subscriptions,
--   queues:<T> and the queue statistics' keys, workers,
--   activity and activity:<minute>
-- ARGV[1] NS  ARGV[2] tenant  ARGV[3] force (0/1)
-- Returns {'NOTFOUND'}, {'NOTTERMINAL', n} (nothing written) or
-- {'OK', version}.

local t = ARGV[2]
if redis.call('EXISTS', KEYS[1]) == 0 then return {'NOTFOUND'} end
local ids = redis.call('ZRANGE', KEYS[3], 0, -1)
if ARGV[3] ~= '1' then
  local n = 0
  for _, id in ipairs(ids) do
    if in_flight(redis.call('HGET', k_exec(id), 'status')) then n = n + 1 end
  end
  if n > 0 then return {'NOTTERMINAL', n .. ' executions in flight'} end
end

local cks, live = {}, {}
for _, id in ipairs(ids) do
  local e = load(id)
  if e then
    if in_flight(e.status) then leave(e) end
    if e.ckey then cks[ck_of(e)] = true end
    local sname = redis.call('HGET', k_exec(id), 'schedule')
    if sname then live[scoped(t, sname)] = true end
    remove(e)
  end
end
-- Keys are scoped per tenant: every count in them was this tenant's.
for c in pairs(cks) do redis.call('DEL', k_ck(c), k_ckparkg(c), k_ckpark(c), k_ckrun(c)) end

-- Dedup mappings whose executions are gone already (pruned) too.
for _, dk in ipairs(redis.call('HKEYS', KEYS[4])) do
  redis.call('ZREM', KEYS[5], dedup_member(t, dk))
end
redis.call('DEL', KEYS[4])

for _, name in ipairs(redis.call('ZRANGE', KEYS[6], 0, -1)) do
  local s = scoped(t, name)
  redis.call('DEL', k_schedule(s))
  redis.call('ZREM', KEYS[7], s)
  live[s] = true
end
for s in pairs(live) do redis.call('DEL', k_schedlive(s)) end
redis.call('DEL', KEYS[6])

for _, rk in ipairs(redis.call('SMEMBERS', KEYS[8])) do
  redis.call('DEL', k_ratelimit(scoped(t, rk)))
end
redis.call('DEL', KEYS[8])

-- Its events and subscriptions (the waits for its events left with their
-- executions).
for _, eid in ipairs(redis.call('ZRANGE', k_evexp(t), 0, -1)) do ev_drop(eid) end
redis.call('DEL', k_evexp(t), k_evidem(t))
for _, name in ipairs(redis.call('ZRANGE', k_subs(t), 0, -1)) do
  local sc = scoped(t, name)
  local ev = redis.call('HGET', k_sub(sc), 'event')
  if ev then redis.call('ZREM', k_subev(scoped(t, ev)), name) end
  redis.call('DEL', k_sub(sc))
end
redis.call('DEL', k_subs(t))

-- The queue statistics' keys are empty now that its executions are gone,
-- but for entries of executions admitted before them (lib.lua, qs_enter).
for _, q in ipairs(redis.call('SMEMBERS', k_queues(t))) do
  local c = scoped(t, q)
  redis.call('DEL', k_qqueued(c), k_qsched(c), k_qsusp(c))
end
redis.call('DEL', k_queues(t))

-- Its workers and activity counts.
for _, m in ipairs(redis.call('ZRANGE', k_workers(), 0, -1)) do
  if worker_tenant(m) == t then
    redis.call('ZREM', k_workers(), m)
    redis.call('HDEL', k_workerclaims(), m)
  end
end
for _, m in ipairs(redis.call('ZRANGE', k_activity(), 0, -1)) do
  local h = k_activity_m(m)
  redis.call('HDEL', h, 's:' .. t, 'f:' .. t)
  if redis.call('EXISTS', h) == 0 then redis.call('ZREM', k_activity(), m) end
end

for _, h in ipairs(redis.call('HVALS', KEYS[9])) do
  redis.call('DEL', k_apikey(h))
end
redis.call('DEL', KEYS[9], KEYS[1])
redis.call('ZREM', k_turns(), t)
redis.call('SREM', KEYS[2], t)
return {'OK', changed()}
