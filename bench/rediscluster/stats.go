package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	goredis "github.com/redis/go-redis/v9"
)

// nodeStats is what one INFO of a primary says about the work it did.
type nodeStats struct {
	cpu   float64 // used_cpu_sys + used_cpu_user, seconds
	calls int64   // commandstats calls, summed over commands (those a script ran count too)
	keys  int64   // keys of db0
}

// probe reads INFO of every primary of a cluster, each on a connection of
// its own (not through the cluster client, so the read goes to that node).
type probe struct {
	nodes []node
	rdbs  []*goredis.Client
}

func newProbe(nodes []node) *probe {
	p := &probe{nodes: nodes}
	for _, n := range nodes {
		p.rdbs = append(p.rdbs, goredis.NewClient(&goredis.Options{Addr: n.Addr}))
	}
	return p
}

func (p *probe) close() {
	for _, r := range p.rdbs {
		r.Close()
	}
}

func (p *probe) read(ctx context.Context) ([]nodeStats, error) {
	out := make([]nodeStats, len(p.rdbs))
	for i, r := range p.rdbs {
		s, err := r.Info(ctx, "cpu", "commandstats", "keyspace").Result()
		if err != nil {
			return nil, fmt.Errorf("INFO of %s: %w", p.nodes[i].Addr, err)
		}
		out[i] = parseInfo(s)
	}
	return out, nil
}

// parseInfo reads the CPU seconds, the commands called and the keys of db0
// from an INFO reply. The INFO and CLUSTER commands (the probe's own, and
// the cluster client's topology reads) are left out of the calls.
func parseInfo(s string) nodeStats {
	var st nodeStats
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		switch {
		case k == "used_cpu_sys" || k == "used_cpu_user":
			f, _ := strconv.ParseFloat(v, 64)
			st.cpu += f
		case k == "db0":
			st.keys = field(v, "keys")
		case strings.HasPrefix(k, "cmdstat_"):
			if cmd := strings.TrimPrefix(k, "cmdstat_"); cmd == "info" || cmd == "cluster" || strings.HasPrefix(cmd, "cluster|") {
				continue
			}
			st.calls += field(v, "calls")
		}
	}
	return st
}

// field reads name=N from a comma-separated INFO value.
func field(v, name string) int64 {
	for _, kv := range strings.Split(v, ",") {
		if k, n, ok := strings.Cut(kv, "="); ok && k == name {
			i, _ := strconv.ParseInt(n, 10, 64)
			return i
		}
	}
	return 0
}

// phaseNodes turns the INFO of each primary before and after a phase of
// ops operations into its per-node figures.
func phaseNodes(nodes []node, before, after []nodeStats, ops int) (out []nodeResult, cpuPerOp float64) {
	var cpu float64
	var calls int64
	for i := range nodes {
		cpu += after[i].cpu - before[i].cpu
		calls += after[i].calls - before[i].calls
	}
	for i, n := range nodes {
		r := nodeResult{
			Addr:       n.Addr,
			Slots:      n.Slots,
			CPUSeconds: after[i].cpu - before[i].cpu,
			Calls:      after[i].calls - before[i].calls,
			KeysAdded:  after[i].keys - before[i].keys,
			Keys:       after[i].keys,
		}
		if ops > 0 {
			r.CPUPerOpUS = r.CPUSeconds / float64(ops) * 1e6
		}
		if cpu > 0 {
			r.CPUShare = r.CPUSeconds / cpu
		}
		if calls > 0 {
			r.CallsShare = float64(r.Calls) / float64(calls)
		}
		out = append(out, r)
	}
	if ops > 0 {
		cpuPerOp = cpu / float64(ops) * 1e6
	}
	return out, cpuPerOp
}
