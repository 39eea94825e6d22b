package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	"github.com/latch-run/latch/store"
)

// Schedules. Each is one hash, schedule:<s> with s = scoped(tenant, name):
// its settings, next_run_at, the latest tick fired, and the tick template
// (x_queue, x_maxatt, x_timeout, x_ckey, x_climit and qp: the execution a
// tick submits, built here with store.TickSubmission and
// store.NewExecution so that the defaults stay in one place). schedules:<T>
// names a tenant's schedules (all scores 0, so by name), nextrun holds the
// enabled ones by next_run_at (the scheduler's DueBy query), and
// schedlive:<s> the ids of the schedule's executions admitted in flight,
// which FireSchedule reads for overlap skip and the reads for Running
// (lua/lib.lua, sched_busy).

// PutSchedule implements store.Store (put_schedule.lua). Every is kept to
// the microsecond.
func (s *Store) PutSchedule(ctx context.Context, p *store.PutScheduleParams) (*store.PutScheduleResult, error) {
	sc := p.Schedule
	if err := store.ValidateSchedule(&sc); err != nil {
		return nil, err
	}
	if len(sc.Payload) == 0 {
		sc.Payload = json.RawMessage("{}")
	}
	t := now(p.Now)
	sub := store.TickSubmission(&sc, "")
	x := store.NewExecution("", sc.Tenant, &sub, t)
	climit := ""
	if x.ConcurrencyKey != "" {
		climit = strconv.Itoa(x.ConcurrencyLimit)
	}
	arr, err := s.run(ctx, "put schedule", scriptPutSchedule,
		[]string{s.k.schedule(scoped(sc.Tenant, sc.Name)), s.k.schedules(sc.Tenant), s.k.nextRun(), s.k.tenant(sc.Tenant)},
		s.k.ns, sc.Tenant, sc.Name, itoa(us(t)), itoa(us(sc.NextRunAt)), flag(sc.Enabled),
		sc.Cron, itoa(durUS(sc.Every)), sc.Timezone, max(p.MaxSchedules, 0),
		"kind", sc.Kind, "payload", string(sc.Payload), "queue", sc.Queue, "prio", sc.Priority,
		"maxatt", sc.MaxAttempts, "timeout", sc.TimeoutSeconds, "rkey", sc.RateKey,
		"overlap", string(sc.Overlap), "catchup", string(sc.Catchup),
		"qp", prioLex(x.Priority), "x_queue", x.Queue, "x_maxatt", x.MaxAttempts, "x_timeout", x.TimeoutSeconds,
		"x_ckey", x.ConcurrencyKey, "x_climit", climit)
	if err != nil {
		return nil, err
	}
	if err := status(arr, fmt.Sprintf("tenant %q", sc.Tenant)); err != nil {
		return nil, err
	}
	got := parseSchedule(asMap(at(arr, 2)))
	if err := s.setRunning(ctx, got); err != nil {
		return nil, err
	}
	return &store.PutScheduleResult{Schedule: got, Created: asInt(at(arr, 1)) == 1}, nil
}

// GetSchedule implements store.Store.
func (s *Store) GetSchedule(ctx context.Context, p *store.GetScheduleParams) (*store.Schedule, error) {
	got, err := s.readSchedules(ctx, []string{scoped(p.Tenant, p.Name)})
	if err != nil {
		return nil, err
	}
	if len(got) == 0 {
		return nil, fmt.Errorf("schedule %q: %w", p.Name, store.ErrNotFound)
	}
	return got[0], nil
}

// ListSchedules implements store.Store: by tenant then name from the
// tenants' name indexes, or with DueBy the enabled ones due by then,
// earliest first, from nextrun. Like List it reads without a snapshot: a
// schedule changed meanwhile is read as it is then, one deleted is left
// out.
func (s *Store) ListSchedules(ctx context.Context, p *store.ListSchedulesParams) ([]*store.Schedule, error) {
	limit := p.ListLimit()
	var scopes []string
	var err error
	if p.DueBy.IsZero() {
		scopes, err = s.scheduleNames(ctx, p.Tenant, p.After, limit)
	} else {
		scopes, err = s.dueSchedules(ctx, p.Tenant, us(p.DueBy), limit)
	}
	if err != nil {
		return nil, err
	}
	return s.readSchedules(ctx, scopes)
}

