-- suspend.lua: Store.Suspend — end a running attempt to sleep or to wait
-- for a signal, fenced by the lease token and its expiry (I5). The lease
-- and the concurrency-key slot end here; the quota slot is kept. The
-- attempt's run ends suspended, whatever follows, or cancelled (lib.lua,
-- run_end).
--
--   cancel requested     cancelled, as Complete would end it
--   step recorded        nothing recorded; queued again at once (resume)
--   sleep not after now  the step recorded (null); queued again at once
--   wait, a signal of    the oldest one consumed and its data recorded as
--   that name buffered   the step; queued again at once
--   fan-in wait, count   the children as they are recorded as the step
--   of the spawn's       (lib.lua, fanin_step); queued again at once
--   children ended
--   wait for an event,   the oldest consumed (lib.lua, ev_find and
--   a retained match     ev_consume): its step recorded (ev_step) and
--                        counted in the execution's and the tenant's
--                        stored; queued again at once
--   else                 suspended: wake_at = until (a sleep) or the wait's
--                        timeout ('' = none), waiting = the signal (a fan-in
--                        wait's 'children:' .. spawn step, with fcount and
--                        fbytes; a wait for an event's 'event:' .. name,
--                        with esince, ekey and fbytes, in its name's
--                        waiters), sstep = the step; in the wake set while
--                        it has a wake_at
--
-- A fan-in wait on a step that is no spawn of this execution, or for more
-- children than the spawn has, is refused when the step is new.
--
-- A signal, a wake, a child's end or a publish ends the suspension
-- (signal.lua, wake.lua, lib.lua's child_end, publish.lua). This is
-- one script, and so are they: which of them ends a wait is decided in one
-- step, once (I11).
--
-- KEYS[1] exec:<id>   KEYS[2] steps:<id>   KEYS[3] wake
--   derived: running, the ready indexes, tenant:<T>, done:<T>, ck:<c>,
--   ckparkg:<c>, ckpark:<c>, sigbuf:<scoped(id, signal)>, signames:<id>,
--   runs:<id>, spawns:<id>, exec:<id> of the spawn's children, kids:<id>,
--   the event's indexes, event:<id> of its events, evdone:<id> and its
--   waiters (evwait:<c> or evwaitk:<ck>), and what a cancel's end of its
--   children derives (lib.lua, parent_end)
-- ARGV[1] NS  ARGV[2] id  ARGV[3] tenant ('' = any)  ARGV[4] token
-- ARGV[5] now_us  ARGV[6] ra (now as a queue member part)  ARGV[7] step
-- ARGV[8] until_us ('' for a wait)  ARGV[9] signal ('' for a sleep)
-- ARGV[10] the wait's timeout as wake_at_us ('' = none)
-- ARGV[11] the journal's bound (store.MaxSteps)  ARGV[12] its bound of
-- bytes (store.MaxJournalBytes)  ARGV[13] the size of a timed-out wait's
-- result (store.TimedOut), the largest outcome a Wake records
-- ARGV[14] the spawn step of a fan-in wait ('' = none)  ARGV[15] its count
-- (0 = all)  ARGV[16] the event of a wait for an event ('' = none)
-- ARGV[17] its key ('' = any)  ARGV[18] its since_us ('' = the
-- execution's created)
-- Returns {'LEASELOST'}, {'TOOMANYSTEPS', steps} (the step is new and the
-- journal holds its bound: its outcome, now or at the suspension's end,
-- would pass it; nothing changed), {'JOURNALTOOLARGE', bytes} (the step is
-- new and its outcome — the kept signal it would consume, else a timed-out
-- wait's — would make the journal pass its bound of bytes; nothing
-- changed), {'STORAGE', bytes} (the step a retained event it would
-- consume records would pass the tenant's storage budget; nothing
-- changed), {'INVALID', why} (a fan-in wait refused; nothing changed) or
-- {'OK', version, HGETALL, family} (the ids of the other executions of
-- its family it changed, lib.lua).

local now, ra, step, untl, sig = ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9]
local cstep, ccount = ARGV[14], tonumber(ARGV[15])
local ev, ekey, since = ARGV[16], ARGV[17], ARGV[18]
local e = fence(ARGV[2], ARGV[3], ARGV[4], now)
if not e then return {'LEASELOST'} end
if ev ~= '' and since == '' then since = redis.call('HGET', KEYS[1], 'created') end
local ended, total = 0, 0
if e.cancel ~= '1' and redis.call('HEXISTS', KEYS[2], step) == 0 then
  local n = redis.call('HLEN', KEYS[2])
  if n >= tonumber(ARGV[11]) then return {'TOOMANYSTEPS', n} end
  if cstep ~= '' then
    local c = redis.call('HMGET', k_spawns(e.id), 't:' .. cstep, 'e:' .. cstep)
    if not c[1] then return {'INVALID', 'step ' .. cstep .. ' is no spawn of this execution'} end
    total, ended = tonumber(c[1]), tonumber(c[2] or 0)
    if ccount > total then
      return {'INVALID', 'count ' .. ccount .. ' is more than the ' .. total .. ' children of spawn ' .. cstep}
    end
  end
end
if e.cancel ~= '1' and cstep == '' and redis.call('HEXISTS', KEYS[2], step) == 0 then
  local outcome = tonumber(ARGV[13])
  if sig ~= '' then
    local kept = redis.call('LINDEX', k_sigbuf(scoped(e.id, sig)), 0)
    if kept then outcome = #kept end
  end
  if not journal_fits(e.id, step, outcome, ARGV[12]) then
    return {'JOURNALTOOLARGE', journal_size(e.id)}
  end
end
-- A wait for an event (never with a sleep, signal or fan-in wait) that a
-- retained event ends at once: the event and the step it records
-- (ev_step) are found before anything is written, so that a copy past the
-- storage budget is refused with nothing changed (the lease kept, the
-- event not consumed).
local eid, eresult = nil, nil
if e.cancel ~= '1' and ev ~= '' and redis.call('HEXISTS', KEYS[2], step) == 0 then
  eid = ev_find(e.tenant, e.id, ev, ekey, since, now)
  if eid then
    local v = redis.call('HMGET', k_event(eid), 'step', 'lean')
    eresult = ev_step(e, step, v[1], v[2], ARGV[12])
    local b = redis.call('HMGET', k_tenant(e.tenant), 'max_bytes', 'stored')
    if not bytes_fit(b[1], b[2], #eresult) then return {'STORAGE', #eresult} end
  end
end
if e.cancel == '1' then run_end(e, now, 'cancelled') else run_end(e, now, 'suspended') end
if e.cancel == '1' then
  finish(e, 'cancelled', now, nil, '')
elseif redis.call('HEXISTS', KEYS[2], step) == 1 then
  resume(e, now, ra)
elseif untl ~= '' and tonumber(untl) <= tonumber(now) then
  record(e, step, 'null', '', now)
  resume(e, now, ra)
elseif cstep ~= '' and wait_holds(ended, total, ccount) then
  local result = fanin_step(e.id, cstep, step, false, ARGV[12])
  record(e, step, result, '', now)
  charge(e, #result, true)
  resume(e, now, ra)
elseif eid then
  ev_consume(e, step, eid, eresult, now)
else
  local data = nil
  if sig ~= '' then data = sig_pop(e.id, sig) end
  if data then
    record(e, step, data, '', now)
    resume(e, now, ra)
  else
    leave(e)
    local wake_at = untl
    if sig ~= '' or cstep ~= '' or ev ~= '' then wake_at = ARGV[10] end
    redis.call('HSET', KEYS[1], 'status', 'suspended', 'sstep', step)
    qs_enter(e, 'suspended')
    redis.call('HDEL', KEYS[1], 'token', 'worker', 'lease_exp', 'resume')
    if sig ~= '' then redis.call('HSET', KEYS[1], 'waiting', sig) end
    if cstep ~= '' then
      redis.call('HSET', KEYS[1], 'waiting', CHILDREN_WAIT .. cstep, 'fcount', ccount, 'fbytes', ARGV[12])
    end
    if ev ~= '' then
      redis.call('HSET', KEYS[1], 'waiting', EVENT_WAIT .. ev, 'esince', since, 'fbytes', ARGV[12])
      if ekey ~= '' then
        redis.call('HSET', KEYS[1], 'ekey', ekey)
        redis.call('ZADD', k_evwaitk(scoped(e.tenant, scoped(ev, ekey))), since, e.id)
      else
        redis.call('ZADD', k_evwait(scoped(e.tenant, ev)), since, e.id)
      end
    end
    if wake_at ~= '' then
      redis.call('HSET', KEYS[1], 'wake_at', wake_at)
      redis.call('ZADD', KEYS[3], wake_at, e.id)
    end
    if e.ckey then ck_settle(ck_of(e)) end
  end
end
return {'OK', changed(), redis.call('HGETALL', KEYS[1]), family}
