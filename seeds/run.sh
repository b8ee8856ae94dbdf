#!/usr/bin/env bash
# make test-seeds: the seeds' own test suites against dreamtown.
#
# 1. Fetch exocortex-dreams 0.5.4 (and the exocortex crates it needs) and
#    tinytown 0.10.0 from the crates registry with cargo, pinned (a
#    throwaway Cargo project in target/seeds/fetch), and copy the unpacked
#    sources to target/seeds/src. Nothing of theirs is committed here.
# 2. Swap the transport, a file of ours replacing theirs whole:
#    seeds/adapters/exocortex_fire.rs for exocortex-dreams' src/fire.rs,
#    seeds/adapters/tinytown_channel.rs for tinytown's src/channel.rs (both
#    over dreamtown-client, with seeds/adapters/dreamtown_bridge.rs beside
#    them). exocortex-dreams' tests' `redis` becomes seeds/adapters/redis_view
#    (key-name mappings, seeds/MAPPINGS.md).
#    Build fix: exocortex-storage 0.5.4 does not compile with this rustc
#    ("queries overflow the depth limit!", falkor.rs:2301) without
#    `#![recursion_limit = "256"]`, which is added to its lib.rs.
# 3. Run each test in its own process against a redis-server with the
#    module, after FLUSHALL and CONFIG RESETSTAT: a test passes only if it
#    passed AND DREAMS.* (exocortex-dreams) or TOWN.* (tinytown) commands
#    reached the server (INFO commandstats). Expectations per test:
#    seeds/exocortex-dreams.tsv, seeds/tinytown.tsv.
#
# Everything lives in target/seeds/ (the builds are cached in
# target/seeds/target-<crate>). Needs protoc (exocortex-wire's build script).
# SEEDS_ONLY=exocortex|tinytown runs one seed. SEEDS_STEP=fetch stops after
# step 2: the sources are in target/seeds/src, nothing built or run (make
# test-deps builds exocortex-wire from there in an empty Debian).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SEEDS=${SEEDS_DIR:-$ROOT/target/seeds}
MODULE=${DREAMTOWN_MODULE:-$ROOT/target/release/libdreamtown.so}
SERVER=${DREAMTOWN_SERVER:-redis-server}
CLI=${DREAMTOWN_CLI:-redis-cli}
PORT=${SEEDS_PORT:-$((20000 + RANDOM % 20000))}
CARGO=${CARGO:-cargo}
ONLY=${SEEDS_ONLY:-}
STEP=${SEEDS_STEP:-all}
EXO=exocortex-dreams-0.5.4
STORE=exocortex-storage-0.5.4
TT=tinytown-0.10.0

command -v protoc >/dev/null || { echo "FAIL test-seeds: protoc is missing (make deps installs protobuf-compiler and libprotobuf-dev)"; exit 1; }
[ "$STEP" = fetch ] || [ -f "$MODULE" ] || { echo "FAIL test-seeds: no module at $MODULE (make build)"; exit 1; }

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
tinytown = "=0.10.0"
[workspace]
TOML
: > "$SEEDS/fetch/src/lib.rs"
(cd "$SEEDS/fetch" && $CARGO fetch --quiet)
REG=$($CARGO metadata --quiet --format-version 1 --manifest-path "$SEEDS/fetch/Cargo.toml" \
  | python3 -c 'import json,sys; m=json.load(sys.stdin); print([p["manifest_path"] for p in m["packages"] if p["name"]=="exocortex-dreams"][0])')
REG=$(dirname "$(dirname "$REG")")

# put SRC DEST: copy only when different, so cargo's cache stays warm.
put() { cmp -s "$1" "$2" || { mkdir -p "$(dirname "$2")"; cp "$1" "$2"; }; }
# Their sources, file by file (their Cargo.toml is written below).
# sync_crate CRATE [FILE]: all but FILE (the one we replace) and their
# manifest; their Cargo.lock (the pins) only the first time, as cargo then
# adds our dependencies to it.
sync_crate() {
  local crate=$1 skip=${2:-}
  (cd "$REG/$crate" && find . -type f ! -name Cargo.toml ! -name .cargo-ok ! -name Cargo.toml.orig ! -name Cargo.lock) | while read -r f; do
    [ "$f" = "./$skip" ] || put "$REG/$crate/$f" "$SEEDS/src/$crate/$f"
  done
  if [ -f "$REG/$crate/Cargo.lock" ] && [ ! -f "$SEEDS/src/$crate/Cargo.lock" ]; then cp "$REG/$crate/Cargo.lock" "$SEEDS/src/$crate/"; fi
}
tmp=$(mktemp -d)
DIR=$(mktemp -d)
cleanup() { [ -f "$DIR/pid" ] && kill "$(cat "$DIR/pid")" 2>/dev/null; rm -rf "$tmp" "$DIR"; }
trap cleanup EXIT

