#!/usr/bin/env bash
# make test-seeds: the seeds' own test suites against dreamtown.
#
# 1. Fetch exocortex-dreams 0.5.4 (and the exocortex crates it needs) from
#    the crates registry with cargo, pinned (a throwaway Cargo project in
#    target/seeds/fetch), and copy the unpacked sources to target/seeds/src.
# 2. Swap the transport: our seeds/adapters/exocortex_fire.rs replaces
#    their src/fire.rs whole; their tests' `redis` becomes
#    seeds/adapters/redis_view (key-name mappings, seeds/MAPPINGS.md).
#    Build fix: exocortex-storage 0.5.4 does not compile with this rustc
#    ("queries overflow the depth limit!", falkor.rs:2301) without
#    `#![recursion_limit = "256"]`, which is added to its lib.rs.
# 3. Run each test of tests/fire_live.rs in its own process against a
#    redis-server with the module, after FLUSHALL and CONFIG RESETSTAT; a
#    test passes only if it passed AND DREAMS.* commands reached the server
#    (INFO commandstats). Expectations: seeds/exocortex-dreams.tsv.
#
# Everything lives in target/seeds/ (the build is cached in
# target/seeds/target). Needs protoc (exocortex-wire's build script).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SEEDS=${SEEDS_DIR:-$ROOT/target/seeds}
MODULE=${DREAMTOWN_MODULE:-$ROOT/target/release/libdreamtown.so}
SERVER=${DREAMTOWN_SERVER:-redis-server}
CLI=${DREAMTOWN_CLI:-redis-cli}
PORT=${SEEDS_PORT:-$((20000 + RANDOM % 20000))}
CARGO=${CARGO:-cargo}
EXO=exocortex-dreams-0.5.4
STORE=exocortex-storage-0.5.4

command -v protoc >/dev/null || { echo "FAIL test-seeds: protoc is missing (apt-get install protobuf-compiler)"; exit 1; }
[ -f "$MODULE" ] || { echo "FAIL test-seeds: no module at $MODULE (make build)"; exit 1; }

start=$(date +%s)
mkdir -p "$SEEDS/fetch/src" "$SEEDS/src"
cat > "$SEEDS/fetch/Cargo.toml" <<TOML
[package]
name = "seeds-fetch"
version = "0.0.0"
edition = "2021"
publish = false
[dependencies]
exocortex-dreams = "=0.5.4"
[workspace]
TOML
: > "$SEEDS/fetch/src/lib.rs"
(cd "$SEEDS/fetch" && $CARGO fetch --quiet)
REG=$($CARGO metadata --quiet --format-version 1 --manifest-path "$SEEDS/fetch/Cargo.toml" \
  | python3 -c 'import json,sys; m=json.load(sys.stdin); print([p["manifest_path"] for p in m["packages"] if p["name"]=="exocortex-dreams"][0])')
REG=$(dirname "$(dirname "$REG")")

# Their sources, copied file by file only when they differ (cargo then
# rebuilds only what changed: the cache stays warm).
# put SRC DEST: copy only when different, so the cache stays warm.
put() { cmp -s "$1" "$2" || cp "$1" "$2"; }
sync_crate() {
  local crate=$1
  (cd "$REG/$crate" && find . -type f ! -name Cargo.toml ! -name .cargo-ok ! -name Cargo.toml.orig) | while read -r f; do
    mkdir -p "$SEEDS/src/$crate/$(dirname "$f")"
    put "$REG/$crate/$f" "$SEEDS/src/$crate/$f"
  done
}
sync_crate $EXO
sync_crate $STORE
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# exocortex-storage: the recursion limit, and its own workspace.
{ echo '#![recursion_limit = "256"]'; cat "$REG/$STORE/src/lib.rs"; } > "$tmp/lib.rs"
put "$tmp/lib.rs" "$SEEDS/src/$STORE/src/lib.rs"
{ cat "$REG/$STORE/Cargo.toml"; printf '\n[workspace]\n'; } > "$tmp/store.toml"
put "$tmp/store.toml" "$SEEDS/src/$STORE/Cargo.toml"

# The view crate, pointing at this tree's client.
mkdir -p "$SEEDS/src/redis_view/src"
sed "s|@CLIENT@|$ROOT/client|" "$ROOT/seeds/adapters/redis_view/Cargo.toml" > "$tmp/view.toml"
put "$tmp/view.toml" "$SEEDS/src/redis_view/Cargo.toml"
put "$ROOT/seeds/adapters/redis_view/src/lib.rs" "$SEEDS/src/redis_view/src/lib.rs"

