#!/usr/bin/env bash
# Run the server's own test suite (the `tests/` of the exact upstream release,
# from the Debian archive's orig tarball) against a packaged server of
# target/servers/, once plain and once with dreamtown loaded, and compare the
# outcome of every test. A manual check (docs/operations.md, "Redis's own
# test suite with dreamtown loaded"): not part of `make test` or CI; it takes
# 30-90 minutes of two busy cores per server.
#
#   scripts/upstream-suite.sh NAME [UNITS_PER_CHUNK] [CLIENTS]
#       NAME: redis-7.0 | redis-8.0 | valkey-9.1 (after `make servers`)
#   SCRATCH=/some/dir (default /tmp/dreamtown-upstream-suite): where the
#       sources, the two copies of the test tree and the logs go; keep it
#       outside the repository (nothing of it is ever committed).
#   MODULE=path (default target/release/libdreamtown.so; `make build`).
#   BASEPORT=21000: the plain run uses BASEPORT.., the module run
#       BASEPORT+4000.. (3000 ports each; cluster bus ports +10000).
#   QUIET=/some/file (default: none): a pause file; while it exists, no new
#       chunk starts.
#
# The server is never built from these sources: each tree's src/<family>-server,
# -cli, -benchmark, -check-aof and -check-rdb are wrapper scripts that run the
# packaged binaries (check-aof/check-rdb are the server binary under another
# argv[0]). Test modules (tests/modules, unit/moduleapi) are not built or run.
#
# The units run in chunks (--single u1 --single u2 ...), the plain and the
# module run of a chunk at the same time (the same load for both). With
# QUIET set, before each chunk the script waits while that file exists (so
# someone can ask for a quiet machine); unset, it never pauses. A chunk
# already done is skipped when the script is run again. Last, it prints the
# totals both ways and every test whose outcome differs; re-run those alone
# (`./runtest --single unit/x --only "name"` in both trees) before calling a
# difference real.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$PWD"
name="${1:?usage: $0 redis-7.0|redis-8.0|valkey-9.1 [units-per-chunk] [clients]}"
per="${2:-6}"
clients="${3:-4}"
SCRATCH="${SCRATCH:-/tmp/dreamtown-upstream-suite}"
MODULE="${MODULE:-$REPO/target/release/libdreamtown.so}"
BASEPORT="${BASEPORT:-21000}"
QUIET="${QUIET:-}"
SERVERS="$REPO/target/servers"
case "$SCRATCH/" in "$REPO"/*) echo "SCRATCH must be outside the repository" >&2; exit 2 ;; esac
[[ -f "$MODULE" ]] || { echo "no module at $MODULE (make build)" >&2; exit 2; }

case "$name" in
  redis-7.0) family=redis; version=7.0.15; pool=r/redis ;;
  redis-8.0) family=redis; version=8.0.6; pool=r/redis ;;
  valkey-9.1) family=valkey; version=9.1.2; pool=v/valkey ;;
  *) echo "unknown server '$name'" >&2; exit 2 ;;
esac
[[ -x "$SERVERS/$name/$family-server" ]] || scripts/servers.sh "$name" >/dev/null

log() { echo "== upstream-suite: $*" >&2; }

# The Debian mirror of the machine's own apt sources.
mirror=$(scripts/debian-mirror.sh 2>/dev/null || true)

mkdir -p "$SCRATCH"
tree="$SCRATCH/$name"
if [[ ! -x "$tree/runtest" ]]; then
  tarball="$SCRATCH/${family}_$version.orig.tar.gz"
  if [[ ! -s "$tarball" ]]; then
    [[ -n "$mirror" ]] || { log "no Debian mirror in the apt sources"; exit 1; }
    log "fetching ${family}_$version.orig.tar.gz from the apt mirror"
    curl -sSf -o "$tarball" "$mirror/pool/main/$pool/${family}_$version.orig.tar.gz"
  fi
  rm -rf "$tree.unpack" && mkdir -p "$tree.unpack"
  tar xzf "$tarball" -C "$tree.unpack"
  mv "$tree.unpack"/* "$tree" && rmdir "$tree.unpack"
  grep -q "\"$version\"" "$tree/src/version.h" || { log "$tree is not $version"; exit 1; }
fi

# src/ wrappers onto the packaged binaries.
wrapper() { printf '#!/bin/sh\nexec %s "$@"\n' "$2" >"$1"; chmod 755 "$1"; }
for tool in server cli benchmark; do wrapper "$tree/src/$family-$tool" "\"$SERVERS/$name/$family-$tool\""; done
# Redis 8.0.6 and Valkey 9.1.2 are Debian unstable's packages, run by its
# own loader (scripts/servers.sh), check tools included.
sid="$SERVERS/sid/root"
libs="$sid/usr/lib/x86_64-linux-gnu"
for tool in check-aof check-rdb; do
  case "$name" in
    redis-7.0) wrapper "$tree/src/redis-$tool" "/usr/bin/redis-$tool" ;;
    *) wrapper "$tree/src/$family-$tool" "\"$libs/ld-linux-x86-64.so.2\" --library-path \"$libs\" \"$sid/usr/bin/$family-$tool\"" ;;
  esac
done

# The units runtest would run (Redis 7.0: its all_tests list; later: the
# test directories it globs), written once: edit the file to reorder or
# drop units (chunks already done are counted by position).
units="$SCRATCH/$name.units"
if [[ -s "$units" ]]; then
  :
elif [[ "$name" == redis-7.0 ]]; then
  sed -n '/^set ::all_tests {/,/^}/p' "$tree/tests/test_helper.tcl" | grep -v '[{}]' | awk '{print $1}' >"$units"
else
  for dir in unit unit/type unit/cluster integration; do
    for f in $(cd "$tree/tests" && ls $dir/*.tcl | sort); do echo "${f%.tcl}"; done
  done >"$units"
fi

# Two copies: runtest cleans tests/tmp of its tree at start and end.
for mode in plain module; do [[ -d "$tree-$mode" ]] || cp -a "$tree" "$tree-$mode"; done
logs="$SCRATCH/logs/$name"
mkdir -p "$logs"
mapfile -t all <"$units"
chunk=0
for ((i = 0; i < ${#all[@]}; i += per)); do
  chunk=$((chunk + 1))
  c=$(printf '%02d' "$chunk")
  [[ -e "$logs/chunk$c.plain.done" && -e "$logs/chunk$c.module.done" ]] && continue
  while [[ -n "$QUIET" && -e "$QUIET" ]]; do sleep 5; done
  args=()
  for u in "${all[@]:i:per}"; do args+=(--single "$u"); done
  log "$(date -u +%T) chunk $c: ${all[*]:i:per}"
  (cd "$tree-plain" && nice -n 10 ./runtest "${args[@]}" --clients "$clients" --baseport "$BASEPORT" --portcount 3000 \
    >"$logs/chunk$c.plain.log" 2>&1; echo $? >"$logs/chunk$c.plain.done") &
  (cd "$tree-module" && nice -n 10 ./runtest "${args[@]}" --clients "$clients" --baseport $((BASEPORT + 4000)) --portcount 3000 \
    --config loadmodule "$MODULE" >"$logs/chunk$c.module.log" 2>&1; echo $? >"$logs/chunk$c.module.done") &
  wait
done

# Outcomes per test name, both ways.
python3 - "$logs" <<'EOF'
import collections, glob, re, sys
ansi = re.compile(r'\x1b\[[0-9;]*m')
line_re = re.compile(r'^\[(ok|err|skip|ignore|exception|timeout)\]: (.*)$')
def outcomes(mode):
    res, unfinished = collections.Counter(), []
    for path in sorted(glob.glob(f'{sys.argv[1]}/chunk*.{mode}.log')):
        text = ansi.sub('', open(path, errors='replace').read())
        if 'The End' not in text:
            unfinished.append(path.rsplit('/', 1)[-1])
        for line in text.splitlines():
            m = line_re.match(line)
            if not m:
                continue
            status, test = m.groups()
            test = re.sub(r' \(\d+ ms\)$', '', test) if status == 'ok' else test
            test = re.sub(r' in tests/\S+$', '', test) if status == 'err' else test
            test = test.split(': ')[0] if status == 'ignore' else test
            res[(status, test)] += 1
    return res, unfinished
plain, plain_unfinished = outcomes('plain')
module, module_unfinished = outcomes('module')
for label, res, unfinished in (('plain ', plain, plain_unfinished), ('module', module, module_unfinished)):
    totals = collections.Counter()
    for (status, _), n in res.items():
        totals[status] += n
    print(label, dict(sorted(totals.items())), 'aborted chunks:', unfinished or 'none')
for key in sorted(set(plain) | set(module)):
    if plain[key] != module[key]:
        print(f'differs: [{key[0]}] plain {plain[key]}x, module {module[key]}x: {key[1]}')
EOF
