-- admit.lua: Store.Admit — one or more Admit calls (a group gathered by the
-- Store from concurrent callers), each one tenant's submissions, decided
-- one by one in order and written by this one script. For each item the
-- dedup lookup and compare, the quota and storage checks and increments, the execution
-- hash, its list entries, its queue entry (or schedule entry) and its dedup
-- mapping are written together: there is no moment at which a key maps to
-- an execution that is not there, or an execution exists without its queue
-- entry, for any reader or any crash to see (docs/design.md, The one rule). Calls are
-- independent: a refused call (unknown tenant, taken id) writes nothing and
-- does not affect the others. The writes of an admitted item are lib.lua's
-- admit_new, which fire_schedule.lua shares.
--
-- Group protocol (group.go, lib.lua each_call).
-- KEYS[1] dedupexp   KEYS[2] list   KEYS[3] sched   KEYS[4] readykinds
-- each call's keys: tenant:<T>, dedup:<T>, list:<T>, and exec:<id> of each
-- of its items
--   derived: the ready indexes of each item's tenant, queue and kind,
--   ck:<c>, schedlive:<s> of an item with a schedule, exec:<id> of an
--   execution a dedup key maps to, and qqueued:<c> or qsched:<c> and
--   queues:<T> of each item's queue (lib.lua, qs_enter).
-- each call's ARGV: tenant, now_us, n (items), and 17 per item:
--   id, explicit_id (0/1), kind, queue, priority, qp, payload, dedup_key,
--   concurrency_key, concurrency_limit, rate_key, max_attempts,
--   timeout_seconds, schedule, run_at_us, ra, trace_parent ('' = none)
-- Returns {version, reply_1, ..., reply_calls}; version is 0 when nothing
-- was written. A reply is {'NOTFOUND'} for an unknown tenant,
-- {'IDEXISTS', id} when an explicit id is taken (nothing written for that
-- call), else {'OK', code_1, data_1, ..., code_n, data_n} where code is
--   'N' new (data ''), 'D' deduplicated (data = HGETALL of the execution),
--   'd' deduplicated onto an execution whose HGETALL an earlier 'D' of this
--   answer carries (data = '<dedup hits>:<now_us>:<id>': only its dedup
--   hits change within one run, and this hit's count and time are these),
--   'R' key reused with another kind or payload (data = its execution id),
--   'Q' quota exceeded (data = inflight at that point),
--   'S' storage budget exceeded (data = the bytes stored at that point).

local W = 17 -- ARGV per item

-- Executions whose hash this run's answer already carries.
local shown = {}

local function admit_call(k, a)
  local kexec = k + 3
  local tenant, now, n = ARGV[a], ARGV[a + 1], tonumber(ARGV[a + 2])
  local q = quota(tenant)
  if not q then return {'NOTFOUND'}, false end
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
    local x = {id = ARGV[b + 1], tenant = tenant, kind = ARGV[b + 3], queue = ARGV[b + 4],
      prio = ARGV[b + 5], qp = ARGV[b + 6], payload = ARGV[b + 7], dkey = ARGV[b + 8],
      ckey = ARGV[b + 9], climit = ARGV[b + 10], rkey = ARGV[b + 11], maxatt = ARGV[b + 12],
      timeout = ARGV[b + 13], schedule = ARGV[b + 14], run_at = ARGV[b + 15], ra = ARGV[b + 16],
      trace = ARGV[b + 17]}

    local code, data = nil, ''
    local xid = dedup_live(tenant, x.dkey, now)
    if xid then
      local v = redis.call('HMGET', k_exec(xid), 'kind', 'payload')
      if v[1] then
        if v[1] == x.kind and v[2] == x.payload then
          -- The hit is counted in this step (only here: a new admission
          -- pays nothing for it).
          local hits = dedup_hit(xid, now)
          if shown[xid] then
            code, data = 'd', hits .. ':' .. now .. ':' .. xid
          else
            code, data = 'D', redis.call('HGETALL', k_exec(xid))
            shown[xid] = true
          end
        else
          code, data = 'R', xid
        end
      end
      -- A mapping without its execution (which this store never makes) is
      -- replaced below if the item is admitted.
    end
    if not code and q.inflight + 1 > q.max then
      code, data = 'Q', q.inflight
    end
    if not code and not q_fits(q, #x.payload) then
      code, data = 'S', q.stored + q.bytes
    end
    if not code then
      code = 'N'
      admit_new(x, nil, now, q)
      added = added + 1
    end
    out[#out + 1] = code
    out[#out + 1] = data
  end
  return out, added > 0
end

local res = each_call(4, admit_call)
quota_flush()
return res