// scheduleNames returns up to limit schedules (scoped names) of tenant (""
// = every tenant) after after, by tenant then name.
func (s *Store) scheduleNames(ctx context.Context, tenant string, after store.ScheduleRef, limit int) ([]string, error) {
	scopes, err := s.namesByTenant(ctx, s.k.schedules, tenant, after.Tenant, after.Name, limit)
	if err != nil {
		return nil, fmt.Errorf("redis: list schedules: %w", err)
	}
	return scopes, nil
}

// namesByTenant returns up to limit scoped names of tenant ("" = every
// tenant of the namespace) after (afterTenant, afterName) in tenant then
// name order, from each tenant's name index (index(tenant): a sorted set
// of names, all scored 0, so in name order). Memory stays within limit:
// each tenant is asked for what the limit leaves, and the walk stops once
// it is reached.
func (s *Store) namesByTenant(ctx context.Context, index func(tenant string) string, tenant, afterTenant, afterName string, limit int) ([]string, error) {
	tenants := []string{tenant}
	if tenant == "" {
		var err error
		if tenants, err = s.rdb.SMembers(ctx, s.k.tenants()).Result(); err != nil {
			return nil, interpretError(err)
		}
		slices.Sort(tenants)
	}
	tenants = slices.DeleteFunc(tenants, func(t string) bool { return t < afterTenant })
	// A pipeline per batch of tenants, each asked for what the limit leaves.
	const batch = 64
	var scopes []string
	for lo := 0; lo < len(tenants) && len(scopes) < limit; lo += batch {
		part := tenants[lo:min(lo+batch, len(tenants))]
		cmds := make([]*goredis.StringSliceCmd, len(part))
		_, err := s.rdb.Pipelined(ctx, func(pipe goredis.Pipeliner) error {
			for i, t := range part {
				// The page's tenant starts after its name.
				start := "-"
				if t == afterTenant && afterName != "" {
					start = "(" + afterName
				}
				cmds[i] = pipe.ZRangeArgs(ctx, goredis.ZRangeArgs{Key: index(t), Start: start, Stop: "+",
					ByLex: true, Count: int64(limit - len(scopes))})
			}
			return nil
		})
		if err != nil {
			return nil, interpretError(err)
		}
		for i, c := range cmds {
			for _, n := range c.Val() {
				if len(scopes) < limit {
					scopes = append(scopes, scoped(part[i], n))
				}
			}
		}
	}
	return scopes, nil
}

// dueSchedules returns up to limit enabled schedules (scoped names) of
// tenant ("" = every tenant) whose next_run_at is not after dueBy,
// earliest first.
func (s *Store) dueSchedules(ctx context.Context, tenant string, dueBy int64, limit int) ([]string, error) {
	prefix := ""
	if tenant != "" {
		prefix = scoped(tenant, "")
	}
	chunk := limit
	if tenant != "" {
		chunk = max(chunk, 200)
	}
	var scopes []string
	known := map[string]bool{} // tenant -> disabled, read once per call
	for offset := int64(0); len(scopes) < limit; offset += int64(chunk) {
		ms, err := s.rdb.ZRangeArgs(ctx, goredis.ZRangeArgs{
			Key: s.k.nextRun(), Start: "-inf", Stop: itoa(dueBy), ByScore: true, Offset: offset, Count: int64(chunk),
		}).Result()
		if err != nil {
			return nil, fmt.Errorf("redis: list due schedules: %w", interpretError(err))
		}
		disabled, err := s.disabledTenants(ctx, ms, known)
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			if strings.HasPrefix(m, prefix) && len(scopes) < limit && !disabled[scopeTenant(m)] {
				scopes = append(scopes, m)
			}
		}
		if len(ms) < chunk {
			break
		}
	}
	return scopes, nil
}

