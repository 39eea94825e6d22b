package soak

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/latch-run/latch/store"
)

// buggyStore wraps a correct store with three bugs of the kinds the soak
// exists to find: every fifth claim hands one lease out twice (an attempt
// started twice: I2), every tenth submit leaves a goroutine behind, and
// every submit keeps some memory for good.
type buggyStore struct {
	store.Store
	leakBytes int

	claims  atomic.Int64
	admits  atomic.Int64
	mu      sync.Mutex
	kept    [][]byte
	release chan struct{}
}

func (b *buggyStore) Claim(ctx context.Context, p *store.ClaimParams) (*store.ClaimResult, error) {
	res, err := b.Store.Claim(ctx, p)
	if err == nil && len(res.Leases) > 0 && len(res.Leases) < p.Max && b.claims.Add(1)%5 == 0 {
		res.Leases = append(res.Leases, res.Leases[0])
	}
	return res, err
}

func (b *buggyStore) Admit(ctx context.Context, p *store.AdmitParams) (*store.AdmitResult, error) {
	if b.admits.Add(1)%10 == 0 {
		go func() { <-b.release }()
	}
	b.mu.Lock()
	b.kept = append(b.kept, make([]byte, b.leakBytes))
	b.mu.Unlock()
	return b.Store.Admit(ctx, p)
}

// Changed keeps the wake-ups of the store wrapped.
func (b *buggyStore) Changed() <-chan struct{} {
	if n, ok := b.Store.(store.Notifier); ok {
		return n.Changed()
	}
	return nil
}

// The soak is not vacuous end to end: on a store with these bugs a short
// soak reports the attempt started twice, the goroutines left behind and
// the heap's steady growth.
func TestSoakCatchesABuggyStore(t *testing.T) {
	rate := 100
	if raceEnabled {
		rate = 25
	}
	b := &buggyStore{Store: sqliteStore(t), leakBytes: (10 << 20) / rate, release: make(chan struct{})}
	t.Cleanup(func() {
		close(b.release)
		b.mu.Lock()
		b.kept = nil
		b.mu.Unlock()
	})
	var out strings.Builder
	res, err := Run(t.Context(), Config{
		Store: b, Duration: 2500 * time.Millisecond, Rate: rate, ReportEvery: time.Second,
		DrainTimeout: 20 * time.Second, Out: &out, TempDir: t.TempDir(),
	})
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	failed := map[string]int{}
	for _, c := range res.Checks {
		failed[c.Name] = c.Breaches
	}
	for _, check := range []string{"I2", "goroutines", "memory"} {
		if failed[check] == 0 {
			t.Errorf("check %s found nothing on a store with that bug", check)
		}
	}
	if res.OK() || !strings.HasPrefix(res.Verdict(), "FAIL") {
		t.Errorf("verdict %q on a buggy store", res.Verdict())
	}
}
