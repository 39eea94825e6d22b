-- concurrency_keys.lua: Store.ConcurrencyKeys — a read, in one script: the
-- running executions (the running set; queued ones hold no slot) grouped
-- by tenant and concurrency key, with the largest limit among them. It
-- reads the running executions only.
--
-- KEYS[1] running
--   derived: exec:<id> of each running execution
-- ARGV[1] NS  ARGV[2] tenant ('' = every tenant)
-- Returns a flat list, 4 elements a key, in no particular order: tenant,
-- key, running, limit.

local tenant = ARGV[2]
local keys, order = {}, {}
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local v = redis.call('HMGET', k_exec(id), 'tenant', 'ckey', 'climit', 'status')
  if v[2] and v[4] == 'running' and (tenant == '' or v[1] == tenant) then
    local c = scoped(v[1], v[2])
    local u = keys[c]
    if not u then
      u = {v[1], v[2], 0, 0}
      keys[c] = u
      order[#order + 1] = c
    end
    u[3] = u[3] + 1
    u[4] = math.max(u[4], tonumber(v[3] or 0))
  end
end
local out = {}
for _, c in ipairs(order) do
  local u = keys[c]
  out[#out + 1], out[#out + 2], out[#out + 3], out[#out + 4] = u[1], u[2], u[3], u[4]
end
return out
