#!/usr/bin/env bash
# make test-deps: make deps' package list proven on an empty Debian 12.
#
# A Debian 12 (bookworm) minbase made by debootstrap from the machine's own
# apt mirror (scripts/debian-mirror.sh), in which, as root:
#
#   1. apt-get install make          (the one thing a newcomer installs by hand)
#   2. make deps                     (scripts/deps.sh all: every package and tool)
#   3. make build                    (the module, CARGO_TARGET_DIR honoured)
#   4. the seeds' build step: exocortex-wire, the crate whose build script
#      compiles protobufs (protoc and google/protobuf/*.proto), and any
#      crate of either seed's build that needs more than a C compiler
#
# Nothing of the host leaks in but the Rust toolchain (~/.cargo, ~/.rustup,
# bind-mounted: rustup is not a Debian package) and this checkout
# (read-only). What is cached, and why it hides no missing package:
#
#   * the debootstrap'd base in target/fresh-debian/base: pristine, every
#     run works on an overlay of it that is thrown away;
#   * the downloaded .debs (target/fresh-debian/apt-archives, the chroot's
#     /var/cache/apt/archives): apt still has to be asked for each;
#   * the host's compiled crates: the chroot's cargo output directory is an
#     overlay of the host's, so crates that need nothing from the system are
#     not compiled twice. Every crate whose build script uses a system tool
#     or library (a build-dependency on bindgen, pkg-config, cmake,
#     prost-build, tonic-build, ...: found with cargo metadata), and the
#     module itself (its link), are cleaned in the overlay first, so they
#     build, and link, against what make deps installed. Crates that need
#     only a C compiler (cc) are proven by those, which compile C too.
#
# The run's root lives in memory (tmpfs) and dpkg does not fsync it: it is
# thrown away. About 3.5 minutes warm, 5 cold, on the 2-core machine.
#
# Needs root, debootstrap (make deps), overlayfs. The first run debootstraps
# (a few minutes); FRESH_DEBIAN_REFRESH=1 makes the base again.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
TARGET_DIR=$(realpath -m "${CARGO_TARGET_DIR:-$REPO/target}")
STATE="$REPO/target/fresh-debian"
BASE="$STATE/base"
RUN="$STATE/run"
ROOTFS="$RUN/root"
SUITE=bookworm
CARGO_HOME_DIR="${CARGO_HOME:-$HOME/.cargo}"
RUSTUP_HOME_DIR="${RUSTUP_HOME:-$HOME/.rustup}"
EXO=exocortex-dreams-0.5.4
TT=tinytown-0.10.0
started=$SECONDS

log() { echo "== test-deps: $*"; }
fail() { echo "FAIL test-deps: $*" >&2; exit 1; }

[[ "$(id -u)" -eq 0 ]] || fail "needs root (debootstrap, mounts, chroot)"
command -v debootstrap >/dev/null || fail "debootstrap is missing (make deps installs it)"
grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null || fail "no overlayfs"
MIRROR=$("$REPO/scripts/debian-mirror.sh")
SECURITY=$("$REPO/scripts/debian-mirror.sh" --security)

# Mounts made by this run, unmounted in reverse order on exit.
MOUNTS=()
mounted() { MOUNTS+=("$1"); }
cleanup() {
  local i
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
    umount "${MOUNTS[i]}" 2>/dev/null || umount -l "${MOUNTS[i]}" 2>/dev/null || true
  done
  [[ "${FRESH_DEBIAN_KEEP:-0}" == 1 ]] || rm -rf "$RUN"
}
trap cleanup EXIT

# A run that died left mounts: unmount them before removing anything.
if [[ -d "$RUN" ]]; then
  findmnt -rn -o TARGET | grep -F "$RUN/" | sort -r | while read -r m; do umount -l "$m" || true; done
  rm -rf "$RUN"
fi

if [[ "${FRESH_DEBIAN_REFRESH:-0}" == 1 ]]; then rm -rf "$BASE"; fi
if [[ ! -f "$BASE/.complete" ]]; then
  log "debootstrap --variant=minbase $SUITE from $MIRROR (cached in $BASE)"
  rm -rf "$BASE" "$BASE.tmp"
  mkdir -p "$STATE/apt-archives" "$BASE.tmp"
  # Made in memory (dpkg syncs every file it unpacks), then copied.
  mount -t tmpfs -o size=2g tmpfs "$BASE.tmp"; mounted "$BASE.tmp"
  debootstrap --variant=minbase --cache-dir="$STATE/apt-archives" "$SUITE" "$BASE.tmp" "$MIRROR" >"$STATE/debootstrap.log" 2>&1 ||
    { tail -20 "$STATE/debootstrap.log" >&2; fail "debootstrap failed (log: $STATE/debootstrap.log)"; }
  rm -f "$BASE.tmp/var/cache/apt/archives/"*.deb
  mkdir -p "$BASE.new"
  cp -a "$BASE.tmp/." "$BASE.new/"
  touch "$BASE.new/.complete"
  umount "$BASE.tmp" && rmdir "$BASE.tmp"
  MOUNTS=()
  mv "$BASE.new" "$BASE"
  log "base made in $((SECONDS - started))s"
