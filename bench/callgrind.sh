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

valgrind --tool=callgrind --collect-atstart=no --toggle-collect=processCommand \
  --callgrind-out-file="$OUT/callgrind.out" \
  redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$OUT" \
  --loadmodule "$MODULE" >"$OUT/valgrind.log" 2>&1 &
VG=$!
for _ in $(seq 1 300); do
  redis-cli -p "$PORT" PING >/dev/null 2>&1 && break
  sleep 0.1
done
cli() { redis-cli -p "$PORT" "$@"; }
cli CONFIG SET dreamtown.queue-max 1000000000 >/dev/null
args=()
for arg in "$@"; do
  if [[ "$arg" =~ ^\{sha:(.+)\}$ ]]; then
    arg="$(cli SCRIPT LOAD "$(cat "$ROOT/tests/fixtures/seed-lua/${BASH_REMATCH[1]}")")"
  fi
  args+=("$arg")
done
echo "first reply: $(cli "${args[@]}" | tr '\n' ' ')" >&2
random=()
[[ -n "${RANDOM_KEYSPACE:-}" ]] && random=(-r "$RANDOM_KEYSPACE")
redis-benchmark -p "$PORT" -n "$N" -P 32 -c 1 -q "${random[@]}" "${args[@]}" >/dev/null 2>&1
cli SHUTDOWN NOSAVE >/dev/null 2>&1 || true
wait "$VG" || true
total="$(callgrind_annotate "$OUT/callgrind.out" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}')"
# N measured calls, the first call, CONFIG SET, SCRIPT LOADs, SHUTDOWN.
echo "$* : $(( total / (N + 3) )) instructions per call (N=$N)"
[[ -n "${BUDGET:-}" ]] && python3 "$ROOT/bench/budget.py" "$OUT/callgrind.out" "$(( N + 3 ))"
if [[ -n "${KEEP:-}" ]]; then echo "kept $OUT/callgrind.out" >&2; else rm -rf "$OUT"; fi
