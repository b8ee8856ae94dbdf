#!/usr/bin/env bash
# make dist: the release artifacts, built from the workspace.
#
#   target/dist/dreamtown_<version>_<arch>.deb        a Debian package
#   target/dist/dreamtown-<version>-linux-<arch>.tar.gz   the same files
#
# Both hold:
#   /usr/lib/redis/modules/dreamtown.so     the module (Redis 7.0+, Valkey 8+)
#   /usr/bin/dreamtown-migrate, dreamtown-exporter, dreamtown-console   the tools
#   /etc/dreamtown/dreamtown.conf           loadmodule + every dreamtown.* config, commented
#   /usr/share/man/man1/*.1.gz              the tools' pages (from their --help)
#   /usr/share/doc/dreamtown/               README, CHANGELOG, docs/, copyright
#
# The package depends on what the binaries link (dpkg-shlibdeps) and
# recommends a server; it starts nothing and changes no server's config:
# an operator adds `include /etc/dreamtown/dreamtown.conf` to redis.conf.
# Needs dpkg-dev and fakeroot (both on Debian's build machines); SKIP_BUILD=1
# packages what target/release already holds.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$PWD"
export PATH="$HOME/.cargo/bin:$PATH"

VERSION=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
[[ -n "$VERSION" ]] || { echo "dist: no version in Cargo.toml's [workspace.package]" >&2; exit 1; }
ARCH=$(dpkg --print-architecture)
# Whoever publishes the package sets its maintainer (DEB_MAINTAINER); the
# default is a placeholder address of the reserved example.org domain.
MAINTAINER="${DEB_MAINTAINER:-dreamtown developers <dreamtown@example.org>}"
OUT="$REPO/target/dist"
STAGE="$OUT/dreamtown_${VERSION}_${ARCH}"

if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
  cargo build --release -p dreamtown
  cargo build --release -p dreamtown-migrate -p dreamtown-exporter --bins
  cargo build --release -p dreamtown-console --bins
fi
REL="${CARGO_TARGET_DIR:-target}/release"
for built in "$REL/libdreamtown.so" "$REL/dreamtown-migrate" "$REL/dreamtown-exporter" "$REL/dreamtown-console"; do
  [[ -x "$built" || -f "$built" ]] || { echo "dist: $built is missing (cargo build --release first)" >&2; exit 1; }
done

rm -rf "$STAGE"
mkdir -p "$STAGE/DEBIAN" "$STAGE/usr/lib/redis/modules" "$STAGE/usr/bin" "$STAGE/etc/dreamtown" \
  "$STAGE/usr/share/man/man1" "$STAGE/usr/share/doc/dreamtown/docs"

# Binaries, stripped of the debug info the release profile keeps for
# profiling (Debian ships it apart). The module is 0755: Redis and Valkey
# refuse to load a module file without execute permission.
install -m 0755 "$REL/libdreamtown.so" "$STAGE/usr/lib/redis/modules/dreamtown.so"
install -m 0755 "$REL/dreamtown-migrate" "$REL/dreamtown-exporter" "$REL/dreamtown-console" "$STAGE/usr/bin/"
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$STAGE/usr/lib/redis/modules/dreamtown.so"
strip --remove-section=.comment --remove-section=.note "$STAGE/usr/bin/dreamtown-migrate" "$STAGE/usr/bin/dreamtown-exporter" \
  "$STAGE/usr/bin/dreamtown-console"

install -m 0644 packaging/dreamtown.conf "$STAGE/etc/dreamtown/dreamtown.conf"

# Man pages: each tool's --help, which is written as its manual.
manpage() {
  local tool="$1" summary="$2"
  {
    printf '.TH %s 1 "" "dreamtown %s" "User Commands"\n' "$(tr a-z A-Z <<<"$tool")" "$VERSION"
    printf '.SH NAME\n%s \\- %s\n' "$tool" "$summary"
    printf '.SH DESCRIPTION\n.nf\n'
    "$STAGE/usr/bin/$tool" --help | sed -e 's/\\/\\\\/g' -e 's/^\./\\\&./' -e "s/^'/\\\\\&'/"
    printf '.fi\n.SH SEE ALSO\n/usr/share/doc/dreamtown/docs/\n'
  } | gzip -9n >"$STAGE/usr/share/man/man1/$tool.1.gz"
}
manpage dreamtown-migrate "move exocortex-dreams and tinytown data onto dreamtown's layout, and back"
manpage dreamtown-exporter "Prometheus exporter for the dreamtown Redis module"
manpage dreamtown-console "operator's web console for the dreamtown Redis module"