// disabledTenants reads the disabled flag of the tenants of scopes (scoped
// names) not in known yet, adds them to it and returns it: a disabled
// tenant's schedules are not due (they do not tick).
func (s *Store) disabledTenants(ctx context.Context, scopes []string, known map[string]bool) (map[string]bool, error) {
	var ask []string
	for _, m := range scopes {
		if t := scopeTenant(m); t != "" {
			if _, ok := known[t]; !ok {
				known[t] = false
				ask = append(ask, t)
			}
		}
	}
	if len(ask) == 0 {
		return known, nil
	}
	cmds := make([]*goredis.StringCmd, len(ask))
	_, err := s.rdb.Pipelined(ctx, func(pipe goredis.Pipeliner) error {
		for i, t := range ask {
			cmds[i] = pipe.HGet(ctx, s.k.tenant(t), "disabled")
		}
		return nil
	})
	if err != nil && !errors.Is(err, goredis.Nil) {
		return nil, fmt.Errorf("redis: list due schedules: %w", err)
	}
	for i, t := range ask {
		known[t] = cmds[i].Val() == "1"
	}
	return known, nil
}

// scopeTenant is the tenant of a scoped name (scoped), "" if it is not one.
func scopeTenant(scope string) string {
	n, rest, ok := strings.Cut(scope, ":")
	size, err := strconv.Atoi(n)
	if !ok || err != nil || size < 0 || size > len(rest) {
		return ""
	}
	return rest[:size]
}