# manifest SRC DEST [python edits...]: their Cargo.toml, edited.
manifest() {
  python3 - "$@" "$ROOT/client" > "$tmp/manifest" <<'PY'
import re, sys
src, rename = sys.argv[1], sys.argv[2]
client = sys.argv[-1]
text = open(src).read()
if rename:
    view = '[dependencies.redis]\npackage = "seed-redis-view"\npath = "../redis_view"\n'
    text, n = re.subn(r'\[dependencies\.redis\]\n(?:[^\[]|\[(?!dependencies|dev-dependencies|features|lib|\[))*?(?=\n\[)', view, text, count=1)
    assert n == 1, "no [dependencies.redis] in " + src
text += '\n[dependencies.dreamtown-client]\npath = "%s"\n' % client
if rename:
    text += '\n[patch.crates-io]\nexocortex-storage = { path = "../exocortex-storage-0.5.4" }\n'
text += '\n[workspace]\n'
sys.stdout.write(text)
PY
}

# binary CRATE_DIR TEST FEATURES: build one test target, print its path.
binary() {
  # One target dir per seed: their lockfiles resolve dreamtown's own
  # dependencies differently, and in one dir each build would evict the other's.
  local dir=$1 test=$2 features=$3 json="$SEEDS/build-$2.json"
  (cd "$dir" && $CARGO test --quiet --no-run --test "$test" ${features:+--features "$features"} \
     --target-dir "$SEEDS/target-$(basename "$dir")" --message-format=json 2>"$SEEDS/build-$test.log") > "$json" \
     || { tail -40 "$SEEDS/build-$test.log" >&2; echo "FAIL test-seeds: building $test with the adapter" >&2; return 1; }
  python3 -c 'import json,sys
for line in open(sys.argv[1]):
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("target", {}).get("name") == sys.argv[2] and m.get("executable"):
        print(m["executable"])' "$json" "$test" | tail -1
}

build_start=$(date +%s)
declare -a SUITES=()
if [ -z "$ONLY" ] || [ "$ONLY" = exocortex ]; then
  sync_crate $EXO src/fire.rs
  sync_crate $STORE src/lib.rs
  # exocortex-storage: the recursion limit, and its own workspace.
  { echo '#![recursion_limit = "256"]'; cat "$REG/$STORE/src/lib.rs"; } > "$tmp/lib.rs"
  put "$tmp/lib.rs" "$SEEDS/src/$STORE/src/lib.rs"
  { cat "$REG/$STORE/Cargo.toml"; printf '\n[workspace]\n'; } > "$tmp/store.toml"
  put "$tmp/store.toml" "$SEEDS/src/$STORE/Cargo.toml"
  # The view crate, pointing at this tree's client.
  sed "s|@CLIENT@|$ROOT/client|" "$ROOT/seeds/adapters/redis_view/Cargo.toml" > "$tmp/view.toml"
  put "$tmp/view.toml" "$SEEDS/src/redis_view/Cargo.toml"
  put "$ROOT/seeds/adapters/redis_view/src/lib.rs" "$SEEDS/src/redis_view/src/lib.rs"
  # exocortex-dreams: our transport, the view as its tests' `redis`, the client.
  put "$ROOT/seeds/adapters/exocortex_fire.rs" "$SEEDS/src/$EXO/src/fire.rs"
  put "$ROOT/seeds/adapters/dreamtown_bridge.rs" "$SEEDS/src/$EXO/src/dreamtown_bridge.rs"
  manifest "$REG/$EXO/Cargo.toml" rename
  put "$tmp/manifest" "$SEEDS/src/$EXO/Cargo.toml"
  bin=""
  [ "$STEP" = fetch ] || bin=$(binary "$SEEDS/src/$EXO" fire_live integration,testing)
  SUITES+=("exocortex-dreams|$bin|$ROOT/seeds/exocortex-dreams.tsv|dreams")
fi
if [ -z "$ONLY" ] || [ "$ONLY" = tinytown ]; then
  sync_crate $TT src/channel.rs
  put "$ROOT/seeds/adapters/tinytown_channel.rs" "$SEEDS/src/$TT/src/channel.rs"
  put "$ROOT/seeds/adapters/dreamtown_bridge.rs" "$SEEDS/src/$TT/src/dreamtown_bridge.rs"
  manifest "$REG/$TT/Cargo.toml" ""
  put "$tmp/manifest" "$SEEDS/src/$TT/Cargo.toml"
  for test in integration_tests mcp_integration_tests townhall_integration_tests; do
    bin=""
    [ "$STEP" = fetch ] || bin=$(binary "$SEEDS/src/$TT" $test "")
    SUITES+=("tinytown::$test|$bin|$ROOT/seeds/tinytown.tsv|town")
  done
