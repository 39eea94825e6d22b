-- backfill.lua: Open's upgrade of records stored before key ids and the
-- per-tenant rate-limit index, and its repair of lanes by kind an older
-- server's writes left short (lanes.go): each run fixes one record (or
-- part of an index), idempotently, so servers starting together may all
-- run it.
--
-- Layout version 3 counts the storage budget of executions stored before
-- it ('bytes'): what each holds (payload, result, error, its journal's
-- entries and buffered signals) in its bytes field, added to its tenant's
-- stored count; an execution that has the field is counted already.
--
-- KEYS[1] apikey:<hash>, ratelimit:<c> or exec:<id> (for 'lanes' and
-- 'unlane', below)
-- ARGV[1] NS  ARGV[2] 'key', 'rate' or 'bytes'  ARGV[3] the key hash (for
-- 'key')  ARGV[4] a new key id (for 'key')
-- Returns {1} when it changed something, {0} otherwise.

if ARGV[2] == 'bytes' then
  local v = redis.call('HMGET', KEYS[1], 'id', 'tenant', 'bytes', 'payload', 'result', 'error')
  if not v[1] or v[3] then return {0} end
  local n = #(v[4] or '') + #(v[5] or '') + #(v[6] or '')
  for _, r in ipairs(redis.call('HVALS', k_steps(v[1]))) do n = n + #r end
  for _, name in ipairs(redis.call('SMEMBERS', k_signames(v[1]))) do
    for _, d in ipairs(redis.call('LRANGE', k_sigbuf(scoped(v[1], name)), 0, -1)) do n = n + #d end
  end
  redis.call('HSET', KEYS[1], 'bytes', n)
  if redis.call('EXISTS', k_tenant(v[2])) == 1 then redis.call('HINCRBY', k_tenant(v[2]), 'stored', n) end
  return {1}
end

if ARGV[2] == 'lanes' then
  -- KEYS[1] ready:t:<T>; ARGV[3] tenant; ARGV[4] the member to go on
  -- after ('' for the first). Puts up to 500 members of the tenant's ready
  -- index into its lanes (ready:tk, by kind) and returns {next}: the last
  -- member read, '' when the index is done.
  local lo = '-'
  if ARGV[4] ~= '' then lo = '(' .. ARGV[4] end
  local ms = redis.call('ZRANGEBYLEX', KEYS[1], lo, '+', 'LIMIT', 0, 500)
  for _, m in ipairs(ms) do
    local kind = redis.call('HGET', k_exec(string.sub(m, MEMBER_ID)), 'kind')
    if kind then lane_add(ARGV[3], kind, m) end
  end
  if #ms < 500 then return {''} end
  return {ms[#ms]}
end
if ARGV[2] == 'unlane' then
  -- KEYS[1] ready:tk:<c> of tenant ARGV[3] and kind ARGV[5]; ARGV[4] as
  -- for 'lanes'. Takes out of the lane up to 500 members its tenant's
  -- ready index does not hold (an older server took them) and returns
  -- {next} as 'lanes' does.
  local lo = '-'
  if ARGV[4] ~= '' then lo = '(' .. ARGV[4] end
  local ms = redis.call('ZRANGEBYLEX', KEYS[1], lo, '+', 'LIMIT', 0, 500)
  local rt = k_ready_t(ARGV[3])
  for _, m in ipairs(ms) do
    if not redis.call('ZSCORE', rt, m) then lane_rem(ARGV[3], ARGV[5], m) end
  end
  if #ms < 500 then return {''} end
  return {ms[#ms]}
end
if ARGV[2] == 'key' then
  local v = redis.call('HMGET', KEYS[1], 'tenant', 'key_id')
  if v[2] or redis.call('EXISTS', KEYS[1]) == 0 then return {0} end
  redis.call('HSET', KEYS[1], 'key_id', ARGV[4])
  if v[1] then redis.call('HSET', k_keyids(v[1]), ARGV[4], ARGV[3]) end
  return {1}
end
local v = redis.call('HMGET', KEYS[1], 'tenant', 'key')
if not v[1] or not v[2] then return {0} end
return {redis.call('SADD', k_ratelimits(v[1]), v[2])}
