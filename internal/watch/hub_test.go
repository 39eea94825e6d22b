package watch

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/latch-run/latch/internal/testdb"
	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/sqlite"
)

// TestMain fails the run if the hub's loop outlives its last waiter.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// countingStore counts the reads of each execution.
type countingStore struct {
	*sqlite.Store
	mu    sync.Mutex
	reads map[string]int
}

func (c *countingStore) Get(ctx context.Context, p *store.GetParams) (*store.Execution, error) {
	c.mu.Lock()
	c.reads[p.ID]++
	c.mu.Unlock()
	return c.Store.Get(ctx, p)
}

func (c *countingStore) counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.reads
	c.reads = map[string]int{}
	return out
}

func newStore(t *testing.T) *countingStore {
	t.Helper()
	st, err := sqlite.Open(t.Context(), testdb.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.CreateTenant(t.Context(), &store.CreateTenantParams{Name: "acme", MaxInflight: 100000}); err != nil {
		t.Fatal(err)
	}
	return &countingStore{Store: st, reads: map[string]int{}}
}

func admit(t *testing.T, st store.Store, n int) []string {
	t.Helper()
	items := make([]store.Submission, n)
	for i := range items {
		items[i] = store.Submission{Kind: "echo"}
	}
	res, err := st.Admit(t.Context(), &store.AdmitParams{Tenant: "acme", Items: items})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, n)
	for i, it := range res.Items {
		if it.Err != nil {
			t.Fatal(it.Err)
		}
		ids[i] = it.Execution.ID
	}
	return ids
}

// newHub polls once an hour: every read a test sees is a notification's.
func newHub(st store.Store) *Hub {
	return New(Config{Store: st, PollInterval: time.Hour, ReadTimeout: 10 * time.Second})
}

func woken(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: not woken within 10s", what)
	}
}

func quiet(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
		t.Fatalf("%s: woken, though its execution did not change", what)
	default:
	}
}

// With a thousand watchers on a thousand executions, a change of one is
// read once, for that execution only, and wakes its watcher alone.
func TestChangeReadsOnlyItsExecution(t *testing.T) {
	st := newStore(t)
	ids := admit(t, st, 1000)
	h := newHub(st)
	watches := make([]*Watch, len(ids))
	for i, id := range ids {
		w, err := h.Watch(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		watches[i] = w
	}
	if got := st.counts(); len(got) != len(ids) {
		t.Fatalf("registering read %d executions, want %d", len(got), len(ids))
	}

	changes := make([]<-chan struct{}, len(ids))
	for i, w := range watches {
		_, changes[i] = w.Current()
	}
	target := ids[500]
	if _, err := st.Cancel(t.Context(), &store.CancelParams{Tenant: "acme", ID: target}); err != nil {
		t.Fatal(err)
	}
	woken(t, changes[500], "the cancelled execution's watcher")
	snap, _ := watches[500].Current()
	if snap.Err != nil || snap.Execution.Status != store.StatusCancelled {
		t.Fatalf("snapshot after the cancel: %+v", snap)
	}
	reads := st.counts()
	if len(reads) != 1 || reads[target] != 1 {
		t.Fatalf("one change read %v; want the changed execution once", reads)
	}
	for i, ch := range changes {
		if i != 500 {
			quiet(t, ch, fmt.Sprintf("watcher %d", i))
		}
	}
}

// The waiters of one execution share each read of it.
func TestWaitersShareReads(t *testing.T) {
	st := newStore(t)
	id := admit(t, st, 1)[0]
	h := newHub(st)
	var chans []<-chan struct{}
	for range 50 {
		w, err := h.Watch(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		_, ch := w.Current()
		chans = append(chans, ch)
	}
	if got := st.counts()[id]; got != 1 {
		t.Fatalf("50 registrations read the execution %d times, want once", got)
	}
	if _, err := st.Cancel(t.Context(), &store.CancelParams{ID: id}); err != nil {
		t.Fatal(err)
	}
	for i, ch := range chans {
		woken(t, ch, fmt.Sprintf("waiter %d", i))
	}
	if got := st.counts()[id]; got != 1 {
		t.Fatalf("one change read the execution %d times for 50 waiters, want once", got)
	}
}

// A deletion is a snapshot, not an error: the waiters learn it.
func TestDeletionWakes(t *testing.T) {
	st := newStore(t)
	id := admit(t, st, 1)[0]
	h := newHub(st)
	w, err := h.Watch(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	_, ch := w.Current()
	if err := st.Delete(t.Context(), &store.DeleteParams{ID: id, Force: true}); err != nil {
		t.Fatal(err)
	}
	woken(t, ch, "the deleted execution's watcher")
	if snap, _ := w.Current(); snap.Err == nil {
		t.Fatalf("after the delete the snapshot holds %+v, want not found", snap.Execution)
	}
}

// A store without a feed: a change has every watched execution read once,
// however many wait on each.
func TestNotifierOnlyReadsEachOnce(t *testing.T) {
	st := newStore(t)
	ids := admit(t, st, 3)
	h := newHub(notifierOnly{st})
	for _, id := range ids {
		for range 10 {
			w, err := h.Watch(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
		}
	}
	st.counts()
	w, err := h.Watch(t.Context(), ids[0])
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	_, ch := w.Current()
	if _, err := st.Cancel(t.Context(), &store.CancelParams{ID: ids[0]}); err != nil {
		t.Fatal(err)
	}
	woken(t, ch, "the watcher")
	for _, id := range ids {
		if n := st.counts()[id]; n > 1 {
			t.Fatalf("execution %s read %d times for one change", id, n)
		}
	}
}

// notifierOnly hides the store's feed.
type notifierOnly struct{ *countingStore }

func (n notifierOnly) WatchChanges() {} // not a store.ChangeFeed

// A change of n executions wakes the n claims that waited longest; a claim
// that got work wakes one more.
func TestClaimsWokenFew(t *testing.T) {
	st := newStore(t)
	h := newHub(st)
	var wakes []<-chan struct{}
	for range 10 {
		ch, done := h.ClaimWait()
		defer done()
		wakes = append(wakes, ch)
	}
	count := func() int {
		n := 0
		for _, ch := range wakes {
			select {
			case <-ch:
				n++
			default:
			}
		}
		return n
	}
	admit(t, st, 1)
	woken(t, wakes[0], "the longest waiting claim")
	if n := count(); n != 1 {
		t.Fatalf("an admit of one woke %d claims, want 1", n)
	}
	admit(t, st, 3)
	woken(t, wakes[3], "the fourth claim")
	if n := count(); n != 4 {
		t.Fatalf("an admit of three more woke %d claims in all, want 4", n)
	}
	h.ClaimGot()
	if n := count(); n != 5 {
		t.Fatalf("a claim that got work woke %d in all, want 5", n)
	}
	if _, err := st.Claim(t.Context(), &store.ClaimParams{WorkerID: "w", Tenant: "acme", Max: 4}); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 5 {
		t.Fatalf("a claim's own change woke claims: %d in all, want 5", n)
	}
}
