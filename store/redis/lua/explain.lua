-- explain.lua: Store.Explain — a read, in one script: what this namespace
-- holds of the facts of one execution (store.ExplainFacts). Each read is
-- by key: the execution, its tenant, its concurrency key's counter and
-- running set (ckrun), its rate limit, and its tenant's place in turns
-- (ZCOUNT, and the tenants of its own turn up to max ahead).
--
-- KEYS[1] exec:<id>  KEYS[2] turns
--   derived: tenant:<T>, ck:<c>, ckrun:<c>, ratelimit:<c> of the
--   execution's tenant and keys
-- ARGV[1] NS  ARGV[2] tenant ('' = any)  ARGV[3] max holders
-- ARGV[4] max tenants ahead
-- Returns {} for a missing execution (or another tenant's), else
-- {execution (flat hash), disabled ('1' or ''), running, holders,
-- rate limit (flat hash, empty for none), tenants ahead}.

local x = redis.call('HGETALL', KEYS[1])
if #x == 0 then return {} end
local e = {}
for i = 1, #x, 2 do e[x[i]] = x[i + 1] end
if ARGV[2] ~= '' and e.tenant ~= ARGV[2] then return {} end
local t = e.tenant
local v = redis.call('HMGET', k_tenant(t), 'disabled', 'turn')
local running, holders = 0, {}
if e.ckey then
  local c = scoped(t, e.ckey)
  running = tonumber(redis.call('HGET', k_ck(c), 'run') or 0)
  holders = redis.call('ZRANGE', k_ckrun(c), 0, tonumber(ARGV[3]) - 1)
end
local rl = {}
if e.rkey then rl = redis.call('HGETALL', k_ratelimit(scoped(t, e.rkey))) end
-- Tenants ahead: smaller turn, or the same turn and a smaller name (the
-- sorted set's own order), as claim.lua serves them.
local max = tonumber(ARGV[4])
local turn = redis.call('ZSCORE', KEYS[2], t) or v[2] or '0'
local ahead = redis.call('ZCOUNT', KEYS[2], '-inf', '(' .. turn)
if ahead < max then
  for _, n in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], turn, turn, 'LIMIT', 0, max)) do
    if n < t then ahead = ahead + 1 end
  end
end
return {x, v[1] or '', running, holders, rl, math.min(ahead, max)}
