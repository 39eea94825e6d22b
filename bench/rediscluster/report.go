package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
)

// caveat says what a run on one small machine can and cannot show.
func caveat() string {
	return fmt.Sprintf("Caveat: this machine has %d CPU cores, and they run the benchmark client and every "+
		"redis-server process alike. Three primaries cannot show more total throughput here than one: they "+
		"compete with each other and with the client for the same cores. What the figures do show is how the "+
		"work divides: the Redis CPU each primary spent per operation, and each primary's share of the commands "+
		"run and of the keys. Spread work shows as several primaries with a share each; work on one hash slot "+
		"shows as one primary with ~100%% whatever the cluster's size.", runtime.NumCPU())
}

// record is what -json writes.
type record struct {
	Config   config        `json:"config"`
	Rounds   int           `json:"rounds"`
	CPUs     int           `json:"cpus"`
	Clusters []clusterDesc `json:"clusters"`
	Caveat   string        `json:"caveat"`
	Results  []phaseResult `json:"results"`
}

type clusterDesc struct {
	Name      string `json:"name"`
	Primaries []node `json:"primaries"`
}

func writeJSON(path string, r record) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// writeReport prints the markdown report: a summary over the rounds
// (medians and ranges, the three-to-one ratios), then every round's
// figures node by node.
func writeReport(w io.Writer, r record) {
	cfg := r.Config
	fmt.Fprintf(w, "## latch on Redis Cluster: one primary vs three\n\n")
	fmt.Fprintf(w, "tenants=%d n=%d clients=%d slots=%d rounds=%d (the clusters alternate which goes first)\n\n",
		cfg.Tenants, cfg.N, cfg.Clients, cfg.Slots, r.Rounds)
	for _, c := range r.Clusters {
		var ps []string
		for _, p := range c.Primaries {
			ps = append(ps, fmt.Sprintf("%s (%d slots)", p.Addr, p.Slots))
		}
		fmt.Fprintf(w, "- %s: %s\n", c.Name, strings.Join(ps, ", "))
	}
	fmt.Fprintf(w, "\n%s\n\n", caveat())

	fmt.Fprintf(w, "### Summary: median over rounds [min–max]\n\n")
	fmt.Fprintf(w, "Nodes are ranked by their CPU in each round (busiest first), since a fresh prefix may land on another node each round.\n\n")
	fmt.Fprintf(w, "| cluster | phase | ops/s | submit p50 / p99 µs | Redis CPU µs/op, all primaries | CPU µs/op per node, busiest first | CPU share per node | commands share per node | keys share per node |\n")
	fmt.Fprintf(w, "|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range r.Clusters {
		for _, ph := range []string{"submit", "drain"} {
			rs := pick(r.Results, c.Name, ph)
			if len(rs) == 0 {
				continue
			}
			lat := "–"
			if ph == "submit" {
				lat = fmt.Sprintf("%.0f / %.0f", median(each(rs, func(p phaseResult) float64 { return p.P50US })),
					median(each(rs, func(p phaseResult) float64 { return p.P99US })))
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", c.Name, ph,
				spread(each(rs, func(p phaseResult) float64 { return p.PerSecond }), "%.0f"), lat,
				spread(each(rs, func(p phaseResult) float64 { return p.CPUPerOpUS }), "%.1f"),
				ranked(rs, func(n nodeResult) float64 { return n.CPUPerOpUS }, "%.1f"),
				ranked(rs, func(n nodeResult) float64 { return 100 * n.CPUShare }, "%.0f%%"),
				ranked(rs, func(n nodeResult) float64 { return 100 * n.CallsShare }, "%.0f%%"),
				ranked(rs, keysShare, "%.0f%%"))
		}
	}
	if len(r.Clusters) == 2 {
		a, b := r.Clusters[0].Name, r.Clusters[1].Name
		fmt.Fprintf(w, "\n%s / %s, the median of each round's ratio [min–max]:\n\n", b, a)
		fmt.Fprintf(w, "| phase | ops/s | Redis CPU µs/op, all primaries | busiest primary's CPU µs/op |\n|---|---|---|---|\n")
		for _, ph := range []string{"submit", "drain"} {
			var tput, cpu, top []float64
			for _, x := range pick(r.Results, a, ph) {
				for _, y := range pick(r.Results, b, ph) {
					if x.Round == y.Round {
						tput = append(tput, y.PerSecond/x.PerSecond)
						cpu = append(cpu, y.CPUPerOpUS/x.CPUPerOpUS)
						top = append(top, busiest(y).CPUPerOpUS/busiest(x).CPUPerOpUS)
					}
				}
			}
			if len(tput) > 0 {
				fmt.Fprintf(w, "| %s | %s | %s | %s |\n", ph, spread(tput, "%.2f"), spread(cpu, "%.2f"), spread(top, "%.2f"))
			}
		}
	}

	fmt.Fprintf(w, "\n### Every round, node by node\n\n")
	fmt.Fprintf(w, "| round | cluster | phase | ops/s | node | slots | CPU s | CPU µs/op | CPU share | commands | commands share | keys added | keys |\n")
	fmt.Fprintf(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, p := range r.Results {
		for i, n := range p.Nodes {
			head := fmt.Sprintf("%d | %s | %s | %.0f", p.Round, p.Cluster, p.Phase, p.PerSecond)
			if i > 0 {
				head = " | | | "
			}
			fmt.Fprintf(w, "| %s | %s | %d | %.2f | %.1f | %.0f%% | %d | %.0f%% | %d | %d |\n", head, n.Addr, n.Slots,
				n.CPUSeconds, n.CPUPerOpUS, 100*n.CPUShare, n.Calls, 100*n.CallsShare, n.KeysAdded, n.Keys)
		}
	}
}

func pick(rs []phaseResult, cluster, phase string) []phaseResult {
	var out []phaseResult
	for _, r := range rs {
		if r.Cluster == cluster && r.Phase == phase {
			out = append(out, r)
		}
	}
	return out
}

func each(rs []phaseResult, f func(phaseResult) float64) []float64 {
	out := make([]float64, len(rs))
	for i, r := range rs {
		out[i] = f(r)
	}
	return out
}

// keysShare is a node's share of the cluster's keys after the phase.
func keysShare(n nodeResult) float64 { return 100 * float64(n.Keys) / float64(max(n.keysTotal, 1)) }

func busiest(p phaseResult) nodeResult {
	return slices.MaxFunc(p.Nodes, func(a, b nodeResult) int { return cmp.Compare(a.CPUShare, b.CPUShare) })
}

// ranked gives, for each rank of node by CPU (busiest first), the median
// over the rounds of f of the node of that rank, joined by " / ".
func ranked(rs []phaseResult, f func(nodeResult) float64, format string) string {
	var byRank [][]float64
	for _, p := range rs {
		ns := slices.Clone(p.Nodes)
		var total int64
		for _, n := range ns {
			total += n.Keys
		}
		for i := range ns {
			ns[i].keysTotal = total
		}
		slices.SortStableFunc(ns, func(a, b nodeResult) int { return cmp.Compare(b.CPUShare, a.CPUShare) })
		for i, n := range ns {
			if i == len(byRank) {
				byRank = append(byRank, nil)
			}
			byRank[i] = append(byRank[i], f(n))
		}
	}
	var parts []string
	for _, v := range byRank {
		parts = append(parts, fmt.Sprintf(format, median(v)))
	}
	return strings.Join(parts, " / ")
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// spread is "median [min–max]", or the one value of a single round.
func spread(v []float64, format string) string {
	if len(v) == 1 {
		return fmt.Sprintf(format, v[0])
	}
	return fmt.Sprintf(format+" ["+format+"–"+format+"]", median(v), slices.Min(v), slices.Max(v))
}
