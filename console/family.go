package console

import (
	"context"
	"errors"
	"net/url"

	"github.com/latch-run/latch/store"
)

// An execution's family on its page (docs/console.md, "Family"): the
// parent that spawned it, and the children it spawned, as a tree two
// levels deep. The page reads a bounded part of it, however large the
// family (an execution spawns up to store.MaxChildren over its life):
//
//   - one List of its children (childrenTallied at most, in spawn order),
//     whose statuses are counted, each count linked to the filtered list;
//   - the first childrenShown of them as the tree's first level, grouped
//     under their spawn step;
//   - for each of those, one List of its own first grandchildrenShown
//     children, the second level.
//
// So the page makes at most 2 + childrenShown store calls for the family,
// and the full list is the executions list filtered on parent_id.
const (
	childrenTallied    = store.MaxListLimit
	childrenShown      = 20
	grandchildrenShown = 5
)

// family is what an execution's page shows of its family.
type family struct {
	Parent *parentRow // nil for an execution nobody spawned (or orphaned)
	// Spawns are the spawn steps of its journal as far as the page read
	// it (history), each with the number of children it admitted.
	Spawns []spawnTotal
	// Children: Tallied is how many the page counted, Counts their
	// statuses in allStatuses order; TallyCut when it has more than
	// those (the counts are of the first Tallied).
	Tallied  int
	TallyCut bool
	Counts   []statusCount
	// Groups are the first childrenShown children under their steps;
	// MoreShown when it has more than those.
	Groups    []childGroup
	Shown     int
	MoreShown bool
	ListURL   string // the executions list of its children
}

// parentRow is the parent an execution names; Status is "" when the page
// could not read it (deleted while the page was read).
type parentRow struct {
	ID, Step, Kind string
	Status         store.Status
	Depth          int
}

// spawnTotal is one spawn step of the journal and how many children it
// admitted.
type spawnTotal struct {
	Step     string
	Children int
}

// statusCount is how many of the counted children have Status, linked to
// the list of the children in that status.
type statusCount struct {
	Status store.Status
	N      int
	URL    string
}

// childGroup is a run of children of one spawn step, in spawn order.
type childGroup struct {
	Step     string
	Children []childNode
}

// childNode is a child and its own first children.
type childNode struct {
	E        *store.Execution
	Children []*store.Execution
	More     bool   // it has more children than those
	ListURL  string // the list of its children
}

// childrenURL is the executions list of id's children, with status when
// set.
func childrenURL(id string, status store.Status) string {
	v := url.Values{"parent_id": {id}}
	if status != "" {
		v.Set("status", string(status))
	}
	return "/executions?" + v.Encode()
}

// readFamily reads x's family, scoped to tenant like the read of x.
func (c *Console) readFamily(ctx context.Context, tenant string, x *store.Execution, spawns []spawnTotal) (*family, error) {
	f := &family{Spawns: spawns, ListURL: childrenURL(x.ID, "")}
	if x.ParentID != "" {
		f.Parent = &parentRow{ID: x.ParentID, Step: x.ParentStep, Depth: x.Depth - 1}
		p, err := c.cfg.Store.Get(ctx, &store.GetParams{Tenant: tenant, ID: x.ParentID})
		switch {
		case err == nil:
			f.Parent.Kind, f.Parent.Status = p.Kind, p.Status
		case !errors.Is(err, store.ErrNotFound):
			return nil, err
		}
	}
	res, err := c.cfg.Store.List(ctx, &store.ListParams{Tenant: tenant, ParentID: x.ID, Limit: childrenTallied,
		MaxBytes: maxListBytes})
	if err != nil {
		return nil, err
	}
	kids := res.Items
	f.Tallied, f.TallyCut = len(kids), res.Next != ""
	n := map[store.Status]int{}
	for _, k := range kids {
		n[k.Status]++
	}
	for _, s := range allStatuses {
		if n[s] > 0 {
			f.Counts = append(f.Counts, statusCount{Status: s, N: n[s], URL: childrenURL(x.ID, s)})
		}
	}
	shown := kids
	if len(shown) > childrenShown {
		shown, f.MoreShown = shown[:childrenShown], true
	}
	f.MoreShown = f.MoreShown || f.TallyCut
	f.Shown = len(shown)
	for _, k := range shown {
		node := childNode{E: k, ListURL: childrenURL(k.ID, "")}
		if k.Depth < store.MaxSpawnDepth {
			g, err := c.cfg.Store.List(ctx, &store.ListParams{Tenant: tenant, ParentID: k.ID, Limit: grandchildrenShown,
				MaxBytes: maxListBytes})
			if err != nil {
				return nil, err
			}
			node.Children, node.More = g.Items, g.Next != ""
		}
		if l := len(f.Groups); l == 0 || f.Groups[l-1].Step != k.ParentStep {
			f.Groups = append(f.Groups, childGroup{Step: k.ParentStep})
		}
		g := &f.Groups[len(f.Groups)-1]
		g.Children = append(g.Children, node)
	}
	return f, nil
}

// Empty reports whether f has nothing to show: no parent, no children.
func (f *family) Empty() bool { return f.Parent == nil && f.Tallied == 0 && len(f.Spawns) == 0 }

// SpawnedTotal is the children its journal's spawn steps admitted, as far
// as the page read the journal.
func (f *family) SpawnedTotal() int {
	n := 0
	for _, s := range f.Spawns {
		n += s.Children
	}
	return n
}

// spawnTotals are the spawn steps among steps, in journal order.
func spawnTotals(steps []*store.Step) []spawnTotal {
	var out []spawnTotal
	for _, st := range steps {
		if ids, ok := store.ParseSpawnStep(st.Result); ok {
			out = append(out, spawnTotal{Step: st.Name, Children: len(ids)})
		}
	}
	return out
}

// waitWords is what a suspended execution waits for, in words: a
// signal, the children of a spawn step, an event, or only its wake time
// ("" when it is not suspended).
func waitWords(x *store.Execution) string {
	if x.Status != store.StatusSuspended {
		return ""
	}
	until := ""
	if x.WakeAt != nil {
		until = " until " + x.WakeAt.UTC().Format("2006-01-02 15:04:05Z") + ", then it times out"
	}
	if step, ok := store.ChildrenWaitStep(x.WaitingFor); ok {
		return "Waiting for the children of step " + step + " to end" + until + "."
	}
	if name, ok := store.EventWaitName(x.WaitingFor); ok {
		return "Waiting for event " + name + until + "."
	}
	if x.WaitingFor != "" {
		return "Waiting for signal " + x.WaitingFor + until + "."
	}
	if x.WakeAt != nil {
		return "Sleeping until " + x.WakeAt.UTC().Format("2006-01-02 15:04:05Z") + "."
	}
	return "Suspended."
}

// waitsForSignal reports whether suspended x waits for a signal (not for
// children, an event, or only its wake time).
func waitsForSignal(x *store.Execution) bool {
	_, children := store.ChildrenWaitStep(x.WaitingFor)
	_, event := store.EventWaitName(x.WaitingFor)
	return x.WaitingFor != "" && !children && !event
}