DOC="$STAGE/usr/share/doc/dreamtown"
install -m 0644 README.md "$DOC/README.md"
install -m 0644 packaging/copyright "$DOC/copyright"
install -m 0644 docs/*.md docs/*.svg "$DOC/docs/"
# Debian wants a native package's changelog in its own format, compressed.
{
  printf 'dreamtown (%s) unstable; urgency=medium\n\n' "$VERSION"
  printf '  * Release %s; what changed is in /usr/share/doc/dreamtown/CHANGELOG.md.gz.\n\n' "$VERSION"
  printf ' -- %s  %s\n' "$MAINTAINER" "$(date -R -u -d "@${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}")"
} | gzip -9n >"$DOC/changelog.gz"
gzip -9n <CHANGELOG.md >"$DOC/CHANGELOG.md.gz"

# Dependencies from what the binaries link, as Debian computes them.
SHLIBS_DIR=$(mktemp -d)
mkdir -p "$SHLIBS_DIR/debian"
printf 'Source: dreamtown\n\nPackage: dreamtown\nArchitecture: any\n' >"$SHLIBS_DIR/debian/control"
DEPENDS=$(cd "$SHLIBS_DIR" && dpkg-shlibdeps -O -e"$STAGE/usr/lib/redis/modules/dreamtown.so" \
  -e"$STAGE/usr/bin/dreamtown-migrate" -e"$STAGE/usr/bin/dreamtown-exporter" -e"$STAGE/usr/bin/dreamtown-console" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
rm -rf "$SHLIBS_DIR"
[[ -n "$DEPENDS" ]] || { echo "dist: dpkg-shlibdeps found no dependencies" >&2; exit 1; }

INSTALLED_KB=$(du -sk --exclude=DEBIAN "$STAGE" | cut -f1)
cat >"$STAGE/DEBIAN/control" <<CONTROL
Package: dreamtown
Version: $VERSION
Architecture: $ARCH
Maintainer: $MAINTAINER
Installed-Size: $INSTALLED_KB
Depends: $DEPENDS
Recommends: redis-server (>= 5:7.0) | valkey-server (>= 8.0)
Section: database
Priority: optional
Description: Redis module with native fire-queue and agent-channel commands
 dreamtown is a module for Redis 7.0+ and Valkey 8+ that adds native,
 atomic commands: DREAMS.* (a consolidation fire queue with per-region
 counters, thresholds, reliable delivery, retries, quiet hours and leases)
 and TOWN.* (an agent channel with prioritised inboxes, reliable receive,
 agent and task state, activity logs and backlog).
 .
 The package installs the module, a commented configuration snippet to
 include from redis.conf or valkey.conf, and three tools: dreamtown-migrate
 (moves exocortex-dreams and tinytown data onto dreamtown's layout and
 back), dreamtown-exporter (a Prometheus exporter) and dreamtown-console
 (an operator's web console).
CONTROL
echo /etc/dreamtown/dreamtown.conf >"$STAGE/DEBIAN/conffiles"
(cd "$STAGE" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) >"$STAGE/DEBIAN/md5sums"
find "$STAGE" -type d -exec chmod 0755 {} +
chmod 0644 "$STAGE/DEBIAN/control" "$STAGE/DEBIAN/conffiles" "$STAGE/DEBIAN/md5sums"

DEB="$OUT/dreamtown_${VERSION}_${ARCH}.deb"
fakeroot dpkg-deb --root-owner-group -Zxz --build "$STAGE" "$DEB" >/dev/null
TARBALL="$OUT/dreamtown-${VERSION}-linux-${ARCH}.tar.gz"
tar --owner=0 --group=0 --numeric-owner --sort=name -C "$STAGE" --exclude=./DEBIAN -czf "$TARBALL" .
echo "$DEB"
echo "$TARBALL"