fi

# The run's root: an overlay of the pristine base, its writes (what make
# deps installs, what the builds write) in memory: the run is thrown away.
mkdir -p "$RUN" "$STATE/apt-archives/partial"
mount -t tmpfs -o size=8g tmpfs "$RUN"; mounted "$RUN"
mkdir -p "$RUN/upper" "$RUN/work" "$ROOTFS"
mount -t overlay overlay -o "lowerdir=$BASE,upperdir=$RUN/upper,workdir=$RUN/work" "$ROOTFS"
mounted "$ROOTFS"
mount -t proc proc "$ROOTFS/proc"; mounted "$ROOTFS/proc"
mount --rbind /dev "$ROOTFS/dev"; mount --make-rslave "$ROOTFS/dev"; mounted "$ROOTFS/dev"
mount --bind "$STATE/apt-archives" "$ROOTFS/var/cache/apt/archives"; mounted "$ROOTFS/var/cache/apt/archives"
cp /etc/resolv.conf "$ROOTFS/etc/resolv.conf"
# Debian 12's own sources: the release, its updates and security.
rm -f "$ROOTFS/etc/apt/sources.list"
cat >"$ROOTFS/etc/apt/sources.list.d/debian.sources" <<SOURCES
Types: deb
URIs: $MIRROR
Suites: $SUITE $SUITE-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $SECURITY
Suites: $SUITE-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
# No package may start its daemon (redis-server, prometheus) in here, and
# dpkg need not sync a root that is thrown away after the run.
printf '#!/bin/sh\nexit 101\n' >"$ROOTFS/usr/sbin/policy-rc.d"
chmod 755 "$ROOTFS/usr/sbin/policy-rc.d"
echo force-unsafe-io >"$ROOTFS/etc/dpkg/dpkg.cfg.d/test-deps-unsafe-io"

# bind SRC [ro]: SRC at the same path inside.
bind() {
  mkdir -p "$ROOTFS$1"
  mount --bind "$1" "$ROOTFS$1"; mounted "$ROOTFS$1"
  if [[ "${2:-}" == ro ]]; then mount -o remount,bind,ro "$ROOTFS$1"; fi
}
bind "$CARGO_HOME_DIR"
bind "$RUSTUP_HOME_DIR" ro
bind "$REPO" ro
# overlay_of DIR: DIR (host's, may not exist yet) seen inside as an overlay
# whose writes stay in this run.
overlay_of() {
  local dir="$1" name
  name=$(echo "$dir" | tr / _)
  mkdir -p "$dir" "$RUN/ov$name/upper" "$RUN/ov$name/work" "$ROOTFS$dir"
  mount -t overlay overlay -o "lowerdir=$dir,upperdir=$RUN/ov$name/upper,workdir=$RUN/ov$name/work" "$ROOTFS$dir"
  mounted "$ROOTFS$dir"
}
# The chroot's target/: its own (this run's), with the host's release
# builds (CARGO_TARGET_DIR's, wherever it is) and seed builds overlaid.
mkdir -p "$RUN/target"
mount --bind "$RUN/target" "$ROOTFS$REPO/target"; mounted "$ROOTFS$REPO/target"
overlay_of "$TARGET_DIR/release"
overlay_of "$REPO/target/seeds"
CHROOT_TARGET="$TARGET_DIR"

inside() {
  chroot "$ROOTFS" /usr/bin/env -i HOME="$HOME" TERM=dumb LANG=C.UTF-8 \
    PATH="$CARGO_HOME_DIR/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    CARGO_HOME="$CARGO_HOME_DIR" RUSTUP_HOME="$RUSTUP_HOME_DIR" CARGO_TARGET_DIR="$CHROOT_TARGET" \
    DEBIAN_FRONTEND=noninteractive /bin/bash -euo pipefail -c "$1"
}

