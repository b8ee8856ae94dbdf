#!/usr/bin/env bash
# `make test-asan`: the module's integration suite against Debian's
# redis-server 7.0.15 built with AddressSanitizer (scripts/asan-server.sh,
# cached in target/asan/), then a check that no sanitizer report was
# written. Any report fails the run and is printed. docs/operations.md,
# "make test-asan", says what this proves and what it cannot.
#
#   scripts/test-asan.sh [cargo test arguments...]
#       default: the module crate's integration tests (`-p dreamtown
#       --test integration`, the tests of ALONE_TESTS after the rest, as
#       `make test-rust` runs them) and the client crate's tests named in
#       CLIENT_TESTS
#   DREAMTOWN_MODULE: the module (default target/release/libdreamtown.so)
#
# ASan's options: every report is fatal (halt_on_error; the server is
# built with -fno-sanitize-recover) and goes to a file per process under
# target/asan/logs/ (log_path), whatever the test did with the server's
# output; an abort() (a serverPanic/serverAssert, a module's API misuse)
# and a SIGSEGV also leave their stack there (handle_abort, and
# allow_user_segv_handler=0 so that the server's own crash handler, whose
# report would go to the test's /dev/null, does not replace ASan's).
# Leaks: detect_leaks=1, and the harness stops every server with SHUTDOWN
# (DREAMTOWN_SANITIZED=1, test-support) so that LeakSanitizer runs at its
# exit. It reports only memory nothing points to any more (what the
# server's globals or the module's statics still hold at exit is not a
# leak to it), so Redis's not freeing everything at exit is no noise: a
# clean run reports nothing. One suppression, precise to a library that
# is not this tree (scripts/lsan-suppressions.txt: the previous release's
# module of the upgrade test). A server a test kills (restarts,
# failovers), or whose default user a test locked out, is not checked for
# leaks; a server that exits on its own (a refused --loadmodule) is.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$PWD"
export PATH="$HOME/.cargo/bin:$PATH"
CARGO="${CARGO:-cargo}"
LOGS="$REPO/target/asan/logs"
# The client crate's tests that reach module code the module crate's own
# suite does not: Redis Cluster (routing across nodes, the migration
# guard's command filter and dry run, slot moves both ways with their
# cluster events, blocked waiters across nodes, per-node stats). Left out,
# as their module side is what the module crate's suite already runs: the
# client API tests (dreams, town, lease, acl), the migration tool and the
# exporter (plain commands and INFO), TLS, Sentinel and the partition
# subset (failovers: the module's replica and promotion tests). Under ASan
# the whole client suite took 119 s of tests, this selection about 65 s.
# Modules of the client's one integration binary, each run alone as when
# it was a binary of its own (filters of its test names; limits_cluster::
# also contains "cluster::", so it is skipped).
CLIENT_TESTS=(cluster:: cluster_stats:: guard_setslot:: waiters_cluster:: reshard:: legacy_move::)

server=$(scripts/asan-server.sh | tail -n 1)
[[ -x "$server" ]] || { echo "== test-asan: no sanitized server" >&2; exit 1; }
export DREAMTOWN_SERVER="$server"
export DREAMTOWN_MODULE="${DREAMTOWN_MODULE:-$REPO/target/release/libdreamtown.so}"
# Debian's redis-cli (redis-tools, beside Debian's redis-server): the
# sanitized build has none, and an instrumented cli is not under test.
export DREAMTOWN_CLI=redis-cli
export DREAMTOWN_SANITIZED=1
export ASAN_OPTIONS="halt_on_error=1:abort_on_error=0:handle_abort=1:allow_user_segv_handler=0:detect_leaks=1:disable_coredump=1:log_path=$LOGS/asan"
export LSAN_OPTIONS="suppressions=$REPO/scripts/lsan-suppressions.txt:print_suppressions=0"
[[ -f "$DREAMTOWN_MODULE" ]] || { echo "== test-asan: no module at $DREAMTOWN_MODULE (make build)" >&2; exit 1; }

rm -rf "$LOGS"
mkdir -p "$LOGS"
echo "== test-asan: $("$server" --version | cut -d' ' -f1-3) with AddressSanitizer ($server)"
rc=0
if (($#)); then
  "$CARGO" test "$@" || rc=$?
else
  # Separately: built together, the client's tests would link the module
  # crate with its `module` feature (RedisAlloc), which aborts outside
  # redis-server.
  alone=(${ALONE_TESTS:-async_load::})
  "$CARGO" test -p dreamtown --no-fail-fast --test integration -- "${alone[@]/#/--skip=}" || rc=$?
  "$CARGO" test -p dreamtown --no-fail-fast --test integration -- "${alone[@]}" || rc=$?
  for tests in "${CLIENT_TESTS[@]}"; do
    "$CARGO" test -p dreamtown-client --no-fail-fast --test integration -- "$tests" --skip limits_cluster:: || rc=$?
  done
fi

reports=("$LOGS"/asan.*)
if [[ -e "${reports[0]}" ]]; then
  for report in "${reports[@]}"; do
    echo "== test-asan: report $report"
    cat "$report"
  done
  echo "== test-asan: FAIL: ${#reports[@]} AddressSanitizer report(s) in $LOGS" >&2
  exit 1
fi
if ((rc != 0)); then
  echo "== test-asan: FAIL: the tests failed (no AddressSanitizer report)" >&2
  exit "$rc"
fi
echo "== test-asan: no AddressSanitizer report"
