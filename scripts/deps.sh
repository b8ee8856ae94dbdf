#!/usr/bin/env bash
# The Debian packages dreamtown's build, tests and the seeds' suites need,
# installed when missing, then every tool they run checked on PATH.
#
#   scripts/deps.sh build   what `make build` needs (make build runs it)
#   scripts/deps.sh run     that and the server (make run)
#   scripts/deps.sh all     everything: the build, `make test`, `make
#                           test-seeds`, `make test-package`, `make
#                           test-deps`, `make test-docs` (make deps runs it)
#
# Installs with `apt-get install --no-install-recommends` (as root), so
# every package a step needs is named here: a fresh Debian 12 has only
# what debootstrap's minbase gives, and `make test-deps` proves this list
# there (scripts/test-deps.sh). DEPS_SERVER_PACKAGE (from the Makefile:
# redis-server when no SERVER is given) adds the server's package; the
# Rust toolchain comes from rustup, not from Debian.
set -euo pipefail
what="${1:-all}"

# package[:command]: a package with a command is needed only while that
# command is missing (node and npm may come from elsewhere, e.g. nodesource,
# whose nodejs conflicts with Debian's npm).
BUILD_PACKAGES=(
  clang           # cc (rustc's linker driver) and the C of redis-module and ring
  libclang-dev    # bindgen, in redis-module's build script
)
TEST_PACKAGES=(
  ca-certificates # cargo, pip and npm over HTTPS; the TLS test's "system roots" case
  git             # the upgrade test builds the previous release from its tag (scripts/build-previous.sh)
  python3 python3-venv # python-tests (make venv), seeds/run.sh, bench/, scripts/*.py
  iproute2        # ip netns and tc: the partition tests' test hosts (client/tests/partition.rs)
  prometheus      # promtool: the exporter test lints the exposition text
  redis-sentinel  # the Sentinel failover test (client/tests/sentinel.rs)
  openssl         # the TLS test's CA and certificates (client/tests/tls.rs)
  protobuf-compiler # protoc, for exocortex-wire's build script (make test-seeds)
  libprotobuf-dev # google/protobuf/*.proto, which exocortex-wire's protos import
  fakeroot binutils # make dist: dpkg-deb under fakeroot, strip
  lintian         # make test-package checks the package with it
  curl            # make test-package scrapes the packaged exporter
  debootstrap     # make test-deps: this list proven on an empty Debian 12
  nodejs:node npm:npm # the ioredis routing test and the docs' Node examples
)
# command|package or reason: every tool the steps run, checked after installing.
BUILD_TOOLS=(cc clang)
TEST_TOOLS=(git python3 ip tc promtool redis-sentinel openssl protoc fakeroot dpkg-deb strip
  lintian curl debootstrap node npm c++)

case "$what" in
  build | run) packages=("${BUILD_PACKAGES[@]}"); tools=("${BUILD_TOOLS[@]}") ;;
  all) packages=("${BUILD_PACKAGES[@]}" "${TEST_PACKAGES[@]}"); tools=("${BUILD_TOOLS[@]}" "${TEST_TOOLS[@]}") ;;
  *) echo "usage: scripts/deps.sh build|run|all" >&2; exit 2 ;;
esac
if [[ "$what" != build && -n "${DEPS_SERVER_PACKAGE:-}" ]]; then packages+=("$DEPS_SERVER_PACKAGE"); fi

if command -v dpkg-query >/dev/null; then
  missing=()
  for entry in "${packages[@]}"; do
    pkg="${entry%%:*}"
    cmd=""
    [[ "$entry" == *:* ]] && cmd="${entry#*:}"
    if [[ -n "$cmd" ]] && command -v "$cmd" >/dev/null; then continue; fi
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  if ((${#missing[@]})); then
    echo "== installing: ${missing[*]}"
    if [[ "$(id -u)" -ne 0 ]]; then echo "run as root, or install: ${missing[*]}" >&2; exit 1; fi
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "== packages present ($what): ${packages[*]%%:*}"
  fi
else
  echo "== not a Debian system (no dpkg-query): install the equivalents of: ${packages[*]%%:*}"
fi

absent=()
for tool in "${tools[@]}"; do command -v "$tool" >/dev/null || absent+=("$tool"); done
if [[ "$what" == all ]]; then
  [[ -f /usr/include/google/protobuf/timestamp.proto ]] || absent+=("/usr/include/google/protobuf/timestamp.proto (libprotobuf-dev)")
  python3 -c 'import ensurepip, venv' 2>/dev/null || absent+=("python3's venv and ensurepip (python3-venv)")
fi
if ((${#absent[@]})); then
  echo "missing after installing: ${absent[*]}" >&2
  exit 1
fi
