-- report_server.lua: Store.ReportServer — a server's report, in this one
-- step: its record (last seen = now), each worker's last seen (never moved
-- back: ZADD GT), and the activity deltas added to their minutes' counts.
-- A tenant's worker is recorded only while the tenant exists (tenant:<T>)
-- and if seen since its creation (its field created); a tenant's count
-- only while it exists.
--
-- KEYS[1] servers   KEYS[2] server:<id>   KEYS[3] workers   KEYS[4] activity
--   derived: activity:<minute> of each minute reported, tenant:<T> of each
--   tenant named
-- ARGV[1] NS  ARGV[2] id  ARGV[3] host  ARGV[4] version  ARGV[5] started_us
-- ARGV[6] now_us  ARGV[7] workers n, then n quadruples: member (worker_member),
-- last seen_us, tenant ('' for a server's own), claim filters ('' = none:
-- kept in workerclaims when this report is the worker's latest); then the number of counts
-- m, then m quadruples: minute_us, tenant, starts, failures
-- Returns {'OK'}.

local now = ARGV[6]

-- since reports whether tenant t exists and, given us, was created at or
-- before it.
local function since(t, us)
  local created = redis.call('HGET', k_tenant(t), 'created')
  return created and (us == nil or tonumber(created) <= us)
end

redis.call('HSET', KEYS[2], 'host', ARGV[3], 'version', ARGV[4], 'started', ARGV[5], 'seen', now)
redis.call('ZADD', KEYS[1], now, ARGV[2])
local n = tonumber(ARGV[7])
local a = 8
for _ = 1, n do
  if ARGV[a + 2] == '' or since(ARGV[a + 2], tonumber(ARGV[a + 1])) then
    local prev = redis.call('ZSCORE', KEYS[3], ARGV[a])
    if not prev or tonumber(ARGV[a + 1]) >= tonumber(prev) then
      if ARGV[a + 3] == '' then
        redis.call('HDEL', k_workerclaims(), ARGV[a])
      else
        redis.call('HSET', k_workerclaims(), ARGV[a], ARGV[a + 3])
      end
    end
    redis.call('ZADD', KEYS[3], 'GT', ARGV[a + 1], ARGV[a])
  end
  a = a + 4
end
local m = tonumber(ARGV[a])
a = a + 1
for _ = 1, m do
  local minute, t, starts, failures = ARGV[a], ARGV[a + 1], tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])
  local h = k_activity_m(minute)
  if not since(t) then starts, failures = 0, 0 end
  if starts ~= 0 then redis.call('HINCRBY', h, 's:' .. t, starts) end
  if failures ~= 0 then redis.call('HINCRBY', h, 'f:' .. t, failures) end
  if starts ~= 0 or failures ~= 0 then redis.call('ZADD', KEYS[4], minute, minute) end
  a = a + 4
end
return {'OK'}
