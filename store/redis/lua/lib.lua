-- lib.lua: helpers shared by every latch script. It is not a script of its
-- own: scripts.go makes one Redis function library of it and every
-- script's body (each body a function of the library, called with FCALL),
-- or, on a server without functions, prepends it to each script's body
-- (EVALSHA). Either way every Store operation is exactly one call, atomic
-- as a whole. In the library this file runs once, at FUNCTION LOAD, not on
-- every call: KEYS, ARGV and NS are then set by each call (scripts.go), and
-- the state a run keeps (quotas, kinds_added, queues_added) is cleared by
-- run_reset.
--
-- ARGV[1] of every script is the namespace NS = "{prefix}". Keys that a
-- script can name from its arguments alone come in KEYS; the keys that hang
-- off stored data (an execution found through a dedup key or an index, the
-- indexes of its queue and kind, its concurrency key, its tenant's records)
-- are derived here from NS; so are, in every script that changes an
-- execution's status, its queue's statistics keys (qs_enter). Every key
-- carries the one hash tag of NS, so in Redis Cluster they are all on the
-- script's slot. The names must match keys.go (TestLuaKeysMatchGo).
--
-- Times are integer microseconds since the Unix epoch (exact in a Lua
-- double until the year 2255); they arrive as strings in ARGV and are
-- written back as strings (istr), never through Lua's %.14g number
-- formatting. Queue members (qp .. ra .. id) are built by Go, but for the
-- ra of a run_at a script computes itself (time_lex).
--
-- Execution hash fields: id tenant kind queue prio status payload attempt
-- maxatt timeout created run_at qp ra cancel, and when set: dkey ckey climit
-- rkey schedule trace (the W3C traceparent) dhits dhit_at (dedup hits and
-- the latest's time) result error started finished worker token lease_exp, the
-- placement flags parked and due (see leave), and of a flow (see the flows
-- section below): journal ("1" once a step is recorded), resume, nbuf (the
-- signals buffered, not yet consumed: absent is 0), and while
-- suspended wake_at, waiting (the awaited signal) and sstep (the step the
-- suspension's outcome is recorded under), and of a fan-in wait fcount
-- and fbytes, and of a wait for an event esince and ekey (see the events
-- section); bytes, what the execution counts in its tenant's storage
-- budget (see charge; absent is 0); and of composition (see the children
-- section below) parent pstep ponend depth of a child, kids ("1") of a
-- parent.

local NS = ARGV[1]

local function k_exec(id) return NS .. ':exec:' .. id end
local function k_tenant(t) return NS .. ':tenant:' .. t end
local function k_dedup(t) return NS .. ':dedup:' .. t end
local function k_dedupexp() return NS .. ':dedupexp' end
local function k_readykinds() return NS .. ':readykinds' end
local function k_ready_t(t) return NS .. ':ready:t:' .. t end
local function k_ready_q(q) return NS .. ':ready:q:' .. q end
local function k_ready_k(kind) return NS .. ':ready:k:' .. kind end
local function k_sched() return NS .. ':sched' end
local function k_due() return NS .. ':due' end
local function k_running() return NS .. ':running' end
local function k_turns() return NS .. ':turns' end
local function k_turnseq() return NS .. ':turnseq' end
-- Concurrency keys, schedules and rate keys are scoped per tenant: c and s
-- below are scoped(tenant, key or name), the tenant's length first, so that
-- no tenant/name pair can be read two ways; keys.go has the same function.
-- tenant_tag(t) is the tenant's part of those, string.len(t) .. ':' .. t,
-- kept for the rest of the run (run_reset): a number turned into a string
-- goes through Lua's number formatting (sprintf), which a run of many
-- submissions of one tenant would otherwise pay several times each.
local tenant_tags = {}
local function tenant_tag(t)
  local g = tenant_tags[t]
  if not g then
    g = string.len(t) .. ':' .. t
    tenant_tags[t] = g
  end
  return g
end
local function scoped(t, name) return tenant_tag(t) .. name end
local function k_ck(c) return NS .. ':ck:' .. c end
-- ckrun:<c> holds the running executions of key c by id (a sorted set,
-- every score 0, in id order): Explain names them.
local function k_ckrun(c) return NS .. ':ckrun:' .. c end
-- ready:tk:<c>, c = scoped(tenant, kind): a tenant's lane of one kind.
local function k_ready_tk(t, kind) return NS .. ':ready:tk:' .. scoped(t, kind) end
local function k_ckparkg(c) return NS .. ':ckparkg:' .. c end
-- ckpark:<c> is the park of a latch before parks by group: ck_settle lets
-- what it still holds go back, and nothing adds to it.
local function k_ckpark(c) return NS .. ':ckpark:' .. c end
local function k_done(t) return NS .. ':done:' .. t end
local function k_list() return NS .. ':list' end
local function k_list_t(t) return NS .. ':list:' .. t end
local function k_schedule(s) return NS .. ':schedule:' .. s end
local function k_schedules(t) return NS .. ':schedules:' .. t end
local function k_nextrun() return NS .. ':nextrun' end
local function k_schedlive(s) return NS .. ':schedlive:' .. s end
local function k_ratelimit(c) return NS .. ':ratelimit:' .. c end
local function k_ratelimits(t) return NS .. ':ratelimits:' .. t end
local function k_apikey(h) return NS .. ':apikey:' .. h end
local function k_keyids(t) return NS .. ':keyids:' .. t end
-- A flow's records, per execution: its journal, its buffered signals (a
-- list per signal name, sigbuf:<scoped(id, name)>, and the set of names
-- that have one), the first answers of its signals' idempotency keys; and
-- the suspended executions by wake_at.
local function k_steps(id) return NS .. ':steps:' .. id end
local function k_steporder(id) return NS .. ':steporder:' .. id end
local function k_sigbuf(c) return NS .. ':sigbuf:' .. c end
local function k_signames(id) return NS .. ':signames:' .. id end
local function k_sigkeys(id) return NS .. ':sigkeys:' .. id end
local function k_wake() return NS .. ':wake' end
-- An execution's attempt history: its runs, oldest first (see run_start).
local function k_runs(id) return NS .. ':runs:' .. id end
-- A parent's children in spawn order and its per-spawn counters (see the
-- children section).
local function k_kids(id) return NS .. ':kids:' .. id end
local function k_spawns(id) return NS .. ':spawns:' .. id end
-- Events and subscriptions (see the events section): c is scoped(tenant,
-- event name), ck scoped(tenant, scoped(name, key)), sc scoped(tenant,
-- subscription name).
local function k_event(id) return NS .. ':event:' .. id end
local function k_evname(c) return NS .. ':evname:' .. c end
local function k_evkey(ck) return NS .. ':evkey:' .. ck end
local function k_evexp(t) return NS .. ':evexp:' .. t end
local function k_evidem(t) return NS .. ':evidem:' .. t end
local function k_evwait(c) return NS .. ':evwait:' .. c end
local function k_evwaitk(ck) return NS .. ':evwaitk:' .. ck end
local function k_evdone(id) return NS .. ':evdone:' .. id end
local function k_sub(sc) return NS .. ':sub:' .. sc end
local function k_subs(t) return NS .. ':subs:' .. t end
local function k_subev(c) return NS .. ':subev:' .. c end
-- The queue statistics (see qs_enter), per scoped(tenant, queue): the
-- queued and the scheduled executions by run_at, the suspended ones; and
-- the queues of each tenant that have had any.
local function k_qqueued(c) return NS .. ':qqueued:' .. c end
local function k_qsched(c) return NS .. ':qsched:' .. c end
local function k_qsusp(c) return NS .. ':qsusp:' .. c end
local function k_queues(t) return NS .. ':queues:' .. t end
-- Presence and activity (presence.go): the servers by last seen and each
-- one's report, the workers by last seen (members worker_member), and the
-- activity minutes with a hash of each minute's counts (fields s:<T> and
-- f:<T>, the starts and failures of tenant T).
local function k_servers() return NS .. ':servers' end
local function k_server(id) return NS .. ':server:' .. id end
local function k_workers() return NS .. ':workers' end
-- workerclaims: per worker member, the filters of its latest claim (a
-- string presence.go builds; no field: every queue and kind).
local function k_workerclaims() return NS .. ':workerclaims' end
local function k_activity() return NS .. ':activity' end
local function k_activity_m(m) return NS .. ':activity:' .. m end

