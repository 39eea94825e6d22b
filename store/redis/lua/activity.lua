-- activity.lua: Store.Activity — a read, in one script: the starts and
-- failures of each activity minute at or after since, of one tenant or
-- summed over every tenant.
--
-- KEYS[1] activity
--   derived: activity:<minute> of each minute read
-- ARGV[1] NS  ARGV[2] tenant ('' = every tenant)  ARGV[3] since_us
-- Returns a flat list, oldest minute first: minute_us, starts, failures;
-- minutes with nothing counted are left out.

local tenant = ARGV[2]
local out = {}
for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[3], '+inf')) do
  local starts, failures = 0, 0
  if tenant ~= '' then
    local v = redis.call('HMGET', k_activity_m(m), 's:' .. tenant, 'f:' .. tenant)
    starts, failures = tonumber(v[1] or 0), tonumber(v[2] or 0)
  else
    local h = redis.call('HGETALL', k_activity_m(m))
    for i = 1, #h, 2 do
      local c = string.sub(h[i], 1, 1)
      if c == 's' then
        starts = starts + tonumber(h[i + 1])
      else
        failures = failures + tonumber(h[i + 1])
      end
    end
  end
  if starts ~= 0 or failures ~= 0 then
    out[#out + 1] = m
    out[#out + 1] = starts
    out[#out + 1] = failures
  end
end
return out
