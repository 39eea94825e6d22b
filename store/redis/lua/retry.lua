-- retry.lua: Store.Retry — queue a failed execution again at now, keeping
-- its journal: attempt 0 (max_attempts applies afresh), error, result and
-- finished cleared. It takes a quota slot, checked here like an
-- admission's, and joins its schedule's live set again. A child is in
-- flight again: its spawn's count of ended children takes it back —
-- unless it was spawned with 'cancel' and its parent has ended or its
-- cancel was requested (I13): then it becomes cancelled at once (finished
-- now, its error and journal kept, no quota slot, still counted ended).
--
-- KEYS[1] exec:<id>
--   derived: tenant:<T>, done:<T>, the ready indexes, ck:<c>,
--   schedlive:<s>
-- ARGV[1] NS  ARGV[2] id  ARGV[3] tenant ('' = any)  ARGV[4] now_us
-- ARGV[5] ra (now as a queue member part)
-- Returns {'NOTFOUND'}, {'NOTFAILED', status}, {'QUOTA', inflight}
-- (nothing changed) or {'OK', version, HGETALL} (queued, or cancelled).

local e = owned(ARGV[2], ARGV[3])
if not e then return {'NOTFOUND'} end
if e.status ~= 'failed' then return {'NOTFAILED', e.status} end
if e.parent and e.ponend ~= 'abandon' then
  local p = load(e.parent, {'status', 'cancel'})
  if p and (not in_flight(p.status) or p.cancel == '1') then
    -- A child, so no retention entry, no schedule; failed, so out of
    -- every ready index and counted ended in its spawn: only the status.
    redis.call('HSET', KEYS[1], 'status', 'cancelled', 'finished', ARGV[4])
    return {'OK', changed(), redis.call('HGETALL', KEYS[1])}
  end
end
local q = redis.call('HMGET', k_tenant(e.tenant), 'max_inflight', 'inflight')
if not q[1] then return {'NOTFOUND'} end
if tonumber(q[2]) + 1 > tonumber(q[1]) then return {'QUOTA', q[2]} end
redis.call('ZREM', k_done(e.tenant), e.id)
if e.parent then redis.call('HINCRBY', k_spawns(e.parent), 'e:' .. e.pstep, -1) end
redis.call('HSET', KEYS[1], 'status', 'queued', 'attempt', 0, 'run_at', ARGV[4], 'ra', ARGV[5])
redis.call('HDEL', KEYS[1], 'error', 'result', 'finished', 'resume')
redis.call('HINCRBY', k_tenant(e.tenant), 'inflight', 1)
e.status, e.ra = 'queued', ARGV[5]
enqueue(e)
qs_enter(e, 'queued', ARGV[4])
local sname = redis.call('HGET', KEYS[1], 'schedule')
if sname then redis.call('SADD', k_schedlive(scoped(e.tenant, sname)), e.id) end
return {'OK', changed(), redis.call('HGETALL', KEYS[1])}
