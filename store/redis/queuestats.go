package redis

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/latch-run/latch/store"
)

// QueueStats implements store.Store with one read script
// (queue_stats.lua): the counts of each tenant's queue come from the
// queue statistics' keys, which the scripts that change an execution's
// status keep (lua/lib.lua, qs_enter), and from the running set; no
// terminal execution is read.
func (s *Store) QueueStats(ctx context.Context, p *store.QueueStatsParams) ([]*store.QueueStats, error) {
	arr, err := s.run(ctx, "queue stats", scriptQueueStats, []string{s.k.tenants(), s.k.running()},
		s.k.ns, p.Tenant, itoa(us(now(p.Now))))
	if err != nil {
		return nil, err
	}
	if len(arr)%7 != 0 {
		return nil, fmt.Errorf("redis: queue stats: unexpected reply of %d elements", len(arr))
	}
	byQueue := map[[2]string]*store.QueueStats{}
	for i := 0; i < len(arr); i += 7 {
		key := [2]string{asString(arr[i]), asString(arr[i+1])}
		st := byQueue[key]
		if st == nil {
			st = &store.QueueStats{Tenant: key[0], Queue: key[1]}
			byQueue[key] = st
		}
		st.Ready += int(asInt(arr[i+2]))
		if v := asString(arr[i+3]); v != "" {
			t := fromUS(scoreUS(v))
			if st.OldestReadyAt == nil || t.Before(*st.OldestReadyAt) {
				st.OldestReadyAt = &t
			}
		}
		st.Scheduled += int(asInt(arr[i+4]))
		st.Running += int(asInt(arr[i+5]))
		st.Suspended += int(asInt(arr[i+6]))
	}
	var out []*store.QueueStats
	for _, st := range byQueue {
		if st.Ready+st.Scheduled+st.Running+st.Suspended > 0 {
			out = append(out, st)
		}
	}
	slices.SortFunc(out, func(a, b *store.QueueStats) int {
		return cmp.Or(cmp.Compare(a.Tenant, b.Tenant), cmp.Compare(a.Queue, b.Queue))
	})
	return out, nil
}