# system_crates MANIFEST PACKAGE: the crates in PACKAGE's build whose build
# script uses a system tool or library, as name@version. A crate that needs
# only a C compiler (a build-dependency on cc alone: ring, blake3) is left
# built when another crate rebuilt here uses cc too: the compiler is proven
# once (redis-module compiles C and links against libclang).
system_crates() {
  inside "cargo metadata --quiet --format-version 1 --manifest-path '$1' --filter-platform x86_64-unknown-linux-gnu" |
    python3 -c '
import json, sys
PROBES = {"bindgen", "pkg-config", "cmake", "prost-build", "tonic-build", "tonic-prost-build",
          "protobuf-codegen", "protobuf-codegen-pure", "vcpkg", "autotools", "system-deps"}
meta = json.load(sys.stdin)
packages = {p["id"]: p for p in meta["packages"]}
nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
root = next(i for i, p in packages.items() if p["name"] == sys.argv[1])
seen, todo = set(), [root]
while todo:
    i = todo.pop()
    if i in seen:
        continue
    seen.add(i)
    # What building it needs: normal and build dependencies, not dev ones.
    todo.extend(d["pkg"] for d in nodes[i]["deps"]
                if any(k["kind"] != "dev" for k in d.get("dep_kinds", [{"kind": None}])))
probing, cc_only = [], []
for i in sorted(seen):
    p = packages[i]
    # Its build dependencies as resolved (optional ones only when enabled).
    build = {packages[d["pkg"]]["name"] for d in nodes[i]["deps"]
             if any(k["kind"] == "build" for k in d.get("dep_kinds", []))}
    if build & PROBES:
        probing.append((p, "cc" in build))
    elif "cc" in build:
        cc_only.append(p)
chosen = [p for p, _ in probing]
if cc_only and not any(uses_cc for _, uses_cc in probing) and sys.argv[2] == "all-cc":
    chosen.append(cc_only[0])
for p in chosen:
    print("%s@%s" % (p["name"], p["version"]))
' "$2" "${3:-}"
}

log "in an empty Debian 12: apt-get install make"
t=$SECONDS
inside "apt-get update -qq && apt-get install -y -qq --no-install-recommends make >/dev/null" || fail "apt-get install make"
log "make deps"
inside "cd '$REPO' && make deps" || fail "make deps, in an empty Debian 12"
deps_took=$((SECONDS - t))

t=$SECONDS
crates=$(system_crates "$REPO/Cargo.toml" dreamtown all-cc)
log "make build, rebuilding: dreamtown $(echo $crates)"
inside "cd '$REPO' && cargo clean --quiet --release -p dreamtown $(printf -- ' -p %s' $crates)"
inside "cd '$REPO' && make build" || fail "make build, after make deps, in an empty Debian 12"
[[ -f "$ROOTFS$CHROOT_TARGET/release/libdreamtown.so" ]] || fail "make build made no $CHROOT_TARGET/release/libdreamtown.so"
build_took=$((SECONDS - t))

t=$SECONDS
log "the seeds' build step: exocortex-wire (protobufs)"
inside "cd '$REPO' && SEEDS_STEP=fetch SEEDS_ONLY=exocortex seeds/run.sh"
seed_manifest="$REPO/target/seeds/src/$EXO/Cargo.toml"
seed_target="$REPO/target/seeds/target-$EXO"
crates=$(system_crates "$seed_manifest" exocortex-wire)
echo "$crates" | grep -q '^exocortex-wire@' || fail "exocortex-wire has no protobuf build script any more: update scripts/test-deps.sh"
log "rebuilding: $(echo $crates)"
inside "cargo clean --quiet --manifest-path '$seed_manifest' --target-dir '$seed_target' $(printf -- ' -p %s' $crates)"
inside "cargo build --quiet --manifest-path '$seed_manifest' --target-dir '$seed_target' -p exocortex-wire" ||
  fail "exocortex-wire's build (protoc, google/protobuf/*.proto), after make deps, in an empty Debian 12"
# tinytown's tree too: whatever in it needs more than a C compiler.
inside "cd '$REPO' && SEEDS_STEP=fetch SEEDS_ONLY=tinytown seeds/run.sh"
tt_manifest="$REPO/target/seeds/src/$TT/Cargo.toml"
tt_target="$REPO/target/seeds/target-$TT"
crates=$(system_crates "$tt_manifest" tinytown)
if [[ -n "$crates" ]]; then
  log "rebuilding in tinytown's build: $(echo $crates)"
  inside "cargo clean --quiet --manifest-path '$tt_manifest' --target-dir '$tt_target' $(printf -- ' -p %s' $crates)"
  inside "cargo build --quiet --manifest-path '$tt_manifest' --target-dir '$tt_target' $(printf -- ' -p %s' $crates)" ||
    fail "tinytown's $crates, after make deps, in an empty Debian 12"
fi
seeds_took=$((SECONDS - t))

log "passed in $((SECONDS - started))s: make deps ${deps_took}s, make build ${build_took}s, the seeds' builds ${seeds_took}s"
