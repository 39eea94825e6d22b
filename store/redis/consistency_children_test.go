package redis

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/latch-run/latch/store"
)

// checkChildren reports every way the children's records (lib.lua's
// children section) disagree with the execution hashes: a parent's list
// holds exactly its children, each naming it; its counters count every
// child spawned and every one that ended (a deleted one counts as ended);
// and no fan-in wait is left suspended while its condition holds (a lost
// wake-up, I13).
func (s *Store) checkChildren(ctx context.Context, all map[string]bool, execs map[string]map[string]string) []string {
	var bad []string
	report := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	for key := range all {
		for _, prefix := range []string{s.k.kids(""), s.k.spawns("")} {
			if id, ok := strings.CutPrefix(key, prefix); ok && execs[id] == nil {
				report("%s left behind by execution %s", key, id)
			}
		}
	}
	// Children by parent and spawn step: how many exist, how many ended.
	type tally struct{ exist, ended int }
	byStep := map[string]map[string]*tally{}
	for id, e := range execs {
		p := e["parent"]
		if p == "" {
			if e["pstep"] != "" {
				report("exec %s: spawn step %q without a parent", id, e["pstep"])
			}
			continue
		}
		if execs[p] == nil {
			report("exec %s: parent %s does not exist", id, p)
			continue
		}
		if execs[p]["kids"] != "1" {
			report("exec %s: its parent %s is not marked as one", id, p)
		}
		if _, err := s.rdb.ZScore(ctx, s.k.kids(p), id).Result(); err != nil {
			report("exec %s: not in its parent's list %s (%v)", id, s.k.kids(p), err)
		}
		if byStep[p] == nil {
			byStep[p] = map[string]*tally{}
		}
		c := byStep[p][e["pstep"]]
		if c == nil {
			c = &tally{}
			byStep[p][e["pstep"]] = c
		}
		c.exist++
		if store.Status(e["status"]).Terminal() {
			c.ended++
		}
	}
	for id, e := range execs {
		kids, err := s.rdb.ZRange(ctx, s.k.kids(id), 0, -1).Result()
		if err != nil {
			return append(bad, err.Error())
		}
		for _, k := range kids {
			if execs[k] == nil || execs[k]["parent"] != id {
				report("%s: member %s is no child of it", s.k.kids(id), k)
			}
		}
		counts, err := s.rdb.HGetAll(ctx, s.k.spawns(id)).Result()
		if err != nil {
			return append(bad, err.Error())
		}
		num := func(f string) int {
			n, _ := strconv.Atoi(counts[f])
			return n
		}
		spawned := 0
		for f := range counts {
			step, ok := strings.CutPrefix(f, "t:")
			if !ok {
				continue
			}
			total, ended := num(f), num("e:"+step)
			spawned += total
			c := byStep[id][step]
			if c == nil {
				c = &tally{}
			}
			// The children gone count as ended.
			if c.exist > total || ended != c.ended+total-c.exist {
				report("exec %s: spawn %q counts %d children, %d ended; %d exist, %d of them ended",
					id, step, total, ended, c.exist, c.ended)
			}
		}
		for step := range byStep[id] {
			if _, ok := counts["t:"+step]; !ok {
				report("exec %s: children of spawn %q, which it does not count", id, step)
			}
		}
		if num("n") != spawned {
			report("exec %s: counts %d children spawned, its spawns %d", id, num("n"), spawned)
		}
		if step, ok := store.ChildrenWaitStep(e["waiting"]); ok && e["status"] == "suspended" && e["fcount"] != "" {
			count, _ := strconv.Atoi(e["fcount"])
			if store.ChildrenWaitHolds(num("e:"+step), num("t:"+step), count) {
				report("exec %s: suspended waiting for %d of spawn %q, which holds (%d of %d ended): a lost wake-up",
					id, count, step, num("e:"+step), num("t:"+step))
			}
		}
		if e["status"] != "suspended" && (e["fcount"] != "" || e["fbytes"] != "") {
			report("exec %s: %s with a fan-in wait's fields", id, e["status"])
		}
	}
	return bad
}
