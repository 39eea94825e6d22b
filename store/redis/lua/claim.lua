-- claim.lua: Store.Claim — lease up to max ready executions: tenants take
-- turns (I12), and each tenant's own executions come highest priority
-- first, then oldest run_at, then id. Reading the candidates and leasing
-- them is this one script, so no two claimers can lease one attempt (I2), a
-- concurrency key's running count (per tenant) is checked and raised in the
-- same step (I4), and so is a rate key's bucket (I7).
--
-- First, scheduled executions whose run_at has come by now (up to
-- due_limit, oldest first) are made due: they join the ready indexes with
-- their status unchanged (lib.lua, leave), so that this claim and later
-- ones can take them in order.
--
-- Turns. A claim for every tenant reads the tenants with ready work from
-- turns (lib.lua) in turn order, smallest turn first, and deals out starts
-- in rounds: each round gives every tenant one start, its first candidate
-- in its own claim order that may start, read from its ready:t index — or,
-- for a claim filtered by kind, from its lanes of those kinds (ready:tk,
-- merged in member order), so that a backlog of other kinds is never read
-- — with the queue and kind filters checked per execution. At the end
-- each tenant served gets a turn past every other (turnseq), in the order
-- this claim last served them, so that the next claim first serves those
-- this one did not reach. Cost: O(log T) to read the first tenants of T in
-- turns, and per tenant served the walk of its own index (or lanes) up to
-- its first candidate; with a kind filter, a tenant with nothing of those
-- kinds costs an HGET and a ZCARD (lanes_whole) and a read of each empty
-- lane. A tenant whose index holds more than SKIP_CAP executions in a row
-- that the filters refuse (with a kind filter: of other queues) is passed
-- for the rest of the claim, and the rounds
-- end once SKIP_BUDGET such executions were passed in all (no claim walks
-- the tenants' whole backlogs of other kinds or queues); if that left the
-- claim short, it then walks the filters' own indexes as a claim for one
-- tenant does (below), in member order across tenants, so that such work
-- is still found: fair as far as the bounds go, and never stuck. Claims
-- whose filters take every kind and queue the tenants have work of never
-- meet the bounds.
--
-- A claimed execution's attempt grows by one, except for a resume (its
-- field resume, set when a flow's own progress queued it: lib.lua,
-- resume): that run continues the attempt it resumes. Each lease adds its
-- run to the execution's attempt history (lib.lua, run_start): one RPUSH.
--
-- A claim for one tenant is that tenant's turn: it walks the ready indexes
-- its filters allow — the tenant's, the queues', the kinds' or the
-- tenant's lanes of those kinds, whichever set is smallest by ZCARD —
-- merging them in member order and checking the other filters per
-- execution, and then moves the tenant's turn like any claim that serves
-- it.
--
-- An execution whose concurrency key is at its limit is parked (see
-- lib.lua) instead of being passed over on every later claim: in its
-- key's park, with the others of its kind and queue (its group). A lease
-- needs no settling (the key's run grows by what its group's ready count
-- loses); a park or a deferral does, once, at the end of the claim.
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
-- end, all inside this script. Parking or deferring a candidate does not
-- end its tenant's turn: the turn goes on to its next candidate.
--
-- KEYS[1] sched   KEYS[2] running   KEYS[3] readykinds
-- KEYS[4] ready:t:<T> (ignored when the claim is for every tenant)
-- KEYS[5] due     KEYS[6] turns     KEYS[7] turnseq
-- KEYS[8 .. 7+nq]          ready:q:<queue> for each queue filter
-- KEYS[8+nq .. 7+nq+nk]    ready:k:<kind> for each kind filter
--   derived: exec:<id> of each candidate, ck:<c>, ckparkg:<c> and
--   ckpark:<c> of its tenant's concurrency key, ratelimit:<c> of its
--   tenant's rate key, the ready indexes (or lanes of the kinds, and the
--   tenant's hash) of the tenants in turns, the other ready indexes of a
--   leased or deferred execution, tenant:<T> of a served tenant, and
--   ready:k:<kind> of every kind in readykinds for a claim without filters,
--   runs:<id> of each leased execution, qqueued:<c>, qsched:<c> and
--   queues:<T> of each leased or deferred execution (lib.lua, qs_enter).
-- ARGV[1] NS  ARGV[2] now_us  ARGV[3] max  ARGV[4] lease_expires_us
-- ARGV[5] worker_id  ARGV[6] tenant ('' = every tenant)  ARGV[7] token base
-- ARGV[8] due_limit  ARGV[9] nq  ARGV[10] nk  ARGV[11] runs kept
-- ARGV[12] the bytes of journal the claim's leases carry together
-- (store.ClaimJournalBytes)
-- ARGV[13 .. 12+nq] queues   ARGV[13+nq .. 12+nq+nk] kinds
-- ARGV[13+nq+nk] nx (absent = 0)   ARGV[14+nq+nk .. 13+nq+nk+nx] the
-- excluded tenants (store.ClaimParams.ExcludeTenants): passed in turns
-- before their source is made (nothing of theirs read, their turns left
-- as they are), and refused by examine in the walks over other indexes.
-- Returns {version, retry_at, deferred, examined, left, lease_1, ...,
-- lease_n} (examined: the ready-index members the claim read; left: for a
-- claim for one tenant, the executions left in its ready index), each lease
-- {id, tenant, kind, queue, payload, attempt, max_attempts, timeout, token,
-- journal, trace, partial, run_at} (journal: {name, entry, ...}, the first steps
-- of steps:<id> up to what is left of ARGV[12] bytes after the leases
-- before it (lib.lua, journal_page), read only when the execution's
-- journal flag is set, so a claim of executions without steps reads
-- nothing more; trace: the traceparent, '' for none; partial: 1 when the
-- journal holds more steps than the lease carries; run_at: the
-- execution's run_at_us at the claim, store.Lease.ReadyAt);
-- version is 0 when nothing changed; retry_at is the earliest run_at_us
-- given to a deferred execution, '' when none was deferred; deferred is
-- how many executions were deferred.

local now, max, expires, worker, tenant, token_base = ARGV[2], tonumber(ARGV[3]), ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local nq, nk = tonumber(ARGV[9]), tonumber(ARGV[10])
local runs_kept, wtag = tonumber(ARGV[11]), ':' .. string.len(worker) .. ':' .. worker
local journal_left = tonumber(ARGV[12])
local TURNS, TURNSEQ = KEYS[6], KEYS[7]

make_due(now, tonumber(ARGV[8]))

local queues, kinds = {}, {}
local qkeys, kkeys = {}, {}
for i = 1, nq do
  queues[ARGV[12 + i]] = true
  qkeys[#qkeys + 1] = KEYS[7 + i]
end
for i = 1, nk do
  kinds[ARGV[12 + nq + i]] = true
  kkeys[#kkeys + 1] = KEYS[7 + nq + i]
end
local excluded, nx = {}, tonumber(ARGV[13 + nq + nk] or 0)
for i = 1, nx do
  excluded[ARGV[13 + nq + nk + i]] = true
end

local CHUNK = math.max(2 * max, 16)
local SKIP_CAP, SKIP_BUDGET = 256, 1024
local skipped = 0 -- members the rounds passed because the filters refuse them

-- A cursor walks one ready index in member order, CHUNK members a read.
local function cursor(key) return {key = key, buf = {}, pos = 1, last = nil, done = false} end

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

-- enabled tells whether tenant t may start work (not disabled), read once
-- per claim. The fair pass walks only tenants in turns, which holds no
-- disabled one; the one-tenant and fallback walks need the check.
local enabled_memo = {}
local function enabled(t)
  local ok = enabled_memo[t]
  if ok == nil then
    ok = redis.call('HGET', k_tenant(t), 'disabled') ~= '1'
    enabled_memo[t] = ok
  end
  return ok
end

-- examine returns the execution of member m of c's index if this claim
-- may take it: ready at now and of the claim's tenant, queues and kinds.
-- A member of a tenant's ready:t read while its lanes are not whole
-- (c.heal) is put in its lane on the way.
local examined = 0 -- members examined (returned: the claim's work besides its leases)
local function examine(c, m)
  examined = examined + 1
  local e = load(string.sub(m, MEMBER_ID), LEASE_FIELDS)
  if not e or not (e.status == 'queued' or (e.status == 'scheduled' and e.due)) or e.parked then
    -- cannot happen (but in a lane, after an older server took it); never block on it
    if c.kind then lane_rem(c.tenant, c.kind, m) end
    if c.tenant then ready_t_rem(c.tenant, m) else redis.call('ZREM', c.key, m) end
    return nil
  end
  if c.heal then lane_add(e.tenant, e.kind, m) end
  if (tenant == '' or e.tenant == tenant) and (nq == 0 or queues[e.queue]) and (nk == 0 or kinds[e.kind])
      and not excluded[e.tenant] and enabled(e.tenant)
      -- made due by a claim whose clock was ahead of this one's
      and (e.status == 'queued' or tonumber(e.run_at) <= tonumber(now)) then
    return e
  end
  return nil
end

-- A source is the cursors of some ready indexes, walked merged in member
-- order: next_of returns its next member and the cursor holding it, once
-- (a member two of the indexes hold is passed in the other).
local function next_of(src)
  while true do
    local best, bc = nil, nil
    for _, c in ipairs(src.cs) do
      local h = head(c)
      if h and (not best or h < best) then best, bc = h, c end
    end
    if not best or best ~= src.prev then
      src.prev = best
      return best, bc
    end
    bc.last = best
    bc.pos = bc.pos + 1
  end
end

-- lane_cursors are tenant t's lanes of the claim's kinds.
local function lane_cursors(t)
  local cs = {}
  for i = 1, nk do
    local kind = ARGV[12 + nq + i]
    local c = cursor(k_ready_tk(t, kind))
    c.tenant, c.kind = t, kind
    cs[i] = c
  end
  return cs
end

-- tenant_source is tenant t's ready work for this claim: with a kind
-- filter, t's lanes of those kinds (ready:tk), so that a backlog of other
-- kinds is never read; else t's ready index. While t's lanes are not
-- whole (lib.lua, lanes_whole: an older server's writes), its ready index
-- and those lanes, merged (a member in both is read once): what the index
-- holds goes into the lanes (heal), and what the lanes hold that is no
-- longer ready leaves them.
local function tenant_source(t)
  if nk == 0 then
    local c = cursor(k_ready_t(t))
    c.tenant = t
    return {cs = {c}}
  end
  local whole = lanes_whole(t)
  local cs = lane_cursors(t)
  if not whole then
    local c = cursor(k_ready_t(t))
    c.tenant, c.heal = t, true
    cs[#cs + 1] = c
  end
  return {cs = cs}
end

-- candidate returns the next member of tenant source c that the claim may
-- take, and its execution; nil when c has none left, or (c.capped) after
-- SKIP_CAP members in a row the claim may not take or once the claim has
-- passed SKIP_BUDGET of them.
local function candidate(c)
  local n = 0
  while true do
    if n >= SKIP_CAP or skipped >= SKIP_BUDGET then
      c.capped = true
      return nil
    end
    local m, cur = next_of(c)
    if not m then return nil end
    cur.last = m
    cur.pos = cur.pos + 1
    local e = examine(cur, m)
    if e then return e, m end
    n = n + 1
    skipped = skipped + 1
  end
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
local out = {0, '', 0, 0, 0}
local LEASED0 = #out -- the elements before the leases
local retry = nil
local touched = {}
-- The running set's entries of this claim's leases, {expires, id, ...},
-- added with one ZADD at the end: nothing in the claim reads the set.
local leased = {}
-- The tenants served, in the order they were last served.
local served, served_at = {}, {}

-- take decides candidate e (member m): parked while its concurrency key is
-- at its limit, deferred while its bucket refuses it, else leased. Returns
-- true when it leased it.
local function take(e, m)
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
    idx_rem(e, m)
    ck_ready(e, -1)
    redis.call('ZADD', k_ckparkg(ck_of(e)), 0, ck_group(e) .. m)
    redis.call('HSET', ek, 'parked', 1)
    touched[ck_of(e)] = true
    return false
  end
  if defer_at then
    leave(e)
    redis.call('HSET', ek, 'status', 'scheduled', 'run_at', istr(defer_at), 'ra', time_lex(defer_at))
    redis.call('ZADD', KEYS[1], istr(defer_at), e.id)
    qs_enter(e, 'scheduled', istr(defer_at))
    if e.ckey then touched[ck_of(e)] = true end
    if not retry or defer_at < retry then retry = defer_at end
    out[3] = out[3] + 1
    return false
  end
  if b then
    b.tat = math.max(b.tat or now_n, now_n) + b.iv
    b.taken = true
  end
  idx_rem(e, m)
  qs_leave(e)
  if e.ckey then
    ck_ready(e, -1)
    redis.call('HINCRBY', k_ck(ck_of(e)), 'run', 1)
    redis.call('ZADD', k_ckrun(ck_of(e)), 0, e.id)
  end
  if e.status == 'scheduled' then
    redis.call('ZREM', k_due(), e.id)
    redis.call('HDEL', ek, 'due')
  end
  local attempt = tonumber(e.attempt)
  if not e.resume then attempt = attempt + 1 end
  local token = token_base .. '-' .. #out
  redis.call('HSET', ek, 'status', 'running', 'attempt', attempt, 'token', token,
    'worker', worker, 'lease_exp', expires, 'started', now)
  leased[#leased + 1] = expires
  leased[#leased + 1] = e.id
  run_start(e.id, attempt, now, wtag, runs_kept)
  local journal, partial = {}, 0
  if e.journal and journal_left <= 0 then
    partial = 1
  elseif e.journal then
    local next, size
    next, journal, size = journal_page(e.id, 0, 0, journal_left)
    journal_left = journal_left - size
    if next > 0 then partial = 1 end
  end
  out[#out + 1] = {e.id, e.tenant, e.kind, e.queue, e.payload, attempt, tonumber(e.maxatt), tonumber(e.timeout), token,
    journal, e.trace or '', partial, e.run_at or ''}
  if served_at[e.tenant] then table.remove(served, served_at[e.tenant]) end
  served[#served + 1] = e.tenant
  for i, t in ipairs(served) do served_at[t] = i end
  return true
end

-- walk merges the indexes of fam in member order and takes candidates
-- until the claim is full (the claim for one tenant, and the fallback).
local function walk(fam)
  local src = {cs = {}}
  for _, key in ipairs(fam) do
    if type(key) == 'table' then src.cs[#src.cs + 1] = key else src.cs[#src.cs + 1] = cursor(key) end
  end
  while #out - LEASED0 < max do
    local best, bc = next_of(src)
    if not best then break end
    bc.last = best
    bc.pos = bc.pos + 1
    local e = examine(bc, best)
    if e then take(e, best) end
  end
end

-- smallest returns the smallest family of indexes that covers every
-- candidate of the claim's filters (and of tenant, given one).
local function smallest(with_tenant)
  local families = {}
  if with_tenant then families[#families + 1] = {KEYS[4]} end
  if nq > 0 then families[#families + 1] = qkeys end
  if nk > 0 then families[#families + 1] = kkeys end
  -- The tenant's lanes of the kinds, when whole, hold exactly the
  -- candidates of both (after the kinds' indexes, which win a tie: in a
  -- tenant router's namespace they are the same executions).
  if with_tenant and nk > 0 and lanes_whole(tenant) then families[#families + 1] = lane_cursors(tenant) end
  if #families == 0 then
    local all = {}
    for _, kind in ipairs(redis.call('SMEMBERS', KEYS[3])) do all[#all + 1] = k_ready_k(kind) end
    families[1] = all
  end
  local pick, size = nil, nil
  for _, fam in ipairs(families) do
    local n = 0
    for _, key in ipairs(fam) do
      if type(key) == 'table' then key = key.key end
      n = n + redis.call('ZCARD', key)
    end
    if not size or n < size then pick, size = fam, n end
  end
  return pick
end

if tenant ~= '' then
  if not excluded[tenant] then walk(smallest(true)) end
else
  -- Rounds over the tenants in turn order. The first tenants read are as
  -- many as the claim may lease; more are read only when every tenant read
  -- so far is out of candidates. turns loses, during the claim, only
  -- tenants already read (their index emptied), so the next read starts
  -- after those still in it.
  local order, read, capped = {}, {}, false
  local function more()
    local from = 0
    for _, t in ipairs(read) do
      if redis.call('ZSCORE', TURNS, t) then from = from + 1 end
    end
    -- nx more than wanted: the excluded tenants among them cost one read.
    local ts = redis.call('ZRANGE', TURNS, from, from + (max - (#out - LEASED0)) + nx - 1)
    for _, t in ipairs(ts) do
      read[#read + 1] = t
      if not excluded[t] then order[#order + 1] = tenant_source(t) end
    end
    return #ts > 0
  end
  while #out - LEASED0 < max and skipped < SKIP_BUDGET do
    if #order == 0 and not more() then break end
    local kept = {}
    for i, c in ipairs(order) do
      if #out - LEASED0 >= max then
        for j = i, #order do kept[#kept + 1] = order[j] end
        break
      end
      local got = false
      while true do
        local e, m = candidate(c)
        if not e then break end
        if take(e, m) then
          got = true
          break
        end
      end
      if got then
        kept[#kept + 1] = c
      elseif c.capped then
        capped = true
      end
    end
    order = kept
  end
  if capped and #out - LEASED0 < max then walk(smallest(false)) end
end

-- The turns move before concurrency keys settle: an execution a key lets
-- go back into a ready index that had emptied brings its tenant back to
-- turns with the turn given here.
if #served > 0 then
  local base = redis.call('INCRBY', TURNSEQ, #served) - #served
  for i, t in ipairs(served) do
    if redis.call('ZADD', TURNS, 'XX', 'CH', base + i, t) == 0 then
      redis.call('HSET', k_tenant(t), 'turn', base + i)
    end
  end
end
zadd_pairs(KEYS[2], leased)
for c in pairs(touched) do ck_settle(c) end
for _, b in pairs(buckets) do
  if b and b.taken then redis.call('HSET', b.key, 'tat', istr(b.tat)) end
end
if retry then out[2] = istr(retry) end
out[4] = examined
if tenant ~= '' then out[5] = redis.call('ZCARD', KEYS[4]) end
if #out > LEASED0 or retry then out[1] = changed() end
return out
