#!/usr/bin/env bash
# make test-package: install the Debian package `make dist` built, as an
# operator would, and use it (root: dpkg; Debian's redis-server 7.0).
#
#  1. lintian, if installed, finds nothing to say (errors and warnings).
#  2. dpkg -i; the three tools answer --version with the release's version.
#  3. Debian's redis-server started with a redis.conf that only adds
#     `include /etc/dreamtown/dreamtown.conf` (the packaged snippet) loads
#     the module: MODULE LIST shows the version; the snippet's settings are
#     the defaults.
#  4. A smoke run of both families (fire, drain with a lease, ack; send,
#     reliable receive, ack; agent state), the exporter scraped once, the
#     console's tenant list served once, and dreamtown-migrate --dry-run
#     against the server.
#  5. Data written, SAVE, the server stopped, dpkg --purge: the module,
#     tools and snippet are gone; the same redis-server without the module
#     loads the RDB and every key is there and readable.
#
# Prints one line per check and `N passed, N failed`; exits 1 on a failure.
# Leaves the machine as it found it (the package purged, the server stopped).
set -uo pipefail
cd "$(dirname "$0")/.."
REPO="$PWD"
VERSION=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
ARCH=$(dpkg --print-architecture)
DEB="${DEB:-$REPO/target/dist/dreamtown_${VERSION}_${ARCH}.deb}"
SERVER=/usr/bin/redis-server
CLI=/usr/bin/redis-cli
PASSED=0
FAILED=0

check() { # check <description> <command...>: one line, counted
  local what="$1"
  shift
  if "$@" >/dev/null 2>&1; then
    echo "ok    $what"
    PASSED=$((PASSED + 1))
  else
    echo "FAIL  $what"
    FAILED=$((FAILED + 1))
  fi
}
equals() { [[ "$1" == "$2" ]] || { echo "  expected '$2', got '$1'" >&2; return 1; }; }

[[ "$(id -u)" -eq 0 ]] || { echo "test-package: run as root (dpkg -i)" >&2; exit 1; }
[[ -f "$DEB" ]] || { echo "test-package: $DEB is missing (make dist)" >&2; exit 1; }
[[ -x "$SERVER" && -x "$CLI" ]] || { echo "test-package: needs Debian's redis-server and redis-cli (make deps)" >&2; exit 1; }
if dpkg-query -W -f='${Status}' dreamtown 2>/dev/null | grep -q "install ok installed"; then
  echo "test-package: a dreamtown package is already installed here; not touching it" >&2
  exit 1
fi

WORK=$(mktemp -d)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
EXPORTER_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
PID=""
EXPORTER_PID=""
CONSOLE_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
CONSOLE_PID=""
cleanup() {
  [[ -n "$EXPORTER_PID" ]] && kill "$EXPORTER_PID" 2>/dev/null
  [[ -n "$CONSOLE_PID" ]] && kill "$CONSOLE_PID" 2>/dev/null
  [[ -n "$PID" ]] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
  dpkg --purge dreamtown >/dev/null 2>&1
  rm -rf "$WORK"
}
trap cleanup EXIT

cli() { "$CLI" -p "$PORT" "$@"; }
start_server() { # start_server <conf>: in the background, wait until it answers
  "$SERVER" "$1" >"$WORK/server.log" 2>&1 &
  PID=$!
  for _ in $(seq 100); do
    cli PING 2>/dev/null | grep -q PONG && return 0
    kill -0 "$PID" 2>/dev/null || break
    sleep 0.1
  done
  cat "$WORK/server.log" >&2
  return 1
}
stop_server() { cli SHUTDOWN NOSAVE >/dev/null 2>&1; wait "$PID" 2>/dev/null; PID=""; }

echo "== test-package: $DEB"
if command -v lintian >/dev/null; then
  check "lintian: no errors or warnings" bash -c "lintian --tag-display-limit 0 '$DEB' 2>&1 | grep -v 'root privileges' | grep -q . && exit 1 || exit 0"
else
  echo "skip  lintian (not installed)"
fi

check "dpkg -i installs the package" dpkg -i "$DEB"
check "the module is at the standard path" test -f /usr/lib/redis/modules/dreamtown.so
check "the snippet is a conffile" bash -c "dpkg-query -W -f='\${Conffiles}' dreamtown | grep -q /etc/dreamtown/dreamtown.conf"
check "dreamtown-migrate --version" equals "$(dreamtown-migrate --version)" "dreamtown-migrate $VERSION"
check "dreamtown-exporter --version" equals "$(dreamtown-exporter --version)" "dreamtown-exporter $VERSION"
check "dreamtown-console --version" equals "$(dreamtown-console --version)" "dreamtown-console $VERSION"
check "man pages" bash -c "zcat /usr/share/man/man1/dreamtown-migrate.1.gz | grep -q dreamtown-migrate"

