package redis_test

import (
	"testing"

	"github.com/latch-run/latch/store"
	"github.com/latch-run/latch/store/storetest"
)

// LATCH_TEST_REDIS_URL=redis://127.0.0.1:6379/0 go test -run '^$' -bench . -benchtime 20000x ./store/redis
func BenchmarkStore(b *testing.B) {
	url := redisURL(b)
	storetest.Benchmarks(b, func(b *testing.B) store.Store {
		s := open(b, url, newPrefix(b, url))
		b.Cleanup(func() { s.Close() })
		return s
	})
}

// BenchmarkStoreCluster is BenchmarkStore on the Redis Cluster, through a
// tenant router (what a redis-cluster:// URL opens):
// LATCH_TEST_REDIS_CLUSTER_URL=redis-cluster://... go test -run '^$' -bench 'StoreCluster/FanOut' ./store/redis
func BenchmarkStoreCluster(b *testing.B) {
	url := clusterURL(b)
	storetest.Benchmarks(b, func(b *testing.B) store.Store {
		r := openRouter(b, url, newClusterPrefix(b, url))
		b.Cleanup(func() { r.Close() })
		return r
	})
}
