-- queue_stats.lua: Store.QueueStats — a read, in one script so that every
-- count is of one moment. Per queue of each tenant (queues:<T>): queued is
-- ZCARD of qqueued:<c>, scheduled splits qsched:<c> at now (ZCOUNT), the
-- oldest ready run_at is the first score of each, suspended is SCARD of
-- qsusp:<c> (lib.lua, qs_enter); running is counted from the running set,
-- each execution's tenant and queue read. So the cost is the tenants'
-- queues and the running executions, never the terminal ones.
--
-- KEYS[1] tenants   KEYS[2] running
--   derived: queues:<T>, qqueued:<c>, qsched:<c>, qsusp:<c>, exec:<id> of
--   each running execution
-- ARGV[1] NS  ARGV[2] tenant ('' = every tenant)  ARGV[3] now_us
-- Returns a flat list, 7 elements a queue: tenant, queue, ready, oldest
-- ready run_at_us ('' = none), scheduled after now, running, suspended;
-- a queue may appear twice (from its keys and from the running set) and
-- with nothing in it.

local tenant, now = ARGV[2], ARGV[3]
local tenants = {tenant}
if tenant == '' then tenants = redis.call('SMEMBERS', KEYS[1]) end
local out = {}
for _, t in ipairs(tenants) do
  for _, q in ipairs(redis.call('SMEMBERS', k_queues(t))) do
    local c = scoped(t, q)
    local queued = redis.call('ZCARD', k_qqueued(c))
    local due = redis.call('ZCOUNT', k_qsched(c), '-inf', now)
    local later = redis.call('ZCOUNT', k_qsched(c), '(' .. now, '+inf')
    local oldest = nil
    if queued > 0 then oldest = redis.call('ZRANGE', k_qqueued(c), 0, 0, 'WITHSCORES')[2] end
    if due > 0 then
      local s = redis.call('ZRANGE', k_qsched(c), 0, 0, 'WITHSCORES')[2]
      if not oldest or tonumber(s) < tonumber(oldest) then oldest = s end
    end
    local n = #out
    out[n + 1], out[n + 2], out[n + 3], out[n + 4] = t, q, queued + due, oldest or ''
    out[n + 5], out[n + 6], out[n + 7] = later, 0, redis.call('SCARD', k_qsusp(c))
  end
end
-- Running, by tenant and queue.
local running = {}
for _, id in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
  local v = redis.call('HMGET', k_exec(id), 'tenant', 'queue', 'status')
  if v[3] == 'running' and (tenant == '' or v[1] == tenant) then
    local c = scoped(v[1], v[2])
    local r = running[c]
    if not r then
      r = {t = v[1], q = v[2], n = 0}
      running[c] = r
    end
    r.n = r.n + 1
  end
end
for _, r in pairs(running) do
  local n = #out
  out[n + 1], out[n + 2], out[n + 3], out[n + 4] = r.t, r.q, 0, ''
  out[n + 5], out[n + 6], out[n + 7] = 0, r.n, 0
end
return out