# exocortex-dreams: our transport, the view as its `redis`, the client.
put "$ROOT/seeds/adapters/exocortex_fire.rs" "$SEEDS/src/$EXO/src/fire.rs"
python3 - "$REG/$EXO/Cargo.toml" "$ROOT/client" > "$tmp/exo.toml" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
view = '[dependencies.redis]\npackage = "seed-redis-view"\npath = "../redis_view"\n'
text, n = re.subn(r'\[dependencies\.redis\]\n(?:[^\[]|\[(?!dependencies|dev-dependencies|features|lib|\[))*?(?=\n\[)', view, text, count=1)
assert n == 1, "no [dependencies.redis] in exocortex-dreams' Cargo.toml"
text += '\n[dependencies.dreamtown-client]\npath = "%s"\n' % sys.argv[2]
text += '\n[patch.crates-io]\nexocortex-storage = { path = "../exocortex-storage-0.5.4" }\n\n[workspace]\n'
sys.stdout.write(text)
PY
put "$tmp/exo.toml" "$SEEDS/src/$EXO/Cargo.toml"

build_start=$(date +%s)
(cd "$SEEDS/src/$EXO" && $CARGO test --quiet --no-run --test fire_live --features integration,testing \
   --target-dir "$SEEDS/target" --message-format=json 2>"$SEEDS/build.log") > "$SEEDS/build.json" \
   || { tail -40 "$SEEDS/build.log"; echo "FAIL test-seeds: building exocortex-dreams' fire_live with the adapter"; exit 1; }
BIN=$(python3 -c 'import json,sys
for line in open(sys.argv[1]):
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("target", {}).get("name") == "fire_live" and m.get("executable"):
        print(m["executable"])' "$SEEDS/build.json" | tail -1)
echo "seeds: fetched and built in $(( $(date +%s) - start ))s (build $(( $(date +%s) - build_start ))s)"

# The server.
DIR=$(mktemp -d)
"$SERVER" --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$DIR" \
  --loadmodule "$MODULE" --daemonize yes --pidfile "$DIR/pid" --logfile "$DIR/log"
cleanup() { [ -f "$DIR/pid" ] && kill "$(cat "$DIR/pid")" 2>/dev/null; rm -rf "$tmp" "$DIR"; }
trap cleanup EXIT
for _ in $(seq 100); do "$CLI" -p "$PORT" PING >/dev/null 2>&1 && break; sleep 0.05; done
cli() { "$CLI" -p "$PORT" "$@"; }
dreams_calls() {
  cli INFO commandstats | tr -d '\r' | awk -F'[=,:]' 'tolower($1) ~ /^cmdstat_dreams\./ { n += $3 } END { print n + 0 }'
}

expect() { awk -F'\t' -v t="$1" '$1 == t { print $2 "\t" $3 "\t" $4 }' "$ROOT/seeds/exocortex-dreams.tsv"; }
pass=0; fail=0; dev=0
for test in $("$BIN" --list --format terse | sed -n 's/: test$//p'); do
  cli FLUSHALL >/dev/null; cli CONFIG RESETSTAT >/dev/null
  if REDIS_URL="redis://127.0.0.1:$PORT/" "$BIN" --exact "$test" --test-threads=1 >"$DIR/out" 2>&1; then ok=1; else ok=0; fi
  calls=$(dreams_calls)
  IFS=$'\t' read -r kind doc why <<<"$(expect "$test")" || true
  if [ "$kind" = deviation ]; then
    if [ $ok = 1 ]; then echo "FAIL exocortex-dreams::$test  listed as a deviation ($doc) but passed: update seeds/exocortex-dreams.tsv"; fail=$((fail + 1));
    else echo "DEVIATION exocortex-dreams::$test  ($doc: $why)"; dev=$((dev + 1)); fi
  elif [ "$kind" = no-transport ]; then
    if [ $ok = 1 ] && [ "$calls" = 0 ]; then echo "PASS exocortex-dreams::$test  (no DREAMS.* call, as listed: $why)"; pass=$((pass + 1));
    else echo "FAIL exocortex-dreams::$test  listed as touching no transport: passed=$ok, $calls DREAMS.* calls"; fail=$((fail + 1)); fi
  elif [ $ok = 1 ] && [ "$calls" -gt 0 ]; then
    echo "PASS exocortex-dreams::$test  ($calls DREAMS.* calls)"; pass=$((pass + 1))
  elif [ $ok = 1 ]; then
    echo "FAIL exocortex-dreams::$test  passed without reaching dreamtown (0 DREAMS.* calls)"; fail=$((fail + 1))
  else
    echo "FAIL exocortex-dreams::$test"; sed 's/^/    /' "$DIR/out" | grep -v '^    $' | tail -15; fail=$((fail + 1))
  fi
done
echo "seeds: $pass passed, $dev listed deviations, $fail failed ($(( $(date +%s) - start ))s)"
[ $fail = 0 ] && [ $pass -gt 0 ]
