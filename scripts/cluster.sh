#!/usr/bin/env bash
# A local Redis Cluster with the dreamtown module loaded on every node:
# 3 masters, no replicas, on loopback ports, state under run/cluster/.
#
#   scripts/cluster.sh start    start the nodes, create the cluster, wait for cluster_state:ok
#   scripts/cluster.sh stop     stop the nodes (by their pid files) and remove run/cluster/
#   scripts/cluster.sh status   CLUSTER INFO / NODES of the first node
#
# Settings (environment): CLUSTER_PORT (first port, default 7001; the nodes
# use CLUSTER_PORT, +1, +2 and their bus ports +10000), CLUSTER_MASTERS (3),
# CLUSTER_DIR (run/cluster), DREAMTOWN_MODULE (target/release/libdreamtown.so),
# DREAMTOWN_SERVER (redis-server or valkey-server; default redis-server on
# PATH), DREAMTOWN_CLI (default: the cli beside the server, else on PATH).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
FIRST_PORT="${CLUSTER_PORT:-7001}"
MASTERS="${CLUSTER_MASTERS:-3}"
DIR="${CLUSTER_DIR:-$ROOT/run/cluster}"
MODULE="${DREAMTOWN_MODULE:-$ROOT/target/release/libdreamtown.so}"
DEADLINE_SECS=30
SERVER="${DREAMTOWN_SERVER:-redis-server}"
cli_name=redis-cli
[[ "$(basename "$SERVER")" == valkey* ]] && cli_name=valkey-cli
CLI="${DREAMTOWN_CLI:-}"
if [[ -z "$CLI" ]]; then
  if [[ "$SERVER" == */* && -x "$(dirname "$SERVER")/$cli_name" ]]; then
    CLI="$(dirname "$SERVER")/$cli_name"
  else
    CLI="$cli_name"
  fi
fi

ports() {
  local i
  for ((i = 0; i < MASTERS; i++)); do echo $((FIRST_PORT + i)); done
}

running() { # port
  local pidfile="$DIR/$1/redis.pid"
  [[ -f "$pidfile" ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null
}

wait_for() { # description, command...
  local what="$1"; shift
  local started=$SECONDS
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS - started > DEADLINE_SECS)); then
      echo "timed out waiting for $what" >&2
      return 1
    fi
    sleep 0.1
  done
}

cluster_ok() { # port
  "$CLI" -p "$1" CLUSTER INFO | grep -q '^cluster_state:ok'
}

start() {
  [[ -f "$MODULE" ]] || { echo "no module at $MODULE: run 'make build' first" >&2; exit 1; }
  local port addresses=()
  for port in $(ports); do
    if running "$port"; then
      echo "node $port is already running: scripts/cluster.sh stop first" >&2
      exit 1
    fi
    if "$CLI" -p "$port" PING >/dev/null 2>&1; then
      echo "port $port is taken by another server; set CLUSTER_PORT" >&2
      exit 1
    fi
  done
  for port in $(ports); do
    mkdir -p "$DIR/$port"
    "$SERVER" --port "$port" --bind 127.0.0.1 \
      --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000 \
      --save '' --appendonly no --dir "$DIR/$port" \
      --daemonize yes --pidfile "$DIR/$port/redis.pid" --logfile "$DIR/$port/redis.log" \
      --loadmodule "$MODULE"
    addresses+=("127.0.0.1:$port")
  done
  for port in $(ports); do
    wait_for "node $port to answer" "$CLI" -p "$port" PING
  done
  "$CLI" --cluster create "${addresses[@]}" --cluster-replicas 0 --cluster-yes </dev/null
  for port in $(ports); do
    wait_for "cluster_state:ok on $port" cluster_ok "$port"
  done
  local first
  first="$(ports | head -n1)"
  cat <<EOF

== dreamtown cluster up: ${addresses[*]} (module on every node, $SERVER)
== connect:   $CLI -c -p $first
== try:       $CLI -c -p $first DREAMS.FIRE acme web 3
==            $CLI -c -p $first DREAMS.LEN acme
== slot:      $CLI -p $first CLUSTER KEYSLOT acme
== Rust:      redis::cluster::ClusterClient::new(vec!["redis://127.0.0.1:$first/"])
== stop:      scripts/cluster.sh stop   (or: make cluster-stop)
EOF
}

stop() {
  local port pid stopped=0
  for port in $(ports); do
    if running "$port"; then
      pid="$(cat "$DIR/$port/redis.pid")"
      kill "$pid"
      wait_for "node $port (pid $pid) to exit" bash -c "! kill -0 $pid"
      stopped=$((stopped + 1))
    fi
  done
  rm -rf "$DIR"
  echo "== stopped $stopped node(s)"
}

status() {
  local first
  first="$(ports | head -n1)"
  "$CLI" -p "$first" CLUSTER INFO | grep -E '^cluster_(state|slots_assigned|known_nodes)'
  "$CLI" -p "$first" CLUSTER NODES
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
