package redis

import (
	"context"
	"fmt"
	"strings"
)

// checkFlows reports the flow records (journals, signal buffers and
// idempotency keys) that name no execution, journal entries that do not
// parse or do not number the record order 1..n, and signal buffers out of
// step with their execution's set of names.
func (s *Store) checkFlows(ctx context.Context, all map[string]bool, execs map[string]map[string]string) []string {
	var bad []string
	report := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	for key := range all {
		for _, prefix := range []string{s.k.steps(""), s.k.sigNames(""), s.k.sigKeys("")} {
			if id, ok := strings.CutPrefix(key, prefix); ok && execs[id] == nil {
				report("%s left behind by execution %s", key, id)
			}
		}
		if id, ok := strings.CutPrefix(key, s.k.steps("")); ok {
			m, err := s.rdb.HGetAll(ctx, key).Result()
			if err != nil {
				return append(bad, err.Error())
			}
			seen := map[int64]bool{}
			for name, v := range m {
				e, err := parseStep(name, v)
				if err != nil {
					report("exec %s: %v", id, err)
					continue
				}
				if e.seq < 1 || e.seq > int64(len(m)) || seen[e.seq] {
					report("exec %s: step %q has record number %d of %d", id, name, e.seq, len(m))
				}
				seen[e.seq] = true
			}
		}
	}
	// Every buffer is named in its execution's set of names, and every
	// name has a buffer (an emptied one leaves the set). nbuf counts the
	// signals in the execution's buffers (store.MaxBufferedSignals bounds it).
	named := map[string]bool{}
	for id, e := range execs {
		names, err := s.rdb.SMembers(ctx, s.k.sigNames(id)).Result()
		if err != nil {
			return append(bad, err.Error())
		}
		buffered := int64(0)
		for _, n := range names {
			buf := s.k.sigBuf(scoped(id, n))
			named[buf] = true
			if !all[buf] {
				report("exec %s: signal %q named without a buffer", id, n)
			}
			l, err := s.rdb.LLen(ctx, buf).Result()
			if err != nil {
				return append(bad, err.Error())
			}
			buffered += l
		}
		if nbuf := e["nbuf"]; (nbuf == "" && buffered != 0) || (nbuf != "" && nbuf != fmt.Sprint(buffered)) {
			report("exec %s: nbuf %q, %d signals buffered", id, nbuf, buffered)
		}
	}
	for key := range all {
		if strings.HasPrefix(key, s.k.sigBuf("")) && !named[key] {
			report("%s: a signal buffer its execution does not name", key)
		}
	}
	return bad
}