-- worker_member names a worker in the workers set: its server id, its
-- tenant and its id, each but the last after its length; presence.go's
-- workerMember is the same function, and worker_tenant reads the tenant
-- back.
local function worker_member(server, t, id)
  return string.len(server) .. ':' .. server .. string.len(t) .. ':' .. t .. id
end
local function worker_tenant(m)
  local sep = string.find(m, ':', 1, true)
  local rest = string.sub(m, sep + 1 + tonumber(string.sub(m, 1, sep - 1)))
  sep = string.find(rest, ':', 1, true)
  return string.sub(rest, sep + 1, sep + tonumber(string.sub(rest, 1, sep - 1)))
end

local MEMBER_ID = 33 -- queue members: 16 hex priority, 16 hex run_at, id

local function istr(n) return string.format('%.0f', n) end

-- now_num is tonumber(now) for the time of the calls of a run, read once
-- (strtod) for all of a call's submissions.
local now_s, now_n = nil, nil
local function now_num(now)
  if now ~= now_s then now_s, now_n = now, tonumber(now) end
  return now_n
end

-- time_lex is keys.go's timeLex, for a time a script computes itself (a
-- claim's rate-limit deferral): 16 hex digits of the microseconds with the
-- sign bit flipped, built digit by digit so that no step leaves the
-- integers a Lua double holds exactly (|us| < 2^53).
local HEX = '0123456789abcdef'
local function time_lex(us)
  local n, top, neg = tonumber(us), '8', false
  if n < 0 then n, top, neg = -n - 1, '7', true end -- two's complement
  local d = {}
  for i = 15, 1, -1 do
    local r = n % 16
    n = (n - r) / 16
    if neg then r = 15 - r end
    d[i] = string.sub(HEX, r + 1, r + 1)
  end
  return top .. table.concat(d)
end

-- changed records a change: it bumps the namespace's version and publishes
-- it, so that every Store's Notifier wakes its waiters. Returns the version.
local function changed()
  local v = redis.call('INCR', NS .. ':version')
  redis.call('PUBLISH', NS .. ':changed', v)
  return v
end

-- dedup_member names (tenant, key) in the dedupexp sorted set; keys.go has
-- the same function.
local function dedup_member(t, key) return tenant_tag(t) .. key end

local FIELDS = {'tenant', 'queue', 'kind', 'status', 'ckey', 'climit', 'qp', 'ra',
  'parked', 'attempt', 'maxatt', 'cancel', 'token', 'dkey', 'lease_exp', 'run_at', 'due', 'rkey',
  'resume', 'wake_at', 'parent', 'pstep', 'ponend', 'kids'}

