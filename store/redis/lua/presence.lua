-- presence.lua: Store.Presence — a read, in one script: the servers seen
-- since since (unless for a tenant), each with its report, and the
-- workers seen since then (for a tenant, only its own).
--
-- KEYS[1] servers   KEYS[2] workers
--   derived: server:<id> of each server
-- ARGV[1] NS  ARGV[2] tenant ('' = every server and worker)
-- ARGV[3] since_us
-- Returns {servers, workers}: servers a flat list of id, host, version,
-- started_us, last seen_us; workers a flat list of member, last seen_us,
-- claim filters ('' = none). With ARGV[4] = '1' and a tenant, the workers
-- of every tenant ('') come too (Explain's live workers).

local tenant, since, any = ARGV[2], ARGV[3], ARGV[4] == '1'
local servers = {}
if tenant == '' and not any then
  local z = redis.call('ZRANGEBYSCORE', KEYS[1], since, '+inf', 'WITHSCORES')
  for i = 1, #z, 2 do
    local v = redis.call('HMGET', k_server(z[i]), 'host', 'version', 'started', 'seen')
    local n = #servers
    servers[n + 1], servers[n + 2], servers[n + 3], servers[n + 4], servers[n + 5] =
      z[i], v[1] or '', v[2] or '', v[3] or '0', v[4] or '0'
  end
end
local workers = {}
local z = redis.call('ZRANGEBYSCORE', KEYS[2], since, '+inf', 'WITHSCORES')
for i = 1, #z, 2 do
  local wt = worker_tenant(z[i])
  if tenant == '' or wt == tenant or (any and wt == '') then
    workers[#workers + 1] = z[i]
    workers[#workers + 1] = z[i + 1]
    workers[#workers + 1] = redis.call('HGET', k_workerclaims(), z[i]) or ''
  end
end
return {servers, workers}
