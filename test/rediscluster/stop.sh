#!/usr/bin/env bash
# Stops the nodes test/rediscluster/start.sh started (SHUTDOWN NOSAVE) and
# removes their directory, so that the next start creates a new cluster.
set -uo pipefail

dir="${LATCH_REDIS_CLUSTER_DIR:-/tmp/latch-redis-cluster}"
for p in 7000 7001 7002 7003 7004 7005; do
  redis-cli -h 127.0.0.1 -p "$p" shutdown nosave >/dev/null 2>&1 || true
done
rm -rf "$dir"
