-- claim.lua: Store.Claim — lease up to max ready executions, highest
-- priority first, then oldest run_at, then id. Reading the candidates and
-- leasing them is this one script, so no two claimers can lease one attempt
-- (I2), a concurrency key's running count (per tenant) is checked and
-- raised in the same step (I4), and so is a rate key's bucket (I7).
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
-- Rate limits: a candidate that its concurrency key lets start and whose
-- tenant has a limit for its rate key (ratelimit:<c>) starts only if the
-- bucket allows it (store.RateLimit.Allow, the GCRA), and then moves the
-- bucket's TAT; so a claim takes exactly one token per start and none for
-- a candidate it does not start. A candidate the bucket refuses is
-- deferred: it leaves the ready indexes for sched, scheduled at the
-- bucket's next free start (store.RateLimit.FreeAt), the k-th refused of
-- one bucket in this claim k-1 intervals later, with its attempt and quota
-- slot unchanged. Buckets are read once and their TATs written back at the
-- end, all inside this script.
--
-- KEYS[1] sched   KEYS[2] running   KEYS[3] readykinds
-- KEYS[4] ready:t:<T> (ignored when the claim is for every tenant)
-- KEYS[5] due
-- KEYS[6 .. 5+nq]          ready:q:<queue> for each queue filter
-- KEYS[6+nq .. 5+nq+nk]    ready:k:<kind> for each kind filter
--   derived: exec:<id> of each candidate, ck:<c> and ckpark:<c> of its
--   tenant's concurrency key, ratelimit:<c> of its tenant's rate key, the
--   other ready indexes of a leased or deferred execution, and
--   ready:k:<kind> of every kind in readykinds for a claim without filters.
-- ARGV[1] NS  ARGV[2] now_us  ARGV[3] max  ARGV[4] lease_expires_us
-- ARGV[5] worker_id  ARGV[6] tenant ('' = every tenant)  ARGV[7] token base
-- ARGV[8] due_limit  ARGV[9] nq  ARGV[10] nk
-- ARGV[11 .. 10+nq] queues   ARGV[11+nq .. 10+nq+nk] kinds
-- Returns {version, retry_at, lease_1, ..., lease_n}, each lease
-- {id, tenant, kind, queue, payload, attempt, max_attempts, timeout, token};
-- version is 0 when nothing changed; retry_at is the earliest run_at_us
-- given to a deferred execution, '' when none was deferred.

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

-- Rate-limit buckets met by this claim, by scoped(tenant, rate key):
-- false for a key without a limit.
local buckets = {}
local function bucket(e)
  if not e.rkey then return nil end
  local c = scoped(e.tenant, e.rkey)
  local b = buckets[c]
  if b == nil then
    local v = redis.call('HMGET', k_ratelimit(c), 'iv', 'burst', 'tat')
    b = false
    if v[1] then
      b = {key = k_ratelimit(c), iv = tonumber(v[1]), burst = tonumber(v[2]), tat = tonumber(v[3] or ''),
        refused = 0, taken = false}
    end
    buckets[c] = b
  end
  return b or nil
end

local now_n = tonumber(now)
local out = {0, ''}
local retry = nil
local touched = {}
-- The running set's entries of this claim's leases, {expires, id, ...},
-- added with one ZADD at the end: nothing in the claim reads the set.
local leased = {}
while #out - 2 < max do
  local best, bc = nil, nil
  for _, c in ipairs(cursors) do
    local h = head(c)
    if h and (not best or h < best) then best, bc = h, c end
  end
  if not best then break end
  bc.last = best
  bc.pos = bc.pos + 1

  local e = load(string.sub(best, MEMBER_ID), LEASE_FIELDS)
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
    -- Not charged while its concurrency key holds it back.
    local b, defer_at = nil, nil
    if not blocked then b = bucket(e) end
    if b and b.tat then
      local free = b.tat - (b.burst - 1) * b.iv
      if free > now_n then
        b.refused = b.refused + 1
        defer_at = free + (b.refused - 1) * b.iv
      end
    end
    if blocked then
      idx_rem(e, best)
      redis.call('HINCRBY', k_ck(ck_of(e)), 'ready', -1)
      redis.call('ZADD', k_ckpark(ck_of(e)), 0, best)
      redis.call('HSET', ek, 'parked', 1)
      touched[ck_of(e)] = true
    elseif defer_at then
      leave(e)
      redis.call('HSET', ek, 'status', 'scheduled', 'run_at', istr(defer_at), 'ra', time_lex(defer_at))
      redis.call('ZADD', KEYS[1], istr(defer_at), e.id)
      if e.ckey then touched[ck_of(e)] = true end
      if not retry or defer_at < retry then retry = defer_at end
    else
      if b then
        b.tat = math.max(b.tat or now_n, now_n) + b.iv
        b.taken = true
      end
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
      leased[#leased + 1] = expires
      leased[#leased + 1] = e.id
      out[#out + 1] = {e.id, e.tenant, e.kind, e.queue, e.payload, attempt, tonumber(e.maxatt), tonumber(e.timeout), token}
    end
  end
end

zadd_pairs(KEYS[2], leased)
for c in pairs(touched) do ck_settle(c) end
for _, b in pairs(buckets) do
  if b and b.taken then redis.call('HSET', b.key, 'tat', istr(b.tat)) end
end
if retry then out[2] = istr(retry) end
if #out > 2 or retry then out[1] = changed() end
return out
