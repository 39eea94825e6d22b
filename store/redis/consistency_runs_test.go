package redis

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/latch-run/latch/store"
)

// checkRuns reports attempt histories that name no execution, do not
// parse, hold more than store.MaxRunsKept runs, or disagree with their
// execution: a run goes on exactly while its execution runs, and then it
// is the last one, of the execution's attempt, worker and start.
func (s *Store) checkRuns(ctx context.Context, all map[string]bool, execs map[string]map[string]string) []string {
	var bad []string
	report := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	prefix := s.k.runs("")
	for key := range all {
		id, ok := strings.CutPrefix(key, prefix)
		if !ok {
			continue
		}
		e := execs[id]
		if e == nil {
			report("%s left behind by execution %s", key, id)
			continue
		}
		list, err := s.rdb.LRange(ctx, key, 0, -1).Result()
		if err != nil {
			return append(bad, err.Error())
		}
		if len(list) > store.MaxRunsKept {
			report("exec %s: %d runs kept, more than %d", id, len(list), store.MaxRunsKept)
		}
		for i, v := range list {
			r, err := parseRun(v)
			if err != nil {
				report("exec %s: run %d: %v", id, i, err)
				continue
			}
			if i < len(list)-1 && !r.Ended() {
				report("exec %s: run %d of %d has not ended", id, i, len(list))
			}
			if i == len(list)-1 && !r.Ended() {
				started, _ := strconv.ParseInt(e["started"], 10, 64)
				if e["status"] != "running" || strconv.Itoa(r.Attempt) != e["attempt"] ||
					r.WorkerID != e["worker"] || us(r.ClaimedAt) != started {
					report("exec %s (%s, attempt %s, worker %q, started %s): its last run %q goes on",
						id, e["status"], e["attempt"], e["worker"], e["started"], v)
				}
			}
		}
	}
	for id, e := range execs {
		if e["status"] != "running" {
			continue
		}
		last, err := s.rdb.LIndex(ctx, s.k.runs(id), -1).Result()
		if r, perr := parseRun(last); err != nil || perr != nil || r.Ended() {
			report("exec %s runs without a run going on (last %q)", id, last)
		}
	}
	return bad
}
