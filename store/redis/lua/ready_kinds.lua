-- ready_kinds.lua: Store.ReadyKinds — a read, in one script: the tenants
-- and kinds with work ready now. A tenant with ready executions is in
-- turns (enabled tenants only); its ready executions of a kind are its
-- lane ready:tk (lib.lua), so each pair costs one EXISTS, for each kind
-- named in readykinds. Scheduled executions already due but not yet moved
-- to the ready indexes (a claim moves them) are read from sched, at most
-- max of them.
--
-- KEYS[1] turns  KEYS[2] readykinds  KEYS[3] sched
--   derived: ready:tk of each tenant and kind, exec:<id> of the due ones
-- ARGV[1] NS  ARGV[2] tenant ('' = every tenant)  ARGV[3] now_us  ARGV[4] max
-- Returns a flat list of tenant, kind pairs, in no particular order.

local max = tonumber(ARGV[4])
local tenants
if ARGV[2] ~= '' then
  tenants = {ARGV[2]}
else
  tenants = redis.call('ZRANGE', KEYS[1], 0, max - 1)
end
local kinds = redis.call('SMEMBERS', KEYS[2])
local seen, out, n = {}, {}, 0
local function add(t, kind)
  local p = scoped(t, kind)
  if not seen[p] and n < max then
    seen[p] = true
    out[#out + 1], out[#out + 2] = t, kind
    n = n + 1
  end
end
for _, t in ipairs(tenants) do
  for _, kind in ipairs(kinds) do
    if n >= max then break end
    if redis.call('EXISTS', k_ready_tk(t, kind)) == 1 then add(t, kind) end
  end
end
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', ARGV[3], 'LIMIT', 0, max)) do
  local v = redis.call('HMGET', k_exec(id), 'tenant', 'kind')
  if v[1] and (ARGV[2] == '' or v[1] == ARGV[2]) then add(v[1], v[2]) end
end
return out
