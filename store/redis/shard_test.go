package redis_test

import (
	"context"
	"testing"

	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/redis"
	"github.com/latch-run/latch/store/storetest"
)

func openRouter(t testing.TB, url, prefix string) *redis.Router {
	t.Helper()
	r, err := redis.OpenRouter(context.Background(), url, redis.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// newRouterStore is newClusterStore through the tenant router.
func newRouterStore(t *testing.T) store.Store {
	t.Helper()
	url := clusterURL(t)
	r := openRouter(t, url, newClusterPrefix(t, url))
	t.Cleanup(func() { r.Close() })
	t.Cleanup(func() { redis.CheckRouterConsistency(t, r) })
	return r
}

func TestRouterStore(t *testing.T) {
	clusterURL(t)
	storetest.Run(t, newRouterStore)
}
