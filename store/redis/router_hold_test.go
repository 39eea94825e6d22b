package redis_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/latch-run/latch/store"
)

// TestRouterHoldKeepsHintDown: while a call holds a tenant's wake hint
// down across its script, a refresh that finds nothing due (its read may
// predate the script's commit) leaves the hint where the hold put it;
// once released, a refresh re-derives it; a hold whose process died lapses.
func TestRouterHoldKeepsHintDown(t *testing.T) {
	url := clusterURL(t)
	r := openRouter(t, url, newClusterPrefix(t, url))
	defer r.Close()
	ctx := context.Background()
	if _, err := r.CreateTenant(ctx, &store.CreateTenantParams{Name: "acme", Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	rdb := r.RawClient()
	score := func() (float64, bool) {
		t.Helper()
		v, err := rdb.ZScore(ctx, r.HintKey("wake"), "acme").Result()
		if errors.Is(err, goredis.Nil) {
			return 0, false
		}
		if err != nil {
			t.Fatal(err)
		}
		return v, true
	}

	token := r.HoldHint(ctx, "acme", 42, "wake")
	if token == "" {
		t.Fatal("hold failed")
	}
	if v, ok := score(); !ok || v != 42 {
		t.Fatalf("wake hint after the hold: %v (present %v), want 42", v, ok)
	}
	// acme has no suspension: an unheld refresh would remove the hint.
	if err := r.RefreshHint(ctx, "acme", "wake"); err != nil {
		t.Fatal(err)
	}
	if v, ok := score(); !ok || v != 42 {
		t.Errorf("a refresh during the hold moved the hint to %v (present %v), want it kept at 42", v, ok)
	}
	r.ReleaseHint(ctx, "acme", "wake", token)
	if err := r.RefreshHint(ctx, "acme", "wake"); err != nil {
		t.Fatal(err)
	}
	if v, ok := score(); ok {
		t.Errorf("a refresh after the release kept the hint at %v, want it removed (nothing suspended)", v)
	}

	// A hold left by a process that died lapses: one whose time is past
	// holds nothing down.
	hold := r.HintHoldKey("wake", "acme")
	r.HoldHint(ctx, "acme", 7, "wake")
	if err := rdb.ZAdd(ctx, hold, goredis.Z{Score: float64(time.Now().Add(-time.Second).UnixMilli()), Member: "dead"}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ZRemRangeByScore(ctx, hold, "("+strconv.FormatInt(time.Now().UnixMilli(), 10), "+inf").Err(); err != nil {
		t.Fatal(err) // the live hold goes: only the dead one's is left
	}
	if err := r.RefreshHint(ctx, "acme", "wake"); err != nil {
		t.Fatal(err)
	}
	if v, ok := score(); ok {
		t.Errorf("a refresh past a lapsed hold kept the hint at %v, want it removed", v)
	}
}