// readSchedules reads the schedules named by scopes (scoped names), in
// that order, leaving out those that do not exist, with Running set.
func (s *Store) readSchedules(ctx context.Context, scopes []string) ([]*store.Schedule, error) {
	if len(scopes) == 0 {
		return nil, nil
	}
	cmds := make([]*goredis.MapStringStringCmd, len(scopes))
	_, err := s.rdb.Pipelined(ctx, func(pipe goredis.Pipeliner) error {
		for i, sc := range scopes {
			cmds[i] = pipe.HGetAll(ctx, s.k.schedule(sc))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("redis: read schedules: %w", interpretError(err))
	}
	out := make([]*store.Schedule, 0, len(scopes))
	for _, c := range cmds {
		if m := c.Val(); len(m) > 0 {
			out = append(out, parseSchedule(m))
		}
	}
	if err := s.setRunning(ctx, out...); err != nil {
		return nil, err
	}
	return out, nil
}

// setRunning sets each schedule's Running: whether an execution of the
// schedule runs. Every execution of a schedule in flight is in the
// schedule's live set (admit_new), so the members' statuses tell.
func (s *Store) setRunning(ctx context.Context, scs ...*store.Schedule) error {
	members := make([]*goredis.StringSliceCmd, len(scs))
	_, err := s.rdb.Pipelined(ctx, func(pipe goredis.Pipeliner) error {
		for i, sc := range scs {
			members[i] = pipe.SMembers(ctx, s.k.scheduleLive(scoped(sc.Tenant, sc.Name)))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("redis: read schedules: %w", interpretError(err))
	}
	statuses := make([][]*goredis.StringCmd, len(scs))
	_, err = s.rdb.Pipelined(ctx, func(pipe goredis.Pipeliner) error {
		for i := range scs {
			for _, id := range members[i].Val() {
				statuses[i] = append(statuses[i], pipe.HGet(ctx, s.k.exec(id), "status"))
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, goredis.Nil) {
		return fmt.Errorf("redis: read schedules: %w", interpretError(err))
	}
	for i, sc := range scs {
		for _, c := range statuses[i] {
			switch err := c.Err(); {
			case errors.Is(err, goredis.Nil): // deleted or pruned since it ended
			case err != nil:
				return fmt.Errorf("redis: read schedules: %w", interpretError(err))
			case c.Val() == string(store.StatusRunning):
				sc.Running = true
			}
		}
	}
	return nil
}

// DeleteSchedule implements store.Store (delete_schedule.lua).
func (s *Store) DeleteSchedule(ctx context.Context, p *store.DeleteScheduleParams) error {
	sc := scoped(p.Tenant, p.Name)
	arr, err := s.run(ctx, "delete schedule", scriptDeleteSchedule,
		[]string{s.k.schedule(sc), s.k.schedules(p.Tenant), s.k.nextRun(), s.k.scheduleLive(sc)},
		s.k.ns, p.Tenant, p.Name)
	if err != nil {
		return err
	}
	return status(arr, fmt.Sprintf("schedule %q", p.Name))
}

// SetScheduleEnabled implements store.Store (set_schedule_enabled.lua).
func (s *Store) SetScheduleEnabled(ctx context.Context, p *store.SetScheduleEnabledParams) (*store.Schedule, error) {
	sc := scoped(p.Tenant, p.Name)
	arr, err := s.run(ctx, "set schedule enabled", scriptSetSchedule,
		[]string{s.k.schedule(sc), s.k.nextRun()},
		s.k.ns, sc, flag(p.Enabled), itoa(us(p.NextRunAt)), itoa(us(now(p.Now))),
		p.Cron, itoa(durUS(p.Every)), p.Timezone)
	if err != nil {
		return nil, err
	}
	if err := status(arr, fmt.Sprintf("schedule %q", p.Name)); err != nil {
		return nil, err
	}
	got := parseSchedule(asMap(at(arr, 1)))
	if err := s.setRunning(ctx, got); err != nil {
		return nil, err
	}
	return got, nil
}

// FireSchedule implements store.Store with one script (fire_schedule.lua):
// the compare and set of next_run_at, the dedup lookup, the overlap check
// (the schedule's live set, each member's status read in the script), the
// admission under the tenant's quota and the schedule's record of the tick
// are one step, so two servers firing one tick, or ticks of one schedule,
// never both pass a check the other's write would have failed (I6).
func (s *Store) FireSchedule(ctx context.Context, p *store.FireScheduleParams) (*store.FireScheduleResult, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	nowUS := us(now(p.Now))
	expected, next := "", ""
	if !p.Trigger {
		expected, next = itoa(us(p.Expected)), itoa(us(p.Next))
	}
	sc := scoped(p.Tenant, p.Name)
	id := uuid.Must(uuid.NewV7()).String()
	arr, err := s.run(ctx, "fire schedule", scriptFireSchedule,
		[]string{s.k.schedule(sc), s.k.nextRun(), s.k.tenant(p.Tenant), s.k.dedup(p.Tenant), s.k.exec(id),
			s.k.scheduleLive(sc), s.k.listTenant(p.Tenant), s.k.list(), s.k.dedupExp(), s.k.sched(), s.k.readyKinds()},
		s.k.ns, p.Tenant, p.Name, itoa(us(p.Tick)), flag(p.Trigger), expected, next, flag(p.Drop),
		itoa(nowUS), timeLex(nowUS), id, p.DedupKey())
	if err != nil {
		return nil, err
	}
	if err := status(arr, fmt.Sprintf("schedule %q", p.Name)); err != nil {
		return nil, err
	}
	if len(arr) != 5 {
		return nil, fmt.Errorf("redis: fire schedule: unexpected reply %v", arr)
	}
	s.note.ack(asInt(arr[1]))
	res := &store.FireScheduleResult{Advanced: asInt(arr[4]) == 1}
	switch code := asString(arr[2]); code {
	case "":
	case "N", "S", "D":
		res.Execution, res.Deduplicated = parseExecution(asMap(arr[3])), code == "D"
	default:
		return nil, fmt.Errorf("redis: fire schedule: unexpected code %q", code)
	}
	return s.feed.Fired(res, nil)
}

// parseSchedule reads a schedule hash (see put_schedule.lua).
func parseSchedule(m map[string]string) *store.Schedule {
	sc := &store.Schedule{
		Tenant:          m["tenant"],
		Name:            m["name"],
		Cron:            m["cron"],
		Every:           fromDurUS(hashInt(m, "every")),
		Timezone:        m["tz"],
		Kind:            m["kind"],
		Payload:         json.RawMessage(m["payload"]),
		Queue:           m["queue"],
		Priority:        int(hashInt(m, "prio")),
		MaxAttempts:     int(hashInt(m, "maxatt")),
		TimeoutSeconds:  int(hashInt(m, "timeout")),
		RateKey:         m["rkey"],
		Overlap:         store.Overlap(m["overlap"]),
		Catchup:         store.Catchup(m["catchup"]),
		Enabled:         m["enabled"] == "1",
		NextRunAt:       fromUS(hashInt(m, "next")),
		LastExecutionID: m["last_exec"],
		CreatedAt:       fromUS(hashInt(m, "created")),
		UpdatedAt:       fromUS(hashInt(m, "updated")),
	}
	if _, ok := m["last_run"]; ok {
		t := fromUS(hashInt(m, "last_run"))
		sc.LastRunAt = &t
	}
	return sc
}
