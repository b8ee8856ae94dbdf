#!/usr/bin/env bash
# Build the previous release's module (packaging/previous-release: version
# and commit; the tag v<version> when the clone has it) for the upgrade and
# downgrade test, from this repository's own history:
#
#   target/previous/<version>/libdreamtown.so
#
# Its sources are exported with `git archive` and built with their own
# Cargo.lock in their own target directory; a finished build is kept (the
# commit is recorded beside it) so later runs cost nothing. Prints the path.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
read -r VERSION COMMIT < <(grep -v '^#' packaging/previous-release | head -n 1)
if git rev-parse -q --verify "refs/tags/v$VERSION^{commit}" >/dev/null; then
  TAGGED=$(git rev-parse "refs/tags/v$VERSION^{commit}")
  [[ "$TAGGED" == "$COMMIT" ]] || { echo "build-previous: tag v$VERSION is $TAGGED, packaging/previous-release says $COMMIT" >&2; exit 1; }
fi
git cat-file -e "$COMMIT^{commit}" 2>/dev/null || { echo "build-previous: commit $COMMIT (v$VERSION) is not in this clone" >&2; exit 1; }
OUT="$PWD/target/previous/$VERSION"
mkdir -p "$PWD/target/previous"
# One build at a time (test binaries of several servers may ask at once).
exec 9>"$PWD/target/previous/.lock"
flock 9
SO="$OUT/libdreamtown.so"
if [[ -f "$SO" && "$(cat "$OUT/commit" 2>/dev/null)" == "$COMMIT" ]]; then
  echo "$SO"
  exit 0
fi
rm -rf "$OUT"
mkdir -p "$OUT/src"
git archive "$COMMIT" | tar -x -C "$OUT/src"
echo "== building dreamtown $VERSION ($COMMIT) for the upgrade test" >&2
(cd "$OUT/src" && CARGO_TARGET_DIR="$OUT/target" cargo build --release -p dreamtown >&2)
cp "$OUT/target/release/libdreamtown.so" "$SO"
echo "$COMMIT" >"$OUT/commit"
# The build tree is large; only the module is kept.
rm -rf "$OUT/target" "$OUT/src"
echo "$SO"
