package redis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/latch-run/latch/store"
)

// checkConsistency reads the whole namespace and reports every way its
// indexes, counters and dedup mappings disagree with the execution hashes
// (see lua/lib.lua for what each structure must hold). Call it only while
// nothing changes the namespace.
func (s *Store) checkConsistency(ctx context.Context) ([]string, error) {
	var bad []string
	report := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	r := s.rdb

	// Every key of the namespace, by kind.
	all := map[string]bool{}
	if err := s.scanEach(ctx, s.k.pattern(), func(key string) error {
		all[key] = true
		return nil
	}); err != nil {
		return nil, err
	}
	// hashes reads every hash whose key is prefix followed by a name, by name.
	hashes := func(prefix string) (map[string]map[string]string, error) {
		out := map[string]map[string]string{}
		for key := range all {
			if name, ok := strings.CutPrefix(key, prefix); ok {
				m, err := r.HGetAll(ctx, key).Result()
				if err != nil {
					return nil, err
				}
				out[name] = m
			}
		}
		return out, nil
	}
	execs, err := hashes(s.k.exec(""))
	if err != nil {
		return nil, err
	}
	zset := func(key string) (map[string]float64, error) {
		zs, err := r.ZRangeWithScores(ctx, key, 0, -1).Result()
		if err != nil {
			return nil, err
		}
		m := make(map[string]float64, len(zs))
		for _, z := range zs {
			m[z.Member.(string)] = z.Score
		}
		return m, nil
	}
	num := func(s string) float64 {
		f, _ := strconv.ParseFloat(s, 64)
		return f
	}
	// Expected contents of every sorted set, built from the hashes.
	type entry struct{ score float64 }
	want := map[string]map[string]entry{}
	expect := func(key, member string, score float64) {
		if want[key] == nil {
			want[key] = map[string]entry{}
		}
		want[key][member] = entry{score}
	}
	inflight := map[string]int{}
	stored := map[string]int64{} // tenant -> the bytes its executions count
	laned := map[string]int{}    // tenant -> members of its lanes by kind
	readyKinds := map[string]bool{}
	// Per concurrency key (scoped): its running executions, and per group
	// (concGroup) its ready ones.
	ckRun, ckReady := map[string]int{}, map[string]map[string]int{}
	live := map[string][]string{}      // schedlive key -> ids that must be members
	suspended := map[string][]string{} // qsusp key -> its members
	queues := map[string][]string{}    // tenant -> queues that queues:<T> must name
	for id, e := range execs {
		t := e["tenant"]
		b, _ := strconv.ParseInt(e["bytes"], 10, 64)
		stored[t] += b
		if sc := e["schedule"]; sc != "" && store.Status(e["status"]).Inflight() {
			k := s.k.scheduleLive(scoped(t, sc))
			live[k] = append(live[k], id)
		}
		if e["id"] != id {
			report("exec %s: id field %q", id, e["id"])
		}
		expect(s.k.list(), id, 0)
		expect(s.k.listTenant(t), id, 0)
		member := e["qp"] + e["ra"] + id
		if e["ra"] != timeLex(int64(num(e["run_at"]))) {
			report("exec %s: ra %s does not encode run_at %s", id, e["ra"], e["run_at"])
		}
		queuedLike := e["status"] == "queued" || (e["status"] == "scheduled" && e["due"] == "1")
		// The queue statistics (lib.lua, qs_enter).
		qc := scoped(t, e["queue"])
		switch e["status"] {
		case "queued":
			expect(s.k.qQueued(qc), id, num(e["run_at"]))
		case "scheduled":
			expect(s.k.qSched(qc), id, num(e["run_at"]))
		case "suspended":
			suspended[s.k.qSusp(qc)] = append(suspended[s.k.qSusp(qc)], id)
		}
		if store.Status(e["status"]).Inflight() && e["status"] != "running" {
			queues[t] = append(queues[t], e["queue"])
		}
		if e["due"] != "" && e["status"] != "scheduled" {
			report("exec %s: due while %s", id, e["status"])
		}
		switch {
		case queuedLike:
			inflight[t]++
			if e["status"] == "scheduled" {
				expect(s.k.due(), id, num(e["run_at"]))
			}
			if e["parked"] == "1" {
				expect(s.k.concPark(scoped(t, e["ckey"])), concGroup(e["kind"], e["queue"], e["climit"], e["rkey"])+member, 0)
			} else {
				for _, k := range []string{s.k.readyTenant(t), s.k.readyQueue(e["queue"]), s.k.readyKind(e["kind"]),
					s.k.readyTenantKind(t, e["kind"])} {
					expect(k, member, 0)
				}
				readyKinds[e["kind"]] = true
				laned[t]++
				if c := scoped(t, e["ckey"]); e["ckey"] != "" {
					if ckReady[c] == nil {
						ckReady[c] = map[string]int{}
					}
					ckReady[c][concGroup(e["kind"], e["queue"], e["climit"], e["rkey"])]++
				}
			}
		case e["status"] == "scheduled":
			inflight[t]++
			expect(s.k.sched(), id, num(e["run_at"]))
		case e["status"] == "running":
			inflight[t]++
			expect(s.k.running(), id, num(e["lease_exp"]))
			if e["token"] == "" {
				report("exec %s: running without a token", id)
			}
			if e["ckey"] != "" {
				ckRun[scoped(t, e["ckey"])]++
				expect(s.k.concRun(scoped(t, e["ckey"])), id, 0)
			}
		case e["status"] == "suspended":
			inflight[t]++
			if e["wake_at"] != "" {
				expect(s.k.wake(), id, num(e["wake_at"]))
			} else if e["waiting"] == "" {
				report("exec %s: a suspended sleep without wake_at", id)
			}
			if e["sstep"] == "" {
				report("exec %s: suspended without its step", id)
			}
			for _, f := range []string{"token", "worker", "lease_exp", "resume"} {
				if _, ok := e[f]; ok {
					report("exec %s: suspended with field %s", id, f)
				}
			}
		case store.Status(e["status"]).Terminal():
			if e["parent"] == "" { // a child goes with its parent, never alone
				expect(s.k.done(t), id, num(e["finished"]))
			}
			for _, f := range []string{"token", "worker", "lease_exp", "parked", "due", "resume"} {
				if _, ok := e[f]; ok {
					report("exec %s: terminal with field %s", id, f)
				}
			}
		default:
			report("exec %s: status %q", id, e["status"])
		}
		if e["parked"] != "" && !queuedLike {
			report("exec %s: parked while %s", id, e["status"])
		}
		if e["status"] != "suspended" {
			for _, f := range []string{"wake_at", "waiting", "sstep"} {
				if _, ok := e[f]; ok {
					report("exec %s: %s with field %s", id, e["status"], f)
				}
			}
		}
		if (e["journal"] == "1") != all[s.k.steps(id)] {
			report("exec %s: journal flag %q, steps key present %v", id, e["journal"], all[s.k.steps(id)])
		}
	}
	bad = append(bad, s.checkFlows(ctx, all, execs)...)
	bad = append(bad, s.checkChildren(ctx, all, execs)...)
	bad = append(bad, s.checkRuns(ctx, all, execs)...)
	evBad, evWant, evBytes := s.checkEvents(ctx, all, execs)
	bad = append(bad, evBad...)
	for key, ms := range evWant {
		for m, score := range ms {
			expect(key, m, score)
		}
	}
	for t, b := range evBytes {
		stored[t] += b // events count in the storage budget too
	}
	// Schedules: each in its tenant's name index, and in nextrun exactly
	// while enabled, scored by its next run; each index entry names one.
	schedules, err := hashes(s.k.schedule(""))
	if err != nil {
		return nil, err
	}
	for sc, m := range schedules {
		if scoped(m["tenant"], m["name"]) != sc {
			report("schedule %s: tenant %q name %q", sc, m["tenant"], m["name"])
		}
		expect(s.k.schedules(m["tenant"]), m["name"], 0)
		if m["enabled"] == "1" {
			expect(s.k.nextRun(), sc, num(m["next"]))
		}
	}
	// Rate limits: named after their tenant and key, with an interval.
	limits, err := hashes(s.k.rateLimit(""))
	if err != nil {
		return nil, err
	}
	for c, m := range limits {
		if scoped(m["tenant"], m["key"]) != c || m["iv"] == "" {
			report("rate limit %s: tenant %q key %q interval %q", c, m["tenant"], m["key"], m["iv"])
		}
	}
	// Every execution of a schedule in flight is in the schedule's live set
	// (ended or missing members are allowed: they go lazily).
	for key, ids := range live {
		members, err := r.SMembers(ctx, key).Result()
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			if !slices.Contains(members, id) {
				report("%s: missing %s, an execution of the schedule in flight", key, id)
			}
		}
	}
	// The suspended sets of the queue statistics hold exactly the
	// suspended executions; a tenant's queues name every queue they need.
	for key := range all {
		if strings.HasPrefix(key, s.k.qSusp("")) && suspended[key] == nil {
			suspended[key] = []string{}
		}
	}
	for key, ids := range suspended {
		members, err := r.SMembers(ctx, key).Result()
		if err != nil {
			return nil, err
		}
		slices.Sort(ids)
		slices.Sort(members)
		if !slices.Equal(ids, members) {
			report("%s: members %q, want %q", key, members, ids)
		}
	}
	for t, qs := range queues {
		for _, q := range qs {
			if ok, err := r.SIsMember(ctx, s.k.queues(t), q).Result(); err != nil || !ok {
				report("%s: missing queue %q, which has executions in flight (%v)", s.k.queues(t), q, err)
			}
		}
	}
	// Compare every sorted set of the namespace with its expectation.
	zsetKeys := []string{s.k.list(), s.k.sched(), s.k.due(), s.k.running(), s.k.nextRun(), s.k.wake()}
	zsetPrefixes := []string{s.k.listTenant(""), s.k.readyTenant(""), s.k.readyQueue(""), s.k.readyKind(""),
		strings.TrimSuffix(s.k.readyTenantKind("", ""), scoped("", "")),
		s.k.concPark(""), s.k.concParkOld(""), s.k.concRun(""), s.k.done(""), s.k.schedules(""), s.k.qQueued(""), s.k.qSched("")}
	zsetPrefixes = append(zsetPrefixes, s.eventPrefixes()...)
	for key := range all {
		isZ := slices.Contains(zsetKeys, key)
		for _, p := range zsetPrefixes {
			if strings.HasPrefix(key, p) {
				isZ = true
			}
		}
		if isZ && want[key] == nil {
			want[key] = map[string]entry{} // must be empty, so must not exist
		}
	}
	for key, members := range want {
		got, err := zset(key)
		if err != nil {
			return nil, err
		}
		if len(members) == 0 && all[key] {
			report("%s exists but should be empty", key)
		}
		for m, w := range members {
			g, ok := got[m]
			if !ok {
				report("%s: missing %s", key, m)
			} else if g != w.score {
				report("%s: %s has score %v, want %v", key, m, g, w.score)
			}
		}
		for m := range got {
			if _, ok := members[m]; !ok {
				report("%s: stray member %s", key, m)
			}
		}
	}
	// turns holds exactly the enabled tenants with a non-empty ready:t
	// index (its scores are turns, which only claims decide).
	turns, err := r.ZRange(ctx, s.k.turns(), 0, -1).Result()
	if err != nil {
		return nil, err
	}
	disabled := func(t string) bool {
		v, err := r.HGet(ctx, s.k.tenant(t), "disabled").Result()
		return err == nil && v == "1"
	}
	for _, t := range turns {
		if len(want[s.k.readyTenant(t)]) == 0 {
			report("%s: tenant %s has no ready execution", s.k.turns(), t)
		}
		if disabled(t) {
			report("%s: tenant %s is disabled", s.k.turns(), t)
		}
	}
	for key, members := range want {
		if t, ok := strings.CutPrefix(key, s.k.readyTenant("")); ok && len(members) > 0 && !slices.Contains(turns, t) && !disabled(t) {
			report("%s: missing tenant %s, which has ready executions", s.k.turns(), t)
		}
	}
	kinds, err := r.SMembers(ctx, s.k.readyKinds()).Result()
	if err != nil {
		return nil, err
	}
	for _, kind := range kinds {
		delete(readyKinds, kind)
	}
	for kind := range readyKinds {
		report("kind %s has ready executions but is not in readykinds", kind)
	}
	// Counters.
	tenants, err := r.SMembers(ctx, s.k.tenants()).Result()
	if err != nil {
		return nil, err
	}
	for _, t := range tenants {
		v, err := r.HGet(ctx, s.k.tenant(t), "inflight").Int()
		if err != nil {
			return nil, err
		}
		if v != inflight[t] {
			report("tenant %s: inflight %d, but %d executions in flight", t, v, inflight[t])
		}
		// The storage budget's count (lib.lua, charge): absent is 0.
		b, err := r.HGet(ctx, s.k.tenant(t), "stored").Int64()
		if err != nil && !errors.Is(err, goredis.Nil) {
			return nil, err
		}
		if b != stored[t] {
			report("tenant %s: stored %d bytes, but its executions and events count %d", t, b, stored[t])
		}
		l, err := r.HGet(ctx, s.k.tenant(t), "laned").Int()
		if err != nil && !errors.Is(err, goredis.Nil) {
			return nil, err
		}
		if l != laned[t] {
			report("tenant %s: laned %d, but %d executions in its lanes", t, l, laned[t])
		}
	}
	ckPrefix := s.k.conc("")
	for key := range all {
		c, ok := strings.CutPrefix(key, ckPrefix)
		if !ok {
			continue
		}
		h, err := r.HGetAll(ctx, key).Result()
		if err != nil {
			return nil, err
		}
		run, _ := strconv.Atoi(h["run"])
		if run != ckRun[c] {
			report("%s: run %d, want %d", key, run, ckRun[c])
		}
		ready := map[string]int{}
		for f, v := range h {
			g, ok := strings.CutPrefix(f, "r:")
			if f == "run" {
				continue
			} else if !ok {
				report("%s: stray field %s", key, f)
				continue
			}
			ready[g], _ = strconv.Atoi(v)
			if ready[g] != ckReady[c][g] || ready[g] <= 0 {
				report("%s: group %s: ready %s, want %d (and a field only while above 0)", key, g, v, ckReady[c][g])
			}
		}
		for g, n := range ckReady[c] {
			if _, ok := h["r:"+g]; !ok {
				report("%s: group %s: no ready count, want %d", key, g, n)
			}
		}
		// The invariant, per group: its head (the first of the group's
		// range of the park, all scores 0) stays parked only while run +
		// the group's ready count reaches its limit.
		park, err := r.ZRange(ctx, s.k.concPark(c), 0, -1).Result()
		if err != nil {
			return nil, err
		}
		if run == 0 && len(ready) == 0 && len(park) == 0 {
			report("%s: left behind with nothing counted", key)
		}
		heads := map[string]bool{}
		for _, pm := range park {
			g, ok := parkGroup(pm)
			if !ok || len(pm) <= len(g)+memberIDOffset {
				report("%s: park member %q names no group", key, pm)
				continue
			}
			if heads[g] {
				continue
			}
			heads[g] = true
			head := execs[pm[len(g)+memberIDOffset:]]
			if limit, _ := strconv.Atoi(head["climit"]); run+ready[g] < limit {
				report("%s: %s stays parked with run %d + ready %d of its group below its limit %d", key, pm, run, ready[g], limit)
			}
		}
	}
	for c, n := range ckRun {
		if !all[s.k.conc(c)] && n > 0 {
			report("concurrency key %s: %d running but no counter", c, n)
		}
	}
	for c, groups := range ckReady {
		if !all[s.k.conc(c)] {
			report("concurrency key %s: ready %v but no counter", c, groups)
		}
	}
	// Dedup mappings: each names an existing execution of its tenant with
	// that key, and dedupexp holds exactly the mappings, scored by expiry.
	exp, err := zset(s.k.dedupExp())
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	dedupPrefix := s.k.dedup("")
	for key := range all {
		t, ok := strings.CutPrefix(key, dedupPrefix)
		if !ok {
			continue
		}
		m, err := r.HGetAll(ctx, key).Result()
		if err != nil {
			return nil, err
		}
		for dk, v := range m {
			expires, id, _ := strings.Cut(v, ":")
			if e, ok := execs[id]; !ok || e["tenant"] != t || e["dkey"] != dk {
				report("dedup %s/%s maps to %s, which is not its execution", t, dk, id)
			}
			dm := dedupMember(t, dk)
			seen[dm] = true
			if exp[dm] != num(expires) {
				report("dedupexp %q: score %v, want %s", dm, exp[dm], expires)
			}
		}
	}
	for dm := range exp {
		if !seen[dm] {
			report("dedupexp: stray member %q", dm)
		}
	}
	// Ownership: whatever names a tenant names one that exists, and a key
	// is named by its tenant's key ids exactly (a tenant's delete leaves
	// nothing behind, a key's delete leaves no id).
	isTenant := map[string]bool{}
	for _, t := range tenants {
		isTenant[t] = true
		if !all[s.k.tenant(t)] {
			report("tenant %s in the tenant set without a record", t)
		}
	}
	for id, e := range execs {
		if !isTenant[e["tenant"]] {
			report("exec %s of tenant %q, which does not exist", id, e["tenant"])
		}
	}
	for _, prefix := range []string{s.k.schedule(""), s.k.rateLimit("")} {
		recs, err := hashes(prefix)
		if err != nil {
			return nil, err
		}
		for name, m := range recs {
			if !isTenant[m["tenant"]] {
				report("%s%s of tenant %q, which does not exist", prefix, name, m["tenant"])
			}
			if prefix == s.k.rateLimit("") {
				if ok, err := r.SIsMember(ctx, s.k.rateLimits(m["tenant"]), m["key"]).Result(); err != nil || !ok {
					report("rate limit %s is not in its tenant's index (%v)", name, err)
				}
			}
		}
	}
	keys, err := hashes(s.k.apiKey(""))
	if err != nil {
		return nil, err
	}
	for hash, m := range keys {
		if m["key_id"] == "" {
			report("api key %s without a key id", hash)
		}
		if m["tenant"] == "" {
			continue // the admin's
		}
		if !isTenant[m["tenant"]] {
			report("api key %s of tenant %q, which does not exist", hash, m["tenant"])
		}
		if h, _ := r.HGet(ctx, s.k.keyIDs(m["tenant"]), m["key_id"]).Result(); h != hash {
			report("api key %s: its tenant's key ids map %s to %q", hash, m["key_id"], h)
		}
	}
	for _, prefix := range []string{s.k.keyIDs(""), s.k.rateLimits(""), s.k.schedules(""), s.k.dedup(""),
		s.k.listTenant(""), s.k.done(""), s.k.readyTenant(""), s.k.queues(""), s.k.eventExp(""), s.k.eventIdem(""),
		s.k.subscriptions("")} {
		for key := range all {
			if t, ok := strings.CutPrefix(key, prefix); ok && !isTenant[t] {
				report("%s left behind by tenant %q", key, t)
			}
		}
	}
	for key := range all {
		t, ok := strings.CutPrefix(key, s.k.rateLimits(""))
		if !ok {
			continue
		}
		rks, err := r.SMembers(ctx, key).Result()
		if err != nil {
			return nil, err
		}
		for _, rk := range rks {
			if !all[s.k.rateLimit(scoped(t, rk))] {
				report("%s names rate key %q, which has no limit", key, rk)
			}
		}
	}
	ids, err := hashes(s.k.keyIDs(""))
	if err != nil {
		return nil, err
	}
	for t, m := range ids {
		for id, hash := range m {
			if k := keys[hash]; k == nil || k["tenant"] != t || k["key_id"] != id {
				report("key id %s of tenant %s names %s, which is not that key", id, t, hash)
			}
		}
	}
	return bad, nil
}

// parkGroup returns the group (concGroup) that a concurrency key's park
// member pm starts with.
func parkGroup(pm string) (string, bool) {
	i := 0
	for n := range 4 { // the kind, the queue, the limit, the rate key
		d, rest, ok := strings.Cut(pm[i:], ":")
		l, err := strconv.Atoi(d)
		if n == 2 {
			l = 0 // the limit itself
		}
		if !ok || err != nil || l < 0 || len(rest) < l {
			return "", false
		}
		i += len(d) + 1 + l
	}
	return pm[:i], true
}
