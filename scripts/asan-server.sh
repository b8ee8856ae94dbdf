#!/usr/bin/env bash
# Build Debian 12's own redis-server with AddressSanitizer, for `make
# test-asan` (scripts/test-asan.sh), and print its path (the last line).
#
#   scripts/asan-server.sh            build once, then only print the path
#   scripts/asan-server.sh --rebuild  fetch and build again
#
# Not "a binary a registry ships" (the project's rule for every server it
# tests), on purpose: issue 44 asks for the integration suite against a
# redis-server built with AddressSanitizer, and no registry ships one. So it
# is Debian's own source package of the redis-server that `make deps`
# installs (7.0.15, with every patch Debian applies: its configuration
# defaults and the security fixes of bookworm-security), compiled by
# upstream's `make SANITIZER=address` with Debian's build flags, as a test
# instrument only: nothing else runs it and nothing of it is shipped.
#
# What differs from Debian's binary, and why: the allocator is libc's
# malloc, not jemalloc (SANITIZER=address sets MALLOC=libc: ASan must see
# every allocation and free, the module's RedisModule_Alloc included),
# lua, hiredis and the other deps/ are the vendored copies Debian's source
# carries (Debian's build uses them too), and USE_SYSTEMD is off (only
# sd_notify under supervision; nothing here is supervised). TLS is on, as
# Debian builds it (BUILD_TLS=yes).
#
# The version is the installed redis-server's (dpkg), so the sanitized
# binary is built from exactly the source of the binary `make test` runs;
# without one installed, the newest of bookworm, bookworm-updates and
# bookworm-security. The source comes through a private apt state in
# target/asan/apt (a deb-src entry per suite, the mirrors being the ones
# the machine's own apt sources name; apt checks the .dsc against the
# signed Release files) and is built in target/asan/build, then removed:
# what stays is target/asan/redis-<version>/redis-server (about 30 MB) and
# a stamp. A second run finds the stamp and costs nothing. Needs root only
# to install missing build tools (gcc, make, dpkg-dev, libssl-dev,
# pkg-config) with apt-get.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD/target/asan"
# Bump when the build below changes, so cached binaries are rebuilt.
RECIPE=1
BUILD_TOOLS=(gcc make libc6-dev dpkg-dev libssl-dev pkg-config)

log() { echo "== asan-server: $*" >&2; }

rebuild=0
case "${1:-}" in
  --rebuild) rebuild=1 ;;
  "") ;;
  *) log "usage: $0 [--rebuild]"; exit 2 ;;
esac

# The version to build: the installed redis-server's, else empty (newest).
installed=$(dpkg-query -W -f='${Version}' redis-server 2>/dev/null || true)
if [[ "$installed" != *deb12* ]]; then installed=""; fi

# Cached: the binary of the installed version (or of the last build when
# none is installed), built by this recipe.
cached_binary() {
  local dir
  for dir in "$ROOT"/redis-*; do
    [[ -f "$dir/stamp" && -x "$dir/redis-server" ]] || continue
    if [[ "$(cat "$dir/stamp")" == "recipe=$RECIPE version=${installed:-$(sed -n 's/.*version=//p' "$dir/stamp")}" ]]; then
      echo "$dir/redis-server"
      return 0
    fi
  done
  return 1
}

if ((!rebuild)) && binary=$(cached_binary); then
  echo "$binary"
  exit 0
fi

# The machine's own Debian mirrors: the archive's and the security one's
# (deb822 sources or one-line lists).
mirrors() {
  {
    grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{for (i = 2; i <= NF; i++) print $i}'
    grep -hsE '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
      awk '{for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) {print $i; break}}'
  } | grep -E '/debian(-security)?/?$' | awk '!seen[$0]++'
}
archive=$(mirrors | grep -v security | head -n1 || true)
security=$(mirrors | grep security | head -n1 || true)
[[ -n "$archive" ]] || { log "no Debian mirror found in the apt sources"; exit 1; }

missing=()
for pkg in "${BUILD_TOOLS[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  if [[ "$(id -u)" -ne 0 ]]; then log "run as root, or install: ${missing[*]}"; exit 1; fi
  log "installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# A private apt state that knows only Debian 12's sources.
state="$ROOT/apt"
rm -rf "$state"
mkdir -p "$state/lists/partial" "$state/cache/archives/partial" "$state/parts"
{
  printf 'Types: deb-src\nURIs: %s\nSuites: bookworm bookworm-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$archive"
  if [[ -n "$security" ]]; then
    printf '\nTypes: deb-src\nURIs: %s\nSuites: bookworm-security\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$security"
  fi
} >"$state/parts/bookworm-src.sources"
apt=(apt-get -q -o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$state/parts"
  -o "Dir::State::Lists=$state/lists" -o "Dir::Cache=$state/cache" -o Dir::State::status=/dev/null
  -o APT::Sandbox::User=root)
log "reading Debian 12's source lists (private apt state in $state)"
"${apt[@]}" update -qq

build="$ROOT/build"
rm -rf "$build"
mkdir -p "$build"
log "fetching Debian's source package redis${installed:+=$installed}"
(cd "$build" && "${apt[@]}" source --download-only "redis${installed:+=$installed}" >/dev/null)
dsc=$(ls "$build"/redis_*.dsc)
version=$(sed -n 's/^Version: //p' "$dsc")
version=${version#*:}
[[ "$version" == 7.0.* ]] || { log "Debian 12's redis is $version, not 7.0.x: check the build below still fits"; exit 1; }
# dpkg-source unpacks the orig tarball and applies debian/patches (quilt).
(cd "$build" && dpkg-source --no-check -x "$dsc" src >/dev/null)

# Debian's build flags (debian/rules: hardening=+all) through the
# environment, so that upstream's Makefile still appends its own
# (-fsanitize=address -fno-sanitize-recover=all -fno-omit-frame-pointer):
# flags given on make's command line would replace them.
log "building redis-server $version with AddressSanitizer (a few minutes)"
started=$SECONDS
(
  cd "$build/src"
  eval "$(DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --export=sh)"
  make -C src -j"$(nproc)" SANITIZER=address BUILD_TLS=yes redis-server >"$build/make.log" 2>&1
) || {
  tail -n 40 "$build/make.log" >&2
  log "the build failed (log: $build/make.log)"
  exit 1
}
# Whole outputs read into variables: `grep -q` stops reading at its first
# match, and under pipefail the writer's SIGPIPE would fail the check.
symbols="$(nm -D "$build/src/src/redis-server" 2>/dev/null || true)"
libraries="$(ldd "$build/src/src/redis-server" 2>/dev/null || true)"
[[ "$symbols" == *__asan_init* || "$libraries" == *libasan* ]] || { log "the binary is not sanitized"; exit 1; }

dir="$ROOT/redis-$version"
rm -rf "$ROOT"/redis-*
mkdir -p "$dir"
cp "$build/src/src/redis-server" "$dir/redis-server"
echo "recipe=$RECIPE version=${installed:-$version}" >"$dir/stamp"
rm -rf "$build" "$state"
log "built in $((SECONDS - started))s: $("$dir/redis-server" --version | cut -d' ' -f1-3)"
echo "$dir/redis-server"
