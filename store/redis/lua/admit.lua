-- admit.lua: Store.Admit — one or more Admit calls (a group gathered by the
-- Store from concurrent callers), each one tenant's submissions, decided
-- one by one in order and written by this one script. For each item the
-- dedup lookup and compare, the quota check and increment, the execution
-- hash, its list entries, its queue entry (or schedule entry) and its dedup
-- mapping are written together: there is no moment at which a key maps to
-- an execution that is not there, or an execution exists without its queue
-- entry, for any reader or any crash to see (the seed incident). Calls are
-- independent: a refused call (unknown tenant, taken id) writes nothing and
-- does not affect the others.
--
-- Group protocol (group.go, lib.lua each_call).
-- KEYS[1] dedupexp   KEYS[2] list   KEYS[3] sched   KEYS[4] readykinds
-- each call's keys: tenant:<T>, dedup:<T>, list:<T>, and exec:<id> of each
-- of its items
--   derived: the ready indexes of each item's tenant, queue and kind,
--   ck:<c>, and exec:<id> of an execution a dedup key maps to.
-- each call's ARGV: tenant, now_us, n (items), and 16 per item:
--   id, explicit_id (0/1), kind, queue, priority, qp, payload, dedup_key,
--   concurrency_key, concurrency_limit, rate_key, max_attempts,
--   timeout_seconds, schedule, run_at_us, ra
-- Returns {version, reply_1, ..., reply_calls}; version is 0 when nothing
-- was written. A reply is {'NOTFOUND'} for an unknown tenant,
-- {'IDEXISTS', id} when an explicit id is taken (nothing written for that
-- call), else {'OK', code_1, data_1, ..., code_n, data_n} where code is
--   'N' new (data ''), 'D' deduplicated (data = HGETALL of the execution),
--   'd' deduplicated onto an execution whose HGETALL an earlier 'D' of this
--   answer carries (data = its id; it cannot change within one run),
--   'R' key reused with another kind or payload (data = its execution id),
--   'Q' quota exceeded (data = inflight at that point).

local W = 16 -- ARGV per item

-- Each tenant's quota is read once per script run and written back once at
-- its end; calls of one tenant see each other's admissions.
local quotas = {}
-- Executions whose hash this run's answer already carries.
local shown = {}

local function admit_call(k, a)
  local kt, kd, kl, kexec = KEYS[k], KEYS[k + 1], KEYS[k + 2], k + 3
  local tenant, now, n = ARGV[a], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  local q = quotas[kt]
  if not q then
    local t = redis.call('HMGET', kt, 'max_inflight', 'inflight', 'dedup_ttl')
    if not t[1] then return {'NOTFOUND'}, false end
    q = {max = tonumber(t[1]), inflight = tonumber(t[2]), ttl = tonumber(t[3]), added = 0}
    quotas[kt] = q
  end
  for i = 1, n do
    local b = a + 2 + (i - 1) * W
    if ARGV[b + 2] == '1' and redis.call('EXISTS', KEYS[kexec + i - 1]) == 1 then
      return {'IDEXISTS', ARGV[b + 1]}, false
    end
  end

  local out = {'OK'}
  local added = 0
  for i = 1, n do
    local b = a + 2 + (i - 1) * W
    local id, kind, queue, prio, qp, payload = ARGV[b + 1], ARGV[b + 3], ARGV[b + 4], ARGV[b + 5], ARGV[b + 6], ARGV[b + 7]
    local dkey, ckey, climit, rkey = ARGV[b + 8], ARGV[b + 9], ARGV[b + 10], ARGV[b + 11]
    local maxatt, timeout, sched, run_at, ra = ARGV[b + 12], ARGV[b + 13], ARGV[b + 14], ARGV[b + 15], ARGV[b + 16]

    local code, data = nil, ''
    if dkey ~= '' then
      local v = redis.call('HGET', kd, dkey)
      if v then
        local sep = string.find(v, ':', 1, true)
        local xid = string.sub(v, sep + 1)
        if tonumber(string.sub(v, 1, sep - 1)) > now then
          local x = redis.call('HMGET', k_exec(xid), 'kind', 'payload')
          if x[1] then
            if x[1] == kind and x[2] == payload then
              if shown[xid] then
                code, data = 'd', xid
              else
                code, data = 'D', redis.call('HGETALL', k_exec(xid))
                shown[xid] = true
              end
            else
              code, data = 'R', xid
            end
          end
        end
        -- An expired mapping (or one without its execution, which this
        -- store never makes) is replaced below if the item is admitted.
      end
    end
    if not code and q.inflight + 1 > q.max then
      code, data = 'Q', q.inflight
    end
    if not code then
      code = 'N'
      local ek = KEYS[kexec + i - 1]
      local status = 'queued'
      if tonumber(run_at) > now then status = 'scheduled' end
      local h = {'id', id, 'tenant', tenant, 'kind', kind, 'queue', queue,
        'prio', prio, 'status', status, 'payload', payload, 'attempt', 0, 'maxatt', maxatt,
        'timeout', timeout, 'created', ARGV[a + 1], 'run_at', run_at, 'qp', qp, 'ra', ra, 'cancel', 0}
      local e = {id = id, tenant = tenant, queue = queue, kind = kind, status = status, qp = qp, ra = ra}
      if dkey ~= '' then h[#h + 1] = 'dkey'; h[#h + 1] = dkey end
      if ckey ~= '' then
        h[#h + 1] = 'ckey'; h[#h + 1] = ckey
        h[#h + 1] = 'climit'; h[#h + 1] = climit
        e.ckey = ckey
      end
      if rkey ~= '' then h[#h + 1] = 'rkey'; h[#h + 1] = rkey end
      if sched ~= '' then h[#h + 1] = 'schedule'; h[#h + 1] = sched end
      redis.call('HSET', ek, unpack(h))
      redis.call('ZADD', KEYS[2], 0, id)
      redis.call('ZADD', kl, 0, id)
      if status == 'queued' then
        enqueue(e)
      else
        redis.call('ZADD', KEYS[3], run_at, id)
      end
      if dkey ~= '' then
        local expires = istr(now + q.ttl)
        redis.call('HSET', kd, dkey, expires .. ':' .. id)
        redis.call('ZADD', KEYS[1], expires, dedup_member(tenant, dkey))
      end
      q.inflight = q.inflight + 1
      q.added = q.added + 1
      added = added + 1
    end
    out[#out + 1] = code
    out[#out + 1] = data
  end
  return out, added > 0
end

local res = each_call(4, admit_call)
for kt, q in pairs(quotas) do
  if q.added > 0 then redis.call('HINCRBY', kt, 'inflight', q.added) end
end
return res