-- LEASE_FIELDS are FIELDS and what a lease carries, so that a claim reads
-- each candidate with one HMGET. (No unpack or ipairs: in the function
-- library this runs at FUNCTION LOAD, which has neither.)
local LEASE_FIELDS = {}
for i = 1, #FIELDS do LEASE_FIELDS[i] = FIELDS[i] end
LEASE_FIELDS[#FIELDS + 1] = 'payload'
LEASE_FIELDS[#FIELDS + 2] = 'timeout'
LEASE_FIELDS[#FIELDS + 3] = 'journal'
LEASE_FIELDS[#FIELDS + 4] = 'trace'
-- SUSPEND_FIELDS are FIELDS and what a suspension's end reads.
local SUSPEND_FIELDS = {}
for i = 1, #FIELDS do SUSPEND_FIELDS[i] = FIELDS[i] end
SUSPEND_FIELDS[#FIELDS + 1] = 'waiting'
SUSPEND_FIELDS[#FIELDS + 2] = 'sstep'
SUSPEND_FIELDS[#FIELDS + 3] = 'fcount'
SUSPEND_FIELDS[#FIELDS + 4] = 'fbytes'
SUSPEND_FIELDS[#FIELDS + 5] = 'esince'
SUSPEND_FIELDS[#FIELDS + 6] = 'ekey'

-- child_end and parent_end are the children section's hooks (below), which
-- finish calls. family lists the members of families they (and drop)
-- changed in this run besides the execution a script is about, for the
-- scripts to report (store.ChangeFeed): a parent a child's end resumed,
-- children a parent's end cancelled, deleted or left without a parent.
local child_end, parent_end
local family = {}

-- family_since returns the entries of family after its first n.
local function family_since(n)
  local out = {}
  for i = n + 1, #family do out[#out + 1] = family[i] end
  return out
end

-- load reads the fields the scripts decide on (fields, FIELDS when nil);
-- nil if there is no such execution. Absent fields are false.
local function load(id, fields)
  fields = fields or FIELDS
  local v = redis.call('HMGET', k_exec(id), unpack(fields))
  if not v[1] then return nil end
  local e = {id = id}
  for i, f in ipairs(fields) do e[f] = v[i] end
  return e
end

local function member(e) return e.qp .. e.ra .. e.id end

-- The ready indexes: every claimable execution is in its tenant's, its
-- queue's, its kind's and its tenant's lane of its kind (ready:tk), so a
-- claim can walk the ones its filters make smallest — a claim filtered by
-- kind walks, per tenant, the lanes of its kinds only, and never reads a
-- backlog of other kinds; a claim without filters merges the kinds' indexes, named in the
-- readykinds set (kinds are few; the set only grows). A run adds each kind
-- to readykinds once: a group of admissions is mostly of one kind, and
-- what one SADD of the run put there stays for the rest of it.
--
-- Turns (I12): the sorted set turns holds exactly the tenants whose
-- ready:t index is not empty, each scored by its turn: claims serve tenants
-- smallest turn first (ties in name order), and give each tenant they serve
-- a turn past every other (claim.lua, from the counter turnseq). A tenant
-- whose ready index empties leaves turns and keeps its turn in its hash
-- (field turn) until its next ready execution brings it back with it: so it
-- comes back ahead of the tenants served since it was last served. Upkeep
-- is one ZCARD for each execution that enters or leaves a tenant's index,
-- and a ZADD or ZREM when the index fills or empties.
local kinds_added = {}
-- A disabled tenant (field disabled = "1") stays out of turns, so no claim
-- walks its work; update_tenant.lua puts it back when it is enabled.
local function turn_enter(t)
  local v = redis.call('HMGET', k_tenant(t), 'turn', 'disabled')
  if v[2] == '1' then return end
  redis.call('ZADD', k_turns(), tonumber(v[1] or 0), t)
end

local function turn_leave(t)
  local turn = redis.call('ZSCORE', k_turns(), t)
  if turn then
    redis.call('HSET', k_tenant(t), 'turn', turn)
    redis.call('ZREM', k_turns(), t)
  end
end

-- The lanes by kind (ready:tk) are written by this layout (3) only; a
-- server of an older release, running beside this one during a deploy,
-- queues and takes executions in the other indexes alone. So the tenant's
-- hash counts its lanes' members (field laned, kept by lane_add and
-- lane_rem, the only writers of lanes): while it equals ZCARD of the
-- tenant's ready:t, the lanes hold exactly its ready executions
-- (lanes_whole); otherwise a claim reads the tenant's ready:t as before
-- the lanes, and puts each ready execution it reads into its lane. A run
-- counts its changes per tenant (laned_delta) and writes them once, at its
-- end (lanes_flush, which scripts.go calls after every script's body): a
-- group of admissions costs one HINCRBY a tenant, not one an execution.
local laned_delta = {}
local function lane_add(t, kind, m)
  if redis.call('ZADD', k_ready_tk(t, kind), 0, m) == 1 then laned_delta[t] = (laned_delta[t] or 0) + 1 end
end

local function lane_rem(t, kind, m)
  if redis.call('ZREM', k_ready_tk(t, kind), m) == 1 then laned_delta[t] = (laned_delta[t] or 0) - 1 end
end

local function lanes_whole(t)
  local n = tonumber(redis.call('HGET', k_tenant(t), 'laned') or 0) + (laned_delta[t] or 0)
  return n == redis.call('ZCARD', k_ready_t(t))
end

-- lanes_flush writes the run's counts; a tenant the run deleted
-- (delete_tenant.lua) gets no hash back.
local function lanes_flush()
  for t, d in pairs(laned_delta) do
    if d ~= 0 and redis.call('EXISTS', k_tenant(t)) == 1 then redis.call('HINCRBY', k_tenant(t), 'laned', d) end
  end
  laned_delta = {}
end

local function idx_add(e, m)
  if not kinds_added[e.kind] then
    redis.call('SADD', k_readykinds(), e.kind)
    kinds_added[e.kind] = true
  end
  local rt = k_ready_t(e.tenant)
  if redis.call('ZADD', rt, 0, m) == 1 and redis.call('ZCARD', rt) == 1 then turn_enter(e.tenant) end
  redis.call('ZADD', k_ready_q(e.queue), 0, m)
  redis.call('ZADD', k_ready_k(e.kind), 0, m)
  lane_add(e.tenant, e.kind, m)
end

-- ready_t_rem takes m out of tenant t's ready index.
local function ready_t_rem(t, m)
  local rt = k_ready_t(t)
  if redis.call('ZREM', rt, m) == 1 and redis.call('ZCARD', rt) == 0 then turn_leave(t) end
end

local function idx_rem(e, m)
  ready_t_rem(e.tenant, m)
  redis.call('ZREM', k_ready_q(e.queue), m)
  redis.call('ZREM', k_ready_k(e.kind), m)
  lane_rem(e.tenant, e.kind, m)
end

-- Concurrency keys (I4), scoped per tenant. For key c = ck_of(e) (the
-- execution's tenant and key), hash ck:c counts 'run' (running executions
-- of the tenant with the key) and, per group g = ck_group(e) (the
-- execution's kind, queue, limit and rate key), field 'r:' .. g the
-- group's queued ones in the ready indexes (a field is dropped when it
-- reaches 0). Sorted set ckparkg:c holds queued ones a claim found blocked
-- (run >= their limit), out of the ready indexes so that a backlog of
-- blocked work costs claims nothing; each member is g .. m (m its
-- ready-index member), so a group's parked executions are one range, in
-- claim order, and the first of the range is the group's head. ck_settle keeps the invariant, per group:
--
--   the group's head stays parked only while run + ready(g) >= its limit,
--
-- and is called after every change that lowers run or a group's ready
-- count. Per group, because claims filter by kind and queue, and every
-- claim sees whole groups: one that may take g's executions and finds
-- g's head parked sees ready(g) >= limit - run of them ready, which the
-- key lets start exactly when it lets the head start (one limit) and
-- whose rate key's bucket is the head's: as many as the head's place
-- would have given (the order among executions of one key is best effort,
-- store.Store.Claim). A count over the whole key would let a claim
-- filtered to g find nothing while the ready ones it counted are of other
-- kinds or queues (or a lower limit, or an exhausted bucket), and g's
-- parked work may start.
--
-- The lengths come first in g (the limit, digits, ends at its ':') so
-- that no group can be read two ways and g .. m splits back (park_split);
-- a group's members sort before g .. PARK_END and every other group's sort
-- outside that range.
local function ck_of(e) return scoped(e.tenant, e.ckey) end
local function ck_group(e)
  local rkey = e.rkey or ''
  return string.len(e.kind) .. ':' .. e.kind .. string.len(e.queue) .. ':' .. e.queue
    .. e.climit .. ':' .. string.len(rkey) .. ':' .. rkey
end
local PARK_END = '\255' -- above every byte a member starts with

-- park_split splits a park member into its group and its ready-index
-- member.
local function park_split(pm)
  local i = 0
  for n = 1, 4 do -- the kind, the queue, the limit, the rate key
    local p = string.find(pm, ':', i + 1, true)
    if n == 3 then
      i = p
    else
      i = p + tonumber(string.sub(pm, i + 1, p - 1))
    end
  end
  return string.sub(pm, 1, i), string.sub(pm, i + 1)
end

-- ck_ready counts execution e in (n = 1) or out of (n = -1) its group's
-- ready count.
local function ck_ready(e, n)
  local ck, f = k_ck(ck_of(e)), 'r:' .. ck_group(e)
  if redis.call('HINCRBY', ck, f, n) <= 0 then redis.call('HDEL', ck, f) end
end

-- ck_gc drops the counter of a key with nothing running, ready or parked.
-- (A field 'ready', the whole key's count of a latch before groups, is
-- not kept: an older counter loses it at its next change.)
local function ck_gc(c)
  local ck = k_ck(c)
  local v = redis.call('HMGET', ck, 'run', 'ready')
  local groups = redis.call('HLEN', ck)
  if v[1] then groups = groups - 1 end
  if v[2] then
    groups = groups - 1
    redis.call('HDEL', ck, 'ready')
  end
  if tonumber(v[1] or 0) <= 0 and groups == 0
      and redis.call('EXISTS', k_ckparkg(c), k_ckpark(c)) == 0 then
    redis.call('DEL', ck, k_ckrun(c))
  end
end

-- ck_unpark puts parked execution e (member m) back in the ready indexes.
local function ck_unpark(e, m)
  redis.call('HDEL', k_exec(e.id), 'parked')
  idx_add(e, m)
  ck_ready(e, 1)
end

-- ck_settle restores the invariant of key c's groups: it visits each
-- group with parked work (one ZRANGEBYLEX a group: a key's groups are its
-- few kinds, queues, limits and rate keys) and lets its head go while
-- run + ready(g) is below the head's limit, at most 64 executions a call.
-- A lease needs no settling (run grows by what its group's count loses,
-- and no other group's sum falls). What an older latch parked in ckpark:c
-- goes back unconditionally (its count was over the whole key).
local function ck_settle(c)
  local ck, pk = k_ck(c), k_ckparkg(c)
  local budget = 64
  local old = k_ckpark(c)
  for _, m in ipairs(redis.call('ZRANGE', old, 0, budget - 1)) do
    redis.call('ZREM', old, m)
    local e = load(string.sub(m, MEMBER_ID))
    if e and e.parked then ck_unpark(e, m) end
    budget = budget - 1
  end
  local run = tonumber(redis.call('HGET', ck, 'run') or 0)
  local lo = '-'
  while budget > 0 do
    local pm = redis.call('ZRANGEBYLEX', pk, lo, '+', 'LIMIT', 0, 1)[1]
    if not pm then break end
    local g, m = park_split(pm)
    local e = load(string.sub(m, MEMBER_ID))
    if not e or not e.parked then
      redis.call('ZREM', pk, pm) -- cannot happen; never block on it
    elseif run + tonumber(redis.call('HGET', ck, 'r:' .. g) or 0) >= tonumber(e.climit) then
      lo = '(' .. g .. PARK_END -- the next group
    else
      redis.call('ZREM', pk, pm)
      ck_unpark(e, m)
      budget = budget - 1
    end
  end
  ck_gc(c)
end

-- enqueue makes an execution claimable: into the ready indexes, counted
-- as ready in its concurrency key's group.
local function enqueue(e)
  idx_add(e, member(e))
  if e.ckey then ck_ready(e, 1) end
end

-- Queue statistics (Store.QueueStats), so that reading them costs the
-- tenants' queues, not their executions: for c = scoped(tenant, queue),
-- qqueued:<c> holds the queued executions and qsched:<c> the scheduled
-- ones (due or not), both scored by run_at, and qsusp:<c> the suspended
-- ones; queues:<T> names the queues of tenant T that have had any (Prune
-- drops a name whose three keys are gone). Running executions are counted
-- from the running set. qs_enter puts an execution that has just taken
-- status st in its place (the queue's name added to queues:<T> once per
-- run, as kinds are), leave takes it out. Executions admitted by a latch
-- from before these keys are in none of them until their next change of
-- status (no upgrade walks them).
local queues_added = {}
local function qs_enter(e, st, run_at)
  local c = scoped(e.tenant, e.queue)
  if not queues_added[c] then
    redis.call('SADD', k_queues(e.tenant), e.queue)
    queues_added[c] = true
  end
  if st == 'queued' then
    redis.call('ZADD', k_qqueued(c), run_at, e.id)
  elseif st == 'scheduled' then
    redis.call('ZADD', k_qsched(c), run_at, e.id)
  elseif st == 'suspended' then
    redis.call('SADD', k_qsusp(c), e.id)
  end
end

local function qs_leave(e)
  local st = e.status
  if st == 'queued' then
    redis.call('ZREM', k_qqueued(scoped(e.tenant, e.queue)), e.id)
  elseif st == 'scheduled' then
    redis.call('ZREM', k_qsched(scoped(e.tenant, e.queue)), e.id)
  elseif st == 'suspended' then
    redis.call('SREM', k_qsusp(scoped(e.tenant, e.queue)), e.id)
  end
end

-- ev_unwait takes a suspended execution e out of the waiters of the
-- event its wait is for, if it waits for an event (see the events
-- section): the wait's fields are read here, as leave's callers load
-- e with FIELDS.
local EVENT_WAIT = 'event:' -- store.EventWaitPrefix
local function ev_unwait(e)
  local w = redis.call('HMGET', k_exec(e.id), 'waiting', 'esince', 'ekey')
  if not w[1] or not w[2] then return end
  local name = string.sub(w[1], string.len(EVENT_WAIT) + 1)
  if w[3] then
    redis.call('ZREM', k_evwaitk(scoped(e.tenant, scoped(name, w[3]))), e.id)
  else
    redis.call('ZREM', k_evwait(scoped(e.tenant, name)), e.id)
  end
end

-- Where an in-flight execution is, by status:
--   queued              the ready indexes, or its key's park (parked=1)
--   scheduled           sched, until a claim finds its run_at come; then
--                       (due=1) the due set and, like a queued one, the
--                       ready indexes or the park. Its status stays
--                       scheduled until Promote (or a claim that leases
--                       it): a claim changes nothing it does not lease.
--   running             the running set
--   suspended           the wake set while it has a wake_at, else nowhere
--                       (it waits for a signal); waiting for an event, in
--                       its name's waiters (ev_unwait); it holds its quota
--                       slot but no lease and no concurrency-key slot
-- and, but for running, the queue statistics (qs_enter).
-- leave takes it out of there. The caller settles its concurrency key once
-- the execution is placed anew.
local function leave(e)
  qs_leave(e)
  if e.status == 'queued' or (e.status == 'scheduled' and e.due) then
    local m = member(e)
    if e.parked then
      redis.call('ZREM', k_ckparkg(ck_of(e)), ck_group(e) .. m)
      redis.call('ZREM', k_ckpark(ck_of(e)), m) -- parked by an older latch
      redis.call('HDEL', k_exec(e.id), 'parked')
    else
      idx_rem(e, m)
      if e.ckey then ck_ready(e, -1) end
    end
    if e.status == 'scheduled' then
      redis.call('ZREM', k_due(), e.id)
      redis.call('HDEL', k_exec(e.id), 'due')
    end
  elseif e.status == 'scheduled' then
    redis.call('ZREM', k_sched(), e.id)
  elseif e.status == 'running' then
    redis.call('ZREM', k_running(), e.id)
    if e.ckey then
      redis.call('HINCRBY', k_ck(ck_of(e)), 'run', -1)
      redis.call('ZREM', k_ckrun(ck_of(e)), e.id)
    end
  elseif e.status == 'suspended' then
    if e.wake_at then redis.call('ZREM', k_wake(), e.id) end
    ev_unwait(e)
    redis.call('HDEL', k_exec(e.id), 'wake_at', 'waiting', 'sstep', 'fcount', 'fbytes', 'esince', 'ekey')
  end
end

-- in_flight tells whether an execution of status st holds a quota slot.
local function in_flight(st)
  return st == 'queued' or st == 'scheduled' or st == 'running' or st == 'suspended'
end

-- zadd_pairs adds sm = {score, member, ...} to sorted set key with as few
-- ZADDs as unpack allows (Lua's stack bounds it to some thousands of
-- values, so a larger batch is split rather than failing midway).
local function zadd_pairs(key, sm)
  for i = 1, #sm, 1000 do
    redis.call('ZADD', key, unpack(sm, i, math.min(i + 999, #sm)))
  end
end

-- finish ends an in-flight execution with a terminal status and frees its
-- tenant's quota slot (I3). result: a JSON string or nil. A success clears
-- the error an earlier attempt left; other ends keep it unless err ('' =
-- none) replaces it. With ended (a table from a script that ends many
-- executions in one run, which nothing in the run reads back), the
-- retention entry and the freed slot are added there, per tenant, and
-- ended_flush writes them with one ZADD and one HINCRBY a tenant. A child
-- gets no retention entry (it goes with its parent: see drop); its end may
-- end its parent's fan-in wait (child_end), and a parent's end cancels its
-- children (parent_end).
local function finish(e, status, now, result, err, ended)
  leave(e)
  local ek = k_exec(e.id)
  -- An in-flight execution has no result yet: nothing to clear.
  if result then
    redis.call('HSET', ek, 'status', status, 'finished', now, 'result', result)
  else
    redis.call('HSET', ek, 'status', status, 'finished', now)
  end
  if status == 'succeeded' then
    redis.call('HDEL', ek, 'token', 'worker', 'lease_exp', 'error', 'resume')
  else
    if err and err ~= '' then redis.call('HSET', ek, 'error', err) end
    redis.call('HDEL', ek, 'token', 'worker', 'lease_exp', 'resume')
  end
  if ended then
    local t = ended[e.tenant]
    if not t then
      t = {n = 0, done = {}}
      ended[e.tenant] = t
    end
    t.n = t.n + 1
    if not e.parent then
      t.done[#t.done + 1] = now
      t.done[#t.done + 1] = e.id
    end
  else
    if not e.parent then redis.call('ZADD', k_done(e.tenant), now, e.id) end
    redis.call('HINCRBY', k_tenant(e.tenant), 'inflight', -1)
  end
  e.status = status
  if e.ckey then ck_settle(ck_of(e)) end
  if e.parent then child_end(e, now) end
  if e.kids then parent_end(e, now) end
end

local function ended_flush(ended)
  for t, v in pairs(ended) do
    if #v.done > 0 then zadd_pairs(k_done(t), v.done) end
    redis.call('HINCRBY', k_tenant(t), 'inflight', -v.n)
  end
end

-- requeue ends a running attempt (or a suspension) and makes the execution
-- claimable again at run_at (scheduled if that is after now). The attempt
-- stays counted (it counts starts) and the quota slot stays taken. The
-- next claim counts a start: see resume for a flow's own progress.
local function requeue(e, run_at, ra, now, err)
  leave(e)
  local ek = k_exec(e.id)
  local status = 'queued'
  if tonumber(run_at) > tonumber(now) then status = 'scheduled' end
  redis.call('HSET', ek, 'status', status, 'run_at', run_at, 'ra', ra)
  if err and err ~= '' then redis.call('HSET', ek, 'error', err) end
  redis.call('HDEL', ek, 'token', 'worker', 'lease_exp', 'resume')
  e.status, e.ra, e.resume = status, ra, false
  qs_enter(e, status, run_at)
  if status == 'queued' then
    enqueue(e)
  else
    redis.call('ZADD', k_sched(), run_at, e.id)
  end
  if e.ckey then ck_settle(ck_of(e)) end
end

-- make_due moves up to limit scheduled executions whose run_at has come by
-- now from sched into the due set and the ready indexes, oldest first,
-- without changing their status (see leave).
local function make_due(now, limit)
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', k_sched(), '-inf', now, 'LIMIT', 0, limit)) do
    local e = load(id)
    redis.call('ZREM', k_sched(), id)
    if e and e.status == 'scheduled' and not e.due then
      redis.call('ZADD', k_due(), e.run_at, id)
      redis.call('HSET', k_exec(id), 'due', 1)
      e.due = '1'
      enqueue(e)
    end
  end
end

-- promote makes a scheduled execution queued; it stays where it waits if
-- a claim has already made it due.
local function promote(e)
  qs_leave(e)
  qs_enter(e, 'queued', e.run_at)
  if e.due then
    redis.call('ZREM', k_due(), e.id)
    redis.call('HDEL', k_exec(e.id), 'due')
  else
    redis.call('ZREM', k_sched(), e.id)
    enqueue(e)
  end
  redis.call('HSET', k_exec(e.id), 'status', 'queued')
  e.status, e.due = 'queued', false
end

-- promote_due promotes up to limit scheduled executions due at now,
-- oldest run_at first, from the due set and sched together, and returns
-- how many it moved.
local function promote_due(now, limit)
  local a = redis.call('ZRANGEBYSCORE', k_due(), '-inf', now, 'WITHSCORES', 'LIMIT', 0, limit)
  local b = redis.call('ZRANGEBYSCORE', k_sched(), '-inf', now, 'WITHSCORES', 'LIMIT', 0, limit)
  local i, j, n = 1, 1, 0
  while n < limit and (i < #a or j < #b) do
    local id
    if j >= #b or (i < #a and tonumber(a[i + 1]) <= tonumber(b[j + 1])) then
      id, i = a[i], i + 2
    else
      id, j = b[j], j + 2
    end
    local e = load(id)
    if e and e.status == 'scheduled' then
      promote(e)
      n = n + 1
    else -- cannot happen; never block on it
      redis.call('ZREM', k_due(), id)
      redis.call('ZREM', k_sched(), id)
    end
  end
  return n
end

-- fence returns the running execution id if token is its current lease
-- token, the lease has not expired before now and it belongs to tenant
-- ('' = any); nil otherwise (I5). An expired token changes nothing even
-- before Rescue has ended its lease.
local function fence(id, tenant, token, now)
  local e = load(id)
  if not e or e.status ~= 'running' or e.token ~= token or (tenant ~= '' and e.tenant ~= tenant)
      or tonumber(e.lease_exp or 0) < tonumber(now) then
    return nil
  end
  return e
end

-- owned returns the execution id of tenant ('' = any), or nil: another
-- tenant's execution is indistinguishable from a missing one.
local function owned(id, tenant)
  local e = load(id)
  if not e or (tenant ~= '' and e.tenant ~= tenant) then return nil end
  return e
end

-- The storage budget (store/storage.go). An execution's bytes field is
-- what it counts; its tenant's stored field is their sum, changed in the
-- same run as the bytes it counts, and max_bytes the budget (absent on a
-- tenant created before it: DEFAULT_MAX_BYTES, store.DefaultMaxStoredBytes).
local DEFAULT_MAX_BYTES = 1073741824

-- bytes_fit reports whether tenant hash field values max_bytes and stored
-- (as HMGET gives them) leave room for n more bytes.
local function bytes_fit(max_bytes, stored, n)
  return (tonumber(stored) or 0) + n <= (tonumber(max_bytes) or DEFAULT_MAX_BYTES)
end

-- charge counts n more bytes for execution e (with its tenant) and its
-- tenant, and returns true; unless force, it returns false and writes
-- nothing when that would take the tenant past its budget.
local function charge(e, n, force)
  if n == 0 then return true end
  local kt = k_tenant(e.tenant)
  if not force then
    local v = redis.call('HMGET', kt, 'max_bytes', 'stored')
    if not bytes_fit(v[1], v[2], n) then return false end
  end
  redis.call('HINCRBY', kt, 'stored', n)
  redis.call('HINCRBY', k_exec(e.id), 'bytes', n)
  return true
end

-- remove deletes an execution and every trace of it: list entries, the
-- retention index, its dedup key if the key still names it
-- (compare-and-delete), its attempt history, a flow's journal, buffered
-- signals and signal idempotency keys, a parent's list of children and
-- counters and a child's entry in its parent's list; and gives its bytes
-- back to its tenant's count. Its status must have been left (see leave)
-- first. drop (the children section) removes a family.
local function remove(e)
  local names = k_signames(e.id)
  for _, name in ipairs(redis.call('SMEMBERS', names)) do
    redis.call('DEL', k_sigbuf(scoped(e.id, name)))
  end
  redis.call('DEL', names, k_steps(e.id), k_steporder(e.id), k_sigkeys(e.id), k_runs(e.id), k_kids(e.id),
    k_spawns(e.id), k_evdone(e.id))
  if e.parent then redis.call('ZREM', k_kids(e.parent), e.id) end
  redis.call('ZREM', k_list(), e.id)
  redis.call('ZREM', k_list_t(e.tenant), e.id)
  redis.call('ZREM', k_done(e.tenant), e.id)
  if e.dkey then
    local v = redis.call('HGET', k_dedup(e.tenant), e.dkey)
    if v and string.sub(v, string.find(v, ':', 1, true) + 1) == e.id then
      redis.call('HDEL', k_dedup(e.tenant), e.dkey)
      redis.call('ZREM', k_dedupexp(), dedup_member(e.tenant, e.dkey))
    end
  end
  local b = tonumber(redis.call('HGET', k_exec(e.id), 'bytes') or 0)
  if b ~= 0 then redis.call('HINCRBY', k_tenant(e.tenant), 'stored', -b) end
  redis.call('DEL', k_exec(e.id))
end

-- Admission, shared by admit.lua (Store.Admit) and fire_schedule.lua (a
-- schedule's tick, admitted as Admit admits it).
--
-- quota returns tenant t's quota record {max, inflight, ttl, added, and of
-- its storage budget max_bytes, stored, bytes}, read once per script run,
-- or nil for an unknown tenant. Admissions count in it (admit_new adds the
-- slot and the payload's bytes); quota_flush writes what they added back
-- once, at the end of the script, so that calls of one run see each
-- other's admissions. q_fits tells whether n more bytes fit.
local quotas = {}
local function quota(t)
  local q = quotas[t]
  if not q then
    local v = redis.call('HMGET', k_tenant(t), 'max_inflight', 'inflight', 'dedup_ttl', 'max_bytes', 'stored')
    if not v[1] then return nil end
    q = {max = tonumber(v[1]), inflight = tonumber(v[2]), ttl = tonumber(v[3]), added = 0,
      max_bytes = v[4], stored = tonumber(v[5]) or 0, bytes = 0}
    quotas[t] = q
  end
  return q
end

local function q_fits(q, n) return bytes_fit(q.max_bytes, q.stored + q.bytes, n) end

local function quota_flush()
  for t, q in pairs(quotas) do
    if q.added > 0 then redis.call('HINCRBY', k_tenant(t), 'inflight', q.added) end
    if q.bytes > 0 then redis.call('HINCRBY', k_tenant(t), 'stored', q.bytes) end
  end
end

-- run_reset forgets what the previous run kept: in the function library
-- this file's locals outlive a call.
local function run_reset()
  quotas, kinds_added, queues_added, tenant_tags, laned_delta, family = {}, {}, {}, {}, {}, {}
  now_s, now_n = nil, nil
end

-- dedup_live returns the id of the execution tenant t's dedup key maps to,
-- or nil if the key maps to none or its TTL has passed by now. An expired
-- mapping is replaced when an execution is admitted under the key.
local function dedup_live(t, dkey, now)
  if dkey == '' then return nil end
  local v = redis.call('HGET', k_dedup(t), dkey)
  if not v then return nil end
  local sep = string.find(v, ':', 1, true)
  if tonumber(string.sub(v, 1, sep - 1)) <= now_num(now) then return nil end
  return string.sub(v, sep + 1)
end

-- dedup_hit counts a dedup hit on execution id at now (a submit or a
-- schedule's tick that its dedup key answered with it) and returns the
-- execution's new count.
local function dedup_hit(id, now)
  local n = redis.call('HINCRBY', k_exec(id), 'dhits', 1)
  redis.call('HSET', k_exec(id), 'dhit_at', now)
  return n
end

-- admit_new writes a new execution admitted at now (a string): x holds its
-- fields (id tenant kind queue prio qp payload dkey ckey climit rkey maxatt
-- timeout schedule run_at ra, '' for none, and trace, nil or '' for none)
-- and status is nil (queued, or scheduled when run_at is after now),
-- 'skipped' (a tick dropped by overlap skip) or 'cancelled' (a child
-- spawned by a parent whose cancel was requested): terminal at once,
-- finished at now, holding no quota slot. A child's x also holds parent,
-- pstep, ponend and depth (spawn.lua).
-- Together: the hash, its list entries, its queue, schedule or retention
-- entry, its dedup mapping (for the tenant's dedup TTL) and, in flight, its
-- quota slot in q (see quota) and its place in its schedule's live set.
local function admit_new(x, status, now, q)
  if not status then
    status = 'queued'
    if x.run_at ~= now and tonumber(x.run_at) > now_num(now) then status = 'scheduled' end
  end
  local h = {'id', x.id, 'tenant', x.tenant, 'kind', x.kind, 'queue', x.queue,
    'prio', x.prio, 'status', status, 'payload', x.payload, 'attempt', 0, 'maxatt', x.maxatt,
    'timeout', x.timeout, 'created', now, 'run_at', x.run_at, 'qp', x.qp, 'ra', x.ra, 'cancel', 0}
  -- A skipped tick keeps no payload (store.SkippedPayload), so counts none.
  local bytes = 0
  if status ~= 'skipped' then bytes = #x.payload end
  h[#h + 1] = 'bytes'; h[#h + 1] = bytes
  q.bytes = q.bytes + bytes
  local e = {id = x.id, tenant = x.tenant, queue = x.queue, kind = x.kind, status = status, qp = x.qp, ra = x.ra}
  if x.dkey ~= '' then h[#h + 1] = 'dkey'; h[#h + 1] = x.dkey end
  if x.ckey ~= '' then
    h[#h + 1] = 'ckey'; h[#h + 1] = x.ckey
    h[#h + 1] = 'climit'; h[#h + 1] = x.climit
    e.ckey, e.climit = x.ckey, x.climit
  end
  if x.rkey ~= '' then
    h[#h + 1] = 'rkey'; h[#h + 1] = x.rkey
    e.rkey = x.rkey
  end
  if x.schedule ~= '' then h[#h + 1] = 'schedule'; h[#h + 1] = x.schedule end
  if x.trace and x.trace ~= '' then h[#h + 1] = 'trace'; h[#h + 1] = x.trace end
  if x.parent then
    h[#h + 1] = 'parent'; h[#h + 1] = x.parent
    h[#h + 1] = 'pstep'; h[#h + 1] = x.pstep
    h[#h + 1] = 'ponend'; h[#h + 1] = x.ponend
    h[#h + 1] = 'depth'; h[#h + 1] = x.depth
  end
  local live = status == 'queued' or status == 'scheduled'
  if not live then h[#h + 1] = 'finished'; h[#h + 1] = now end
  redis.call('HSET', k_exec(x.id), unpack(h))
  redis.call('ZADD', k_list(), 0, x.id)
  redis.call('ZADD', k_list_t(x.tenant), 0, x.id)
  if status == 'queued' then
    enqueue(e)
    qs_enter(e, status, x.run_at)
  elseif status == 'scheduled' then
    redis.call('ZADD', k_sched(), x.run_at, x.id)
    qs_enter(e, status, x.run_at)
  elseif not x.parent then
    redis.call('ZADD', k_done(x.tenant), now, x.id)
  end
  if x.dkey ~= '' then
    local expires = istr(now_num(now) + q.ttl)
    redis.call('HSET', k_dedup(x.tenant), x.dkey, expires .. ':' .. x.id)
    redis.call('ZADD', k_dedupexp(), expires, dedup_member(x.tenant, x.dkey))
  end
  if live then
    q.inflight = q.inflight + 1
    q.added = q.added + 1
    if x.schedule ~= '' then redis.call('SADD', k_schedlive(scoped(x.tenant, x.schedule)), x.id) end
  end
end

-- Schedules. schedlive:<s> holds the ids of schedule s's executions
-- admitted in flight (admit_new); one that has since ended or gone stays
-- until sched_busy next reads the set. sched_busy reports whether an
-- execution of s is not terminal, exactly, removing the members that are
-- terminal or missing (lazy cleanup: the scripts that end executions need
-- not know about schedules).
local function sched_busy(s)
  local live = k_schedlive(s)
  local busy = false
  for _, id in ipairs(redis.call('SMEMBERS', live)) do
    local st = redis.call('HGET', k_exec(id), 'status')
    if in_flight(st) then
      busy = true
    else
      redis.call('SREM', live, id)
    end
  end
  return busy
end

-- Flows. steps:<id> maps each recorded step's name to
-- "<seq>:<started_us or ''>:<recorded_us>:<attempt>:<result JSON>", seq its
-- place in record order (1, 2, ...): one key holds the journal, its order
-- and its metadata, and a claim reads it with one HGETALL, only when the
-- execution's journal flag says there is one. A step is never removed
-- alone: the key goes with the execution (remove).
--
--
-- steporder:<id> lists the names in record order, so that a page of the
-- journal (steps.lua) and a lease's (claim.lua) read the names in order
-- and then the entries they keep only; the execution's field jbytes is the
-- journal's size, each step counting its name and result in bytes
-- (store.StepSize), checked against the bound of bytes before a record. A
-- journal an older latch recorded has neither: journal_size builds both
-- once from its entries (absent means not built yet).

-- step_result_at is where the result starts in a journal entry.
local function step_result_at(v)
  local _, stop = string.find(v, '^[^:]*:[^:]*:[^:]*:[^:]*:')
  return stop + 1
end

-- journal_size returns the size of execution id's journal, building its
-- order and size first if an older latch recorded it.
local function journal_size(id)
  local sk, ok = k_steps(id), k_steporder(id)
  local n = redis.call('HLEN', sk)
  if n == 0 then return 0 end
  local size = redis.call('HGET', k_exec(id), 'jbytes')
  if size and redis.call('LLEN', ok) == n then return tonumber(size) end
  local all = redis.call('HGETALL', sk)
  local names = {}
  size = 0
  for i = 1, #all, 2 do
    local name, v = all[i], all[i + 1]
    names[tonumber(string.match(v, '^(%d+):'))] = name
    size = size + #name + #v - step_result_at(v) + 1
  end
  redis.call('DEL', ok)
  for i = 1, n, 1000 do
    redis.call('RPUSH', ok, unpack(names, i, math.min(i + 999, n)))
  end
  redis.call('HSET', k_exec(id), 'jbytes', size)
  return size
end

-- journal_fits reports whether a step named name with result of n bytes
-- fits in execution id's journal under bound bytes.
local function journal_fits(id, name, n, bound)
  return journal_size(id) + #name + n <= tonumber(bound)
end

-- journal_page reads the steps of execution id's journal after the first
-- after, in record order: at most limit (0 = all), ending after the step
-- whose size reaches max_bytes (0 = no bound); only the entries it keeps
-- are read. It returns the page's next (the seq of its last step, 0 when
-- the journal holds no more), {name, entry, ...} and the page's size.
local function journal_page(id, after, limit, max_bytes)
  journal_size(id)
  local sk, stop = k_steps(id), -1
  if limit > 0 then stop = after + limit end
  local out, total = {}, 0
  for i, name in ipairs(redis.call('LRANGE', k_steporder(id), after, stop)) do
    if (limit > 0 and i > limit) or (max_bytes > 0 and total >= max_bytes) then
      return after + i - 1, out, total
    end
    local v = redis.call('HGET', sk, name)
    out[#out + 1] = name
    out[#out + 1] = v
    total = total + #name + #v - step_result_at(v) + 1
  end
  return 0, out, total
end

-- record records step name of execution e at now (first record wins) and
-- returns true, or false when the name was recorded already. started is
-- '' when not given.
local function record(e, name, result, started, now)
  local sk = k_steps(e.id)
  if redis.call('HEXISTS', sk, name) == 1 then return false end
  journal_size(e.id)
  local seq = redis.call('HLEN', sk) + 1
  redis.call('HSET', sk, name, seq .. ':' .. started .. ':' .. now .. ':' .. e.attempt .. ':' .. result)
  redis.call('RPUSH', k_steporder(e.id), name)
  redis.call('HINCRBY', k_exec(e.id), 'jbytes', #name + #result)
  redis.call('HSET', k_exec(e.id), 'journal', 1)
  return true
end

-- resume queues a running or suspended execution again at now by the
-- flow's own progress (a step it already has, a signal, a wake): its next
-- claim keeps the attempt (claim.lua), and the field resume stays until
-- the run that claim starts ends (finish, requeue).
local function resume(e, now, ra)
  requeue(e, now, ra, now, '')
  redis.call('HSET', k_exec(e.id), 'resume', 1)
  e.resume = '1'
end

-- sig_pop consumes the oldest buffered signal of that name sent to
-- execution id and returns its data, or nil when none is buffered.
local function sig_pop(id, name)
  local b = k_sigbuf(scoped(id, name))
  local data = redis.call('LPOP', b)
  if not data then return nil end
  if redis.call('LLEN', b) == 0 then redis.call('SREM', k_signames(id), name) end
  -- A signal buffered by a latch that kept no count is not in nbuf: the
  -- count never goes below 0.
  if tonumber(redis.call('HGET', k_exec(id), 'nbuf') or '0') > 0 then
    redis.call('HINCRBY', k_exec(id), 'nbuf', -1)
  end
  return data
end

-- The attempt history (store/attempt.go). runs:<id> is a list of the
-- execution's runs, oldest first, each one string:
--
--   <outcome>:<ended_us>:<attempt>:<claimed_us>:<len(worker)>:<worker><error>
--
-- outcome and ended_us empty while the run goes on, so a running run
-- starts with ':' and no ended one does; the worker id's length comes
-- first so that it may hold any byte, and the error (a failure's message)
-- is the rest. A claim adds a run with one RPUSH (an LTRIM only when that
-- passes the bound), and the script that ends the lease rewrites the last
-- element in place: the run it ends is the last one added, since only a
-- claim adds one and an execution holds one lease at a time.
--
-- run_start adds the run a claim starts: wtag is ':' .. len .. ':' ..
-- worker, built once per claim; kept is store.MaxRunsKept.
local function run_start(id, attempt, now, wtag, kept)
  local k = k_runs(id)
  if redis.call('RPUSH', k, '::' .. attempt .. ':' .. now .. wtag) > kept then
    redis.call('LTRIM', k, -kept, -1)
  end
end

-- run_end ends execution e's current run at now with outcome (err: the
-- failure's message, or nil). A lease without a running run (claimed
-- before this history was kept, or by an older latch sharing the server)
-- leaves the history as it is rather than end another run.
local function run_end(e, now, outcome, err)
  local k = k_runs(e.id)
  local cur = redis.call('LINDEX', k, -1)
  if not cur or string.sub(cur, 1, 1) ~= ':' then return end
  redis.call('LSET', k, -1, outcome .. ':' .. now .. string.sub(cur, 2) .. (err or ''))
end

-- Children (store/children.go). A child's hash carries parent (its
-- parent's id), pstep (the spawn step), ponend ('cancel' or 'abandon')
-- and depth; a parent's carries kids ('1') once it has spawned.
-- kids:<id> holds a parent's children scored by spawn order (1, 2, ...):
-- List by parent pages it, a parent's end walks it. spawns:<id> counts
-- the children ever spawned (n) and, per spawn step s, its children (t:s)
-- and those of them that have ended (e:s: terminal or deleted, counted
-- once, when the child leaves flight; Retry takes it back): so a child's
-- end reads its parent's wait and two counters, never its siblings. A
-- fan-in wait is a suspension with waiting CHILDREN_WAIT .. s, fcount
-- (its count, 0 = all; its presence tells it from a wait for a signal of
-- that name) and fbytes (the journal's bound of bytes its outcome is
-- recorded within). A terminal child with a parent has no retention
-- entry: it goes with its parent (drop), never alone.
local CHILDREN_WAIT = 'children:' -- store.ChildrenWaitPrefix

-- wait_holds is store.ChildrenWaitHolds.
local function wait_holds(ended, total, count)
  if count <= 0 or count > total then count = total end
  return ended >= count
end

-- spawn_ids returns the ids a spawn step of execution id recorded, in
-- spawn order, or nil when step is no spawn's.
local function spawn_ids(id, step)
  local entry = redis.call('HGET', k_steps(id), step)
  if not entry then return nil end
  local ok, r = pcall(cjson.decode, string.sub(entry, step_result_at(entry)))
  if not ok or type(r) ~= 'table' or type(r.children) ~= 'table' then return nil end
  return r.children
end

-- fanin_step is store.FanInStep for the wait of execution id on spawn
-- step s, recorded as step name within the journal's bound of bytes:
-- every child of the spawn as it is now (status 'deleted' when gone).
local function fanin_step(id, s, name, timed_out, bound)
  local ids = spawn_ids(id, s) or {}
  local heads, results, errs = {}, {}, {}
  for i, cid in ipairs(ids) do
    local v = redis.call('HMGET', k_exec(cid), 'status', 'result', 'error')
    heads[i] = '{"execution_id":' .. cjson.encode(cid) .. ',"status":' .. cjson.encode(v[1] or 'deleted')
    if v[2] and v[2] ~= '' then results[i] = v[2] end
    errs[i] = ',"error":null}'
    if v[3] and v[3] ~= '' then errs[i] = ',"error":' .. cjson.encode(v[3]) .. '}' end
  end
  -- Every child has "result" and "error", null when it has none (the
  -- contract's shape, as store.FanInChild encodes it).
  local tail = ',"timed_out":false}'
  if timed_out then tail = ',"timed_out":true}' end
  local room = tonumber(bound) - journal_size(id)
  local parts = {}
  for i = 1, #ids do
    parts[i] = heads[i] .. ',"result":' .. (results[i] or 'null') .. errs[i]
  end
  local full = '{"children":[' .. table.concat(parts, ',') .. ']' .. tail
  if #name + #full <= room then return full end
  -- Every result null first; then results back in spawn order while they
  -- fit.
  tail = ',"timed_out":' .. tostring(timed_out) .. ',"results_omitted":true}'
  for i = 1, #ids do parts[i] = heads[i] .. ',"result":null' .. errs[i] end
  local used = #name + #('{"children":[' .. table.concat(parts, ',') .. ']' .. tail)
  for i = 1, #ids do
    if results[i] then
      local extra = #results[i] - #'null'
      if used + extra > room then break end
      parts[i] = heads[i] .. ',"result":' .. results[i] .. errs[i]
      used = used + extra
    end
  end
  return '{"children":[' .. table.concat(parts, ',') .. ']' .. tail
end

-- fanin_end ends suspended execution p's fan-in wait at now (p loaded with
-- SUSPEND_FIELDS): its step recorded (fanin_step; counted in the storage
-- budget, never refused) and the execution queued again (a resume).
local function fanin_end(p, timed_out, now)
  local s = string.sub(p.waiting, string.len(CHILDREN_WAIT) + 1)
  local result = fanin_step(p.id, s, p.sstep, timed_out, p.fbytes)
  record(p, p.sstep, result, '', now)
  charge(p, #result, true)
  resume(p, now, time_lex(now))
end

-- fanin_wait reports whether p (loaded with SUSPEND_FIELDS) is suspended
-- in a fan-in wait.
local function fanin_wait(p)
  return p.status == 'suspended' and p.fcount and p.waiting
    and string.sub(p.waiting, 1, string.len(CHILDREN_WAIT)) == CHILDREN_WAIT
end

-- child_end counts child e's end (it left flight: terminal, or deleted
-- while in flight) in its spawn's counter and ends its parent's fan-in
-- wait on that spawn when the wait's condition now holds.
child_end = function(e, now)
  local sp = k_spawns(e.parent)
  local ended = redis.call('HINCRBY', sp, 'e:' .. e.pstep, 1)
  local p = load(e.parent, SUSPEND_FIELDS)
  if not p or not fanin_wait(p) or p.waiting ~= CHILDREN_WAIT .. e.pstep then return end
  local total = tonumber(redis.call('HGET', sp, 't:' .. e.pstep) or 0)
  if wait_holds(ended, total, tonumber(p.fcount)) then
    fanin_end(p, false, now)
    family[#family + 1] = p.id
  end
end

-- parent_end cancels the live children parent e spawned with 'cancel', and
-- theirs in turn, at e's end (or its requested cancel): a queued,
-- scheduled or suspended one is cancelled at once (finish, which goes on
-- to its children), a running one gets its cancel requested, its children
-- cancelled the same way. Children spawned with 'abandon' live on.
parent_end = function(e, now)
  for _, cid in ipairs(redis.call('ZRANGE', k_kids(e.id), 0, -1)) do
    local c = load(cid)
    if c and c.ponend ~= 'abandon' then
      if c.status == 'queued' or c.status == 'scheduled' or c.status == 'suspended' then
        family[#family + 1] = cid
        finish(c, 'cancelled', now, nil, '')
      elseif c.status == 'running' and c.cancel ~= '1' then
        family[#family + 1] = cid
        redis.call('HSET', k_exec(cid), 'cancel', 1)
        c.cancel = '1'
        if c.kids then parent_end(c, now) end
      end
    end
  end
end

-- drop deletes execution e, whose status was left already if it was in
-- flight, and its family: each child and theirs, those in flight out of
-- their places and quota slots, but for a child spawned with 'abandon'
-- still in flight, which stays without a parent. Returns how many
-- executions went.
local function drop(e)
  local n = 1
  if e.kids then
    for _, cid in ipairs(redis.call('ZRANGE', k_kids(e.id), 0, -1)) do
      local c = load(cid)
      if c then
        family[#family + 1] = cid
        if in_flight(c.status) and c.ponend == 'abandon' then
          redis.call('HDEL', k_exec(cid), 'parent', 'pstep')
        else
          if in_flight(c.status) then
            leave(c)
            redis.call('HINCRBY', k_tenant(c.tenant), 'inflight', -1)
          end
          c.parent = nil -- its parent's list goes whole
          n = n + drop(c)
          if in_flight(c.status) and c.ckey then ck_settle(ck_of(c)) end
        end
      end
    end
  end
  remove(e)
  return n
end

-- each_call runs a group of calls (see group.go for the protocol): for
-- each, one(k, a) gets the index in KEYS of the call's first key and the
-- index in ARGV of its first argument, and returns the call's reply and
-- whether it changed anything. Returns the script's answer
-- {version, reply_1, ..., reply_n}, version 0 when nothing changed.
local function each_call(fixed, one)
  local res = {0}
  local any = false
  local k, a = fixed + 1, 3
  for _ = 1, tonumber(ARGV[2]) do
    local nk, na = tonumber(ARGV[a]), tonumber(ARGV[a + 1])
    local reply, ch = one(k, a + 2)
    res[#res + 1] = reply
    any = any or ch
    k, a = k + nk, a + 2 + na
  end
  if any then res[1] = changed() end
  return res
end

-- Events (store/events.go). An event is a hash, event:<id>: id tenant
-- name key (absent: none) pub and exp (published and expires, us) seq
-- (its tenant's publish order: the tenant hash's evseq) bytes
-- (store.EventSize, counted in its tenant's stored) idem (absent: none)
-- step (store.EventStep of it: the step a wait records, the payload of an
-- execution it starts) and lean (the same without its data, the step a
-- wait records when step does not fit its journal). Its indexes, each in
-- its tenant's slot: evname:<c> and, with a key, evkey:<ck> hold it as
-- ev_member (16 hex digits of seq, then the id) scored by pub, so a
-- range by score from a wait's since, in member order, is oldest first
-- (published, then publish order); evexp:<T> holds its id by exp
-- (Prune); evidem:<T> maps an idempotency key to its publish's answer
-- (store.MarshalPublishAnswer's JSON, which starts with the event's id).
-- evdone:<id> is the set of events execution id consumed (one per step
-- it recorded; removed with it). A wait for an event is a suspension with
-- waiting EVENT_WAIT .. name, esince (us; its presence tells it from a
-- wait for a signal of that name), ekey when it names a key, and fbytes
-- (the journal's bound its outcome is recorded within); it is in
-- evwait:<c> (no key) or evwaitk:<ck> (a key), scored by esince, so that
-- a publish reads exactly the waits it matches.
local EV_MEMBER_ID = 17 -- ev_member: 16 hex digits of seq, then the id

local function ev_member(seq, id) return string.format('%016x', seq) .. id end

-- ev_step is the step execution p records as step name for an event (its
-- hash's step and lean), within bound bytes of journal: step when it
-- fits, else lean (store.EventStepWithin; never refused). It records
-- nothing, so that a script can count every copy it would record against
-- the storage budget before it writes any.
local function ev_step(p, name, step, lean, bound)
  if #name + #step > tonumber(bound) - journal_size(p.id) then return lean end
  return step
end

-- ev_consume records result (ev_step of event eid) as suspended or running
-- execution p's step name, counts it in p's and its tenant's stored bytes
-- (the caller checked the budget), marks the event consumed by p and
-- queues p again (a resume).
local function ev_consume(p, name, eid, result, now)
  record(p, name, result, '', now)
  charge(p, #result, true)
  redis.call('SADD', k_evdone(p.id), eid)
  resume(p, now, time_lex(now))
end

-- ev_find returns the oldest retained event of tenant t named name (and
-- key, unless '') published at or after since that execution id has not
-- consumed, or nil: its index from since, skipping the consumed ones (at
-- most one per step of id's journal) and expired ones Prune has not
-- deleted yet.
local function ev_find(t, id, name, key, since, now)
  local idx = k_evname(scoped(t, name))
  if key ~= '' then idx = k_evkey(scoped(t, scoped(name, key))) end
  local off, n = 0, tonumber(now)
  while true do
    local ms = redis.call('ZRANGEBYSCORE', idx, since, '+inf', 'LIMIT', off, 64)
    if #ms == 0 then return nil end
    for _, m in ipairs(ms) do
      local eid = string.sub(m, EV_MEMBER_ID)
      if redis.call('SISMEMBER', k_evdone(id), eid) == 0 then
        local exp = redis.call('HGET', k_event(eid), 'exp')
        if exp and tonumber(exp) > n then return eid end
      end
    end
    off = off + #ms
  end
end

-- ev_drop deletes event eid: its hash, its index entries, its idempotency
-- key if that still answers for it, and its bytes from its tenant's
-- stored. Returns false when there is no such event.
local function ev_drop(eid)
  local v = redis.call('HMGET', k_event(eid), 'tenant', 'name', 'key', 'seq', 'bytes', 'idem')
  if not v[1] then return false end
  local t, m = v[1], ev_member(tonumber(v[4]), eid)
  redis.call('ZREM', k_evname(scoped(t, v[2])), m)
  if v[3] then redis.call('ZREM', k_evkey(scoped(t, scoped(v[2], v[3]))), m) end
  redis.call('ZREM', k_evexp(t), eid)
  if v[6] then
    local a = redis.call('HGET', k_evidem(t), v[6])
    if a and string.sub(a, 1, 14 + #eid) == '{"event_id":"' .. eid .. '"' then
      redis.call('HDEL', k_evidem(t), v[6])
    end
  end
  local b = tonumber(v[5] or 0)
  if b ~= 0 and redis.call('EXISTS', k_tenant(t)) == 1 then redis.call('HINCRBY', k_tenant(t), 'stored', -b) end
  redis.call('DEL', k_event(eid))
  return true
end
