#!/usr/bin/env bash
# Instructions per call of one command, counted by callgrind inside
# redis-server (deterministic, unlike ops/s on a shared machine). Counts
# everything under processCommand (ACL, dispatch, the command, propagation,
# reply buffering), not socket I/O or parsing.
#
#   bench/callgrind.sh DREAMS.RECORD bench web 1 1 0
#   N=5000 bench/callgrind.sh HINCRBY h f 1
#   KEEP=1 bench/callgrind.sh ...   keep the callgrind.out for callgrind_annotate
#   BUDGET=1 bench/callgrind.sh ... also split the count: Redis around the
#                                   module, each module API call, the
#                                   module's allocations and own code
#                                   (bench/budget.py)
#   CLUSTER=1 bench/callgrind.sh ...   in a single-node cluster owning every
#                                   slot (the module's cluster-mode cost)
#   RANDOM_KEYSPACE=100000000 bench/callgrind.sh ... EVENT e:__rand_int__ ...
#                                   redis-benchmark -r: __rand_int__ varies
#
# EVALSHA calls may name a seed script as {sha:record_write.lua}.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
MODULE="${DREAMTOWN_MODULE:-$ROOT/target/release/libdreamtown.so}"
N="${N:-20000}"
OUT="$(mktemp -d /tmp/dreamtown-callgrind-XXXXXX)"
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
# A cluster node also binds port + 10000: keep it below 55536.
while [[ -n "${CLUSTER:-}" && "$PORT" -gt 55535 ]]; do
  PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
done

cluster=()
[[ -n "${CLUSTER:-}" ]] && cluster=(--cluster-enabled yes --cluster-config-file nodes.conf)
valgrind --tool=callgrind --collect-atstart=no --toggle-collect=processCommand \
  --callgrind-out-file="$OUT/callgrind.out" \
  redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$OUT" \
  --loadmodule "$MODULE" "${cluster[@]}" >"$OUT/valgrind.log" 2>&1 &
VG=$!
for _ in $(seq 1 300); do
  redis-cli -p "$PORT" PING >/dev/null 2>&1 && break
  sleep 0.1
done
cli() { redis-cli -p "$PORT" "$@"; }
cli CONFIG SET dreamtown.queue-max 1000000000 >/dev/null
if [[ -n "${CLUSTER:-}" ]]; then
  cli CLUSTER ADDSLOTSRANGE 0 16383 >/dev/null
  for _ in $(seq 1 300); do
    cli CLUSTER INFO | grep -q cluster_state:ok && break
    sleep 0.1
  done
fi
args=()
for arg in "$@"; do
  if [[ "$arg" =~ ^\{sha:(.+)\}$ ]]; then
    arg="$(cli SCRIPT LOAD "$(cat "$ROOT/tests/fixtures/seed-lua/${BASH_REMATCH[1]}")")"
  fi
  args+=("$arg")
done
echo "first reply: $(cli "${args[@]}" | tr '\n' ' ')" >&2
# In a cluster, the slot assignment is not part of the count: zero it (the
# calls then counted are the N measured ones and SHUTDOWN).
calls_around=3
if [[ -n "${CLUSTER:-}" ]]; then
  callgrind_control -z "$VG" >/dev/null
  calls_around=1
fi
random=()
[[ -n "${RANDOM_KEYSPACE:-}" ]] && random=(-r "$RANDOM_KEYSPACE")
redis-benchmark -p "$PORT" -n "$N" -P 32 -c 1 -q "${random[@]}" "${args[@]}" >/dev/null 2>&1
cli SHUTDOWN NOSAVE >/dev/null 2>&1 || true
wait "$VG" || true
total="$(callgrind_annotate "$OUT/callgrind.out" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')"
# N measured calls, the first call, CONFIG SET, SCRIPT LOADs, SHUTDOWN.
echo "$* : $(( total / (N + calls_around) )) instructions per call (N=$N${CLUSTER:+, cluster})"
[[ -n "${BUDGET:-}" ]] && python3 "$ROOT/bench/budget.py" "$OUT/callgrind.out" "$(( N + calls_around ))"
if [[ -n "${KEEP:-}" ]]; then echo "kept $OUT/callgrind.out" >&2; else rm -rf "$OUT"; fi
