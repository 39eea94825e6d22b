#!/usr/bin/env bash
# Starts the local Redis Cluster the redis-cluster:// test suites run on:
# three primaries and three replicas on 127.0.0.1 ports 7000-7005 (cluster
# bus ports 17000-17005), without persistence, with a short
# cluster-node-timeout. Idempotent: a cluster already up is left alone, a
# node that is down is started again (it rejoins from its nodes.conf), and
# the cluster is created only when its nodes have never met. It returns
# once the cluster reports cluster_state:ok, and prints the store URL:
#
#   redis-cluster://127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002
#
# Environment: LATCH_REDIS_CLUSTER_DIR, where the nodes keep their
# nodes.conf and logs (default /tmp/latch-redis-cluster).
#
# Stop it with test/rediscluster/stop.sh.
set -euo pipefail

dir="${LATCH_REDIS_CLUSTER_DIR:-/tmp/latch-redis-cluster}"
ports=(7000 7001 7002 7003 7004 7005)
host=127.0.0.1

command -v redis-server >/dev/null 2>&1 || { echo "rediscluster: redis-server is not installed" >&2; exit 1; }
command -v redis-cli >/dev/null 2>&1 || { echo "rediscluster: redis-cli is not installed" >&2; exit 1; }

cli() { redis-cli -h "$host" -p "$1" "${@:2}"; }
up() { [ "$(cli "$1" ping 2>/dev/null)" = "PONG" ]; }
state_ok() { cli 7000 cluster info 2>/dev/null | tr -d '\r' | grep -qx 'cluster_state:ok'; }
known_nodes() { cli "$1" cluster info 2>/dev/null | tr -d '\r' | sed -n 's/^cluster_known_nodes://p'; }

mkdir -p "$dir"
for p in "${ports[@]}"; do
  up "$p" && continue
  mkdir -p "$dir/$p"
  redis-server --daemonize yes --bind "$host" --port "$p" \
    --cluster-enabled yes --cluster-config-file "$dir/$p/nodes.conf" --cluster-node-timeout 2000 \
    --save "" --appendonly no --dir "$dir/$p" --logfile "$dir/$p/redis.log" \
    --pidfile "$dir/$p/redis.pid"
done
for p in "${ports[@]}"; do
  for _ in $(seq 1 50); do up "$p" && break; sleep 0.1; done
  up "$p" || { echo "rediscluster: node $host:$p does not answer (see $dir/$p/redis.log)" >&2; exit 1; }
done

# Nodes that have never met (each knows only itself) are made a cluster;
# nodes that restarted from their nodes.conf find each other again.
if ! state_ok && [ "$(known_nodes 7000)" = "1" ]; then
  addrs=()
  for p in "${ports[@]}"; do addrs+=("$host:$p"); done
  redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes >"$dir/create.log" 2>&1 ||
    { cat "$dir/create.log" >&2; exit 1; }
fi

for _ in $(seq 1 300); do
  if state_ok; then
    # Every node must agree, not only the first: the suites may reach any.
    all=1
    for p in "${ports[@]}"; do
      cli "$p" cluster info | tr -d '\r' | grep -qx 'cluster_state:ok' || all=0
    done
    if [ "$all" = 1 ]; then
      echo "redis-cluster://$host:7000,$host:7001,$host:7002"
      exit 0
    fi
  fi
  sleep 0.1
done
echo "rediscluster: the cluster on $host:7000-7005 did not reach cluster_state:ok in 30 s" >&2
cli 7000 cluster info >&2 || true
exit 1