fi
if [ "$STEP" = fetch ]; then echo "seeds: fetched into $SEEDS/src in $(( $(date +%s) - start ))s"; exit 0; fi
echo "seeds: fetched and built in $(( $(date +%s) - start ))s (build $(( $(date +%s) - build_start ))s)"

# The server.
"$SERVER" --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$DIR" \
  --loadmodule "$MODULE" --daemonize yes --pidfile "$DIR/pid" --logfile "$DIR/log"
for _ in $(seq 100); do "$CLI" -p "$PORT" PING >/dev/null 2>&1 && break; sleep 0.05; done
cli() { "$CLI" -p "$PORT" "$@"; }
# calls FAMILY: how many FAMILY.* commands the server ran since RESETSTAT.
calls() {
  cli INFO commandstats | tr -d '\r' | awk -F'[=,:]' -v f="cmdstat_$1." 'index(tolower($1), f) == 1 { n += $3 } END { print n + 0 }'
}
# A home of their own: tinytown writes ~/.tt/config.toml.
mkdir -p "$DIR/home"

pass=0; fail=0; dev=0; na=0
for suite in "${SUITES[@]}"; do
  IFS='|' read -r label bin expectations family <<<"$suite"
  FAMILY=$(echo "$family" | tr a-z A-Z)
  for test in $("$bin" --list --format terse | sed -n 's/: test$//p'); do
    cli FLUSHALL >/dev/null; cli CONFIG RESETSTAT >/dev/null
    if HOME="$DIR/home" REDIS_URL="redis://127.0.0.1:$PORT/" timeout 120 "$bin" --exact "$test" --test-threads=1 >"$DIR/out" 2>&1; then ok=1; else ok=0; fi
    n=$(calls "$family")
    # tinytown's docket is stream commands on dreamtown's keys, no TOWN.*:
    # what it left in dreamtown's Town layout (`tt:{<town>}:...`) counts.
    keys=0
    if [ "$family" = town ]; then keys=$(cli --scan --pattern 'tt:{*' | wc -l); fi
    reached=$((n + keys))
    what="$n $FAMILY.* calls"
    if [ "$family" = town ]; then what="$what, $keys dreamtown keys"; fi
    kind=""; doc=""; why=""; sign=""
    IFS=$'\t' read -r kind doc why sign <<<"$(awk -F'\t' -v s="$label" -v t="$test" '$1 == s"::"t || $1 == t { print $2 "\t" $3 "\t" $4 "\t" $5; exit }' "$expectations")" || true
    name="$label::$test"
    case "$kind" in
      deviation)
        # It must fail, and at the documented difference (column 5).
        if [ $ok = 1 ]; then echo "FAIL $name  listed as a deviation ($doc) but passed: update $(basename "$expectations")"; fail=$((fail + 1));
        elif [ -n "$sign" ] && ! grep -qF -- "$sign" "$DIR/out"; then echo "FAIL $name  failed, but not with the listed deviation's '$sign'"; grep -v '^$' "$DIR/out" | tail -12 | sed 's/^/    /'; fail=$((fail + 1));
        else echo "DEVIATION $name  ($doc: $why)"; dev=$((dev + 1)); fi ;;
      no-transport)
        if [ $ok = 1 ] && [ "$reached" = 0 ]; then echo "PASS $name  (no $FAMILY.* call, as listed: $why)"; pass=$((pass + 1));
        else echo "FAIL $name  listed as passing without touching the transport: passed=$ok, $what"; fail=$((fail + 1)); fi ;;
      n/a)
        if [ "$reached" = 0 ]; then echo "N/A $name  ($([ $ok = 1 ] && echo passed || echo failed), did not touch the transport: $why)"; na=$((na + 1));
        else echo "FAIL $name  listed as not applying ($why) but touched the transport: $what"; fail=$((fail + 1)); fi ;;
      *)
        if [ $ok = 1 ] && [ "$reached" -gt 0 ]; then echo "PASS $name  ($what)"; pass=$((pass + 1));
        elif [ $ok = 1 ]; then echo "FAIL $name  passed without reaching dreamtown ($what)"; fail=$((fail + 1));
        else echo "FAIL $name"; grep -v '^$' "$DIR/out" | tail -12 | sed 's/^/    /'; fail=$((fail + 1)); fi ;;
    esac
  done
done
echo "seeds: $pass passed, $dev listed deviations, $na not applying, $fail failed ($(( $(date +%s) - start ))s)"
[ $fail = 0 ] && [ $pass -gt 0 ]