# An operator's redis.conf: Debian's defaults and one include line.
cat >"$WORK/redis.conf" <<CONF
port $PORT
bind 127.0.0.1
daemonize no
dir $WORK
dbfilename dump.rdb
appendonly no
save ""
include /etc/dreamtown/dreamtown.conf
CONF
check "redis-server starts with the packaged snippet" start_server "$WORK/redis.conf"
ENCODED=$(IFS=. read -r major minor patch <<<"$VERSION"; echo $((major * 10000 + minor * 100 + patch)))
check "MODULE LIST reports version $ENCODED" bash -c "'$CLI' -p $PORT MODULE LIST | grep -A3 -x dreamtown | grep -qx '$ENCODED'"
check "the snippet's settings are the defaults" equals "$(cli CONFIG GET dreamtown.queue-max | tail -n 1)" 1000

# Dreams: fire, drain with a lease, acknowledge.
check "DREAMS.FIRE" equals "$(cli DREAMS.FIRE acme notes 1)" queued
FIRE=$(cli DREAMS.DRAIN acme 0 NOQUIET LEASE 60)
check "DREAMS.DRAIN hands the fire out under a lease" bash -c "[[ '$FIRE' == *'\"fire_id\"'* ]] && [[ \$('$CLI' -p $PORT DREAMS.INFLIGHT acme | wc -l) -eq 2 ]]"
check "DREAMS.ACK acknowledges it" equals "$(cli DREAMS.ACK acme "$FIRE" SUCCESS | head -n 1)" acknowledged
# Town: send, reliable receive, acknowledge.
MESSAGE='{"id":"00000000-0000-4000-8000-000000000001","from":"conductor","to":"w1","type":"task","description":"build","priority":"normal","created_at":"2026-12-06T00:00:00Z","correlation_id":null}'
check "TOWN.SEND" equals "$(cli TOWN.SEND hq "$MESSAGE")" 1
check "TOWN.RECV ... RELIABLE" equals "$(cli TOWN.RECV hq w1 RELIABLE)" "$MESSAGE"
check "TOWN.ACK" equals "$(cli TOWN.ACK hq w1 00000000-0000-4000-8000-000000000001)" 1

# The exporter scrapes it; migrate looks at it.
dreamtown-exporter --redis "redis://127.0.0.1:$PORT" --listen "127.0.0.1:$EXPORTER_PORT" 2>"$WORK/exporter.log" &
EXPORTER_PID=$!
scrape() {
  for _ in $(seq 50); do
    curl -fsS "http://127.0.0.1:$EXPORTER_PORT/metrics" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}
check "the exporter serves the server's totals" bash -c "$(declare -f scrape); EXPORTER_PORT=$EXPORTER_PORT; scrape | grep -q '^dreamtown_node_dreams_fired_total{node=\"127.0.0.1:$PORT\"} 1'"
kill "$EXPORTER_PID" 2>/dev/null
EXPORTER_PID=""
check "dreamtown-migrate --dry-run reaches the server" dreamtown-migrate --dry-run --from "redis://127.0.0.1:$PORT" dreams --all

# Data that must outlive the package: a ready fire and a pending message.
cli DREAMS.FIRE keep notes 7 >/dev/null
cli TOWN.SEND hq '{"id":"00000000-0000-4000-8000-000000000002","from":"conductor","to":"w2","type":"task","description":"stay","priority":"normal","created_at":"2026-12-06T00:00:00Z","correlation_id":null}' >/dev/null
# The console lists the organization and the town (read-only: no token given).
dreamtown-console --redis "redis://127.0.0.1:$PORT" --listen "127.0.0.1:$CONSOLE_PORT" 2>"$WORK/console.log" &
CONSOLE_PID=$!
tenants() {
  for _ in $(seq 50); do
    curl -fsS "http://127.0.0.1:$CONSOLE_PORT/?part=live" 2>/dev/null | grep -q 'data-tenant="keep"' && curl -fsS "http://127.0.0.1:$CONSOLE_PORT/?part=live" | grep -q 'data-tenant="hq"' && return 0
    sleep 0.1
  done
  return 1
}
check "the console lists the organization and the town" bash -c "$(declare -f tenants); CONSOLE_PORT=$CONSOLE_PORT; tenants"
kill "$CONSOLE_PID" 2>/dev/null
CONSOLE_PID=""
KEYS_BEFORE=$(cli DBSIZE)
check "SAVE" equals "$(cli SAVE)" OK
stop_server

check "dpkg --purge removes the package" dpkg --purge dreamtown
check "the module is gone" test ! -e /usr/lib/redis/modules/dreamtown.so
check "the tools are gone" bash -c "! command -v dreamtown-migrate"
check "the snippet is gone" test ! -e /etc/dreamtown/dreamtown.conf

# The same data without the module.
sed -i '/^include /d' "$WORK/redis.conf"
check "redis-server starts without the module on the same data" start_server "$WORK/redis.conf"
check "dreamtown is not loaded" bash -c "! '$CLI' -p $PORT MODULE LIST | grep -q dreamtown"
check "every key is still there" equals "$(cli DBSIZE)" "$KEYS_BEFORE"
check "the ready fire is readable" bash -c "'$CLI' -p $PORT LRANGE 'exocortex:dreams:{keep}:queue' 0 -1 | grep -q notes"
check "the pending message is readable" bash -c "'$CLI' -p $PORT LRANGE 'tt:{hq}:inbox:w2' 0 -1 | grep -q stay"
stop_server

echo "package: $PASSED passed, $FAILED failed"
[[ "$FAILED" -eq 0 ]]
