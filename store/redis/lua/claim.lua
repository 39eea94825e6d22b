-- claim.lua: Store.Claim — lease up to max ready executions, highest
-- priority first, then oldest run_at, then id. Reading the candidates and
-- leasing them is this one script, so no two claimers can lease one attempt
-- (I2), and a concurrency key's running count (per tenant) is checked and
-- raised in the same step (I4).
--
-- First, scheduled executions whose run_at has come by now (up to
-- due_limit, oldest first) are made due: they join the ready indexes with
-- their status unchanged (lib.lua, leave), so that this claim and later
-- ones can take them in order. Then the claim
-- walks the ready indexes its filters allow — the tenant's, the queues' or
-- the kinds', whichever set is smallest by ZCARD; every kind's without
-- filters — merging them in member order and checking the other filters
-- per execution. An
-- execution whose concurrency key is at its limit is parked (see lib.lua)
-- instead of being passed over on every later claim.
--
-- KEYS[1] sched   KEYS[2] running   KEYS[3] readykinds
-- KEYS[4] ready:t:<T> (ignored when the claim is for every tenant)
-- KEYS[5] due
-- KEYS[6 .. 5+nq]          ready:q:<queue> for each queue filter
-- KEYS[6+nq .. 5+nq+nk]    ready:k:<kind> for each kind filter
--   derived: exec:<id> of each candidate, ck:<c> and ckpark:<c> of its
--   tenant's concurrency key, the other ready indexes of a leased execution, and
--   ready:k:<kind> of every kind in readykinds for a claim without filters.
-- ARGV[1] NS  ARGV[2] now_us  ARGV[3] max  ARGV[4] lease_expires_us
-- ARGV[5] worker_id  ARGV[6] tenant ('' = every tenant)  ARGV[7] token base
-- ARGV[8] due_limit  ARGV[9] nq  ARGV[10] nk
-- ARGV[11 .. 10+nq] queues   ARGV[11+nq .. 10+nq+nk] kinds
-- Returns {version, lease_1, ..., lease_n}, each lease
-- {id, tenant, kind, queue, payload, attempt, max_attempts, timeout, token};
-- version is 0 when nothing changed.

local now, max, expires, worker, tenant, token_base = ARGV[2], tonumber(ARGV[3]), ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local nq, nk = tonumber(ARGV[9]), tonumber(ARGV[10])

make_due(now, tonumber(ARGV[8]))

local queues, kinds = {}, {}
local qkeys, kkeys = {}, {}
for i = 1, nq do
  queues[ARGV[10 + i]] = true
  qkeys[#qkeys + 1] = KEYS[5 + i]
end
for i = 1, nk do
  kinds[ARGV[10 + nq + i]] = true
  kkeys[#kkeys + 1] = KEYS[5 + nq + i]
end

-- The smallest family of indexes that covers every candidate.
local families = {}
if tenant ~= '' then families[#families + 1] = {KEYS[4]} end
if nq > 0 then families[#families + 1] = qkeys end
if nk > 0 then families[#families + 1] = kkeys end
if #families == 0 then
  local all = {}
  for _, kind in ipairs(redis.call('SMEMBERS', KEYS[3])) do all[#all + 1] = k_ready_k(kind) end
  families[1] = all
end
local walk, smallest = nil, nil
for _, fam in ipairs(families) do
  local size = 0
  for _, key in ipairs(fam) do size = size + redis.call('ZCARD', key) end
  if not smallest or size < smallest then walk, smallest = fam, size end
end

local CHUNK = math.max(2 * max, 16)
local cursors = {}
for _, key in ipairs(walk) do cursors[#cursors + 1] = {key = key, buf = {}, pos = 1, last = nil, done = false} end

local function head(c)
  if c.pos > #c.buf then
    if c.done then return nil end
    local lo = '-'
    if c.last then lo = '(' .. c.last end
    c.buf = redis.call('ZRANGEBYLEX', c.key, lo, '+', 'LIMIT', 0, CHUNK)
    c.pos = 1
    if #c.buf < CHUNK then c.done = true end
    if #c.buf == 0 then return nil end
  end
  return c.buf[c.pos]
end

local out = {0}
local touched = {}
while #out - 1 < max do
  local best, bc = nil, nil
  for _, c in ipairs(cursors) do
    local h = head(c)
    if h and (not best or h < best) then best, bc = h, c end
  end
  if not best then break end
  bc.last = best
  bc.pos = bc.pos + 1

  local e = load(string.sub(best, MEMBER_ID))
  if not e or not (e.status == 'queued' or (e.status == 'scheduled' and e.due)) or e.parked then
    redis.call('ZREM', bc.key, best) -- cannot happen; never block on it
  elseif (tenant == '' or e.tenant == tenant) and (nq == 0 or queues[e.queue]) and (nk == 0 or kinds[e.kind])
      -- made due by a claim whose clock was ahead of this one's
      and (e.status == 'queued' or tonumber(e.run_at) <= tonumber(now)) then
    local blocked = false
    if e.ckey then
      local run = tonumber(redis.call('HGET', k_ck(ck_of(e)), 'run') or 0)
      blocked = run >= tonumber(e.climit)
    end
    local ek = k_exec(e.id)
    if blocked then
      idx_rem(e, best)
      redis.call('HINCRBY', k_ck(ck_of(e)), 'ready', -1)
      redis.call('ZADD', k_ckpark(ck_of(e)), 0, best)
      redis.call('HSET', ek, 'parked', 1)
      touched[ck_of(e)] = true
    else
      idx_rem(e, best)
      if e.ckey then
        redis.call('HINCRBY', k_ck(ck_of(e)), 'ready', -1)
        redis.call('HINCRBY', k_ck(ck_of(e)), 'run', 1)
      end
      if e.status == 'scheduled' then
        redis.call('ZREM', k_due(), e.id)
        redis.call('HDEL', ek, 'due')
      end
      local attempt = tonumber(e.attempt) + 1
      local token = token_base .. '-' .. #out
      redis.call('HSET', ek, 'status', 'running', 'attempt', attempt, 'token', token,
        'worker', worker, 'lease_exp', expires, 'started', now)
      redis.call('ZADD', KEYS[2], expires, e.id)
      local x = redis.call('HMGET', ek, 'payload', 'timeout')
      out[#out + 1] = {e.id, e.tenant, e.kind, e.queue, x[1], attempt, tonumber(e.maxatt), tonumber(x[2]), token}
    end
  end
end

for c in pairs(touched) do ck_settle(c) end
if #out > 1 then out[1] = changed() end
return out
