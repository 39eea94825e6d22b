package main

import (
	"fmt"

	"github.com/latch-run/latch/internal/benchcmp"
	"github.com/latch-run/latch/store/storebench"
)

// report is the run as -json writes it and -median reads it (package
// benchcmp, shared with bench/river): each row with latch's figure (for a
// row marked "same run", the one above it) and Asynq's.
func (r *runner) report(date, loadBefore, loadAfter string) *benchcmp.Report {
	c := r.c
	rep := &benchcmp.Report{Peer: "Asynq", Date: date, LoadBefore: loadBefore, LoadAfter: loadAfter,
		Params: fmt.Sprintf("-n %d -clients %d -batch-n %d -batch %d -drain %d -slots %d -rate %d -duration %v "+
			"-warmup %v -asynq-fast-poll %v -rounds %d -contenders %d -unique-ttl %v",
			c.n, c.clients, c.batchN, c.batch, c.drainN, c.slots, c.rate, c.duration, c.warmup, c.fastPoll,
			c.rounds, c.contenders, c.uniqueTTL)}
	var latch *storebench.Result
	for _, rw := range r.rows {
		if rw.latch.res != nil || rw.latch.text != sameRun {
			latch = rw.latch.res
		}
		out := benchcmp.Row{Key: rw.workload, Workload: rw.workload, Latency: rw.latch.latOnly || rw.asynq.latOnly}
		if latch != nil {
			out.Latch = benchcmp.Measure(latch)
		}
		if rw.asynq.res != nil {
			out.Peer = benchcmp.Measure(rw.asynq.res)
		}
		rep.Rows = append(rep.Rows, out)
	}
	return rep
}
