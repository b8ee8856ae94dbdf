#!/usr/bin/env bash
# Build and run the libFuzzer targets of fuzz/ on the stable toolchain (no
# cargo-fuzz, no nightly: sanitizer-coverage through -C passes / llvm-args,
# which stable rustc accepts; libFuzzer itself comes from libfuzzer-sys).
#
#   scripts/fuzz.sh build            build every target (target/fuzz/)
#   scripts/fuzz.sh run [T...]       fuzz each target FUZZ_SECONDS (60) from
#                                    the kept corpus; new inputs go to
#                                    target/fuzz/corpus/T, not the repo
#   scripts/fuzz.sh replay [T...]    replay the kept corpus, then fuzz
#                                    FUZZ_SECONDS (default here: 3) more
#   scripts/fuzz.sh keep [T...]      merge what `run` found into the kept
#                                    corpus (fuzz/corpus/T), minimised
#
# Any finding (panic, failed property, timeout, out-of-memory) stops the
# run with a non-zero exit; the input is saved under
# target/fuzz/artifacts/T/ and the command to reproduce it is printed.
# Runs under `nice -n FUZZ_NICE` (19), one process at a time.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
export PATH="$HOME/.cargo/bin:$PATH"
OUT="$ROOT/target/fuzz"
TRIPLE="$(rustc -vV | sed -n 's/^host: //p')"
BIN="$OUT/$TRIPLE/release"
NICE="${FUZZ_NICE:-19}"
TARGETS=(fire_message town_message quiet_hours numbers deadlines commands migrate_readers limits keyspace requests replies)

action="${1:-run}"
shift || true
if (($#)); then TARGETS=("$@"); fi

build() {
  # The flags cargo-fuzz passes for `-s none`; --target keeps them off
  # build scripts and proc macros.
  local flags="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4"
  flags+=" -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table"
  flags+=" -Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing"
  # libFuzzer is C++: use clang++ where no c++ is installed.
  if [[ -z "${CXX:-}" ]] && ! command -v c++ >/dev/null && command -v clang++ >/dev/null; then export CXX=clang++; fi
  echo "== building the fuzz targets (target/fuzz)"
  CARGO_TARGET_DIR="$OUT" RUSTFLAGS="$flags" nice -n "$NICE" \
    cargo build --release --manifest-path fuzz/Cargo.toml --target "$TRIPLE" --bins
}

# Extra flags for `keep`'s merge. migrate_readers' inputs are whole
# batches of keys: counted hit-count features keep ~8x the inputs (3800,
# 2.2 MB) for the same edges, so its corpus is merged on edges alone.
keep_flags() {
  case "$1" in
    migrate_readers) echo "-use_counters=0" ;;
  esac
}

# fuzz <target> <seconds> <work corpus dir>: fuzz from the kept corpus.
fuzz() {
  local target="$1" seconds="$2" work="$3"
  local dict=() artifacts="$OUT/artifacts/$target/"
  mkdir -p "$work" "$artifacts" "fuzz/corpus/$target"
  [[ -f "fuzz/dicts/$target.dict" ]] && dict=("-dict=fuzz/dicts/$target.dict")
  local log="$OUT/$target.log"
  echo "== fuzzing $target for ${seconds}s (log: $log)"
  if ! nice -n "$NICE" "$BIN/$target" "$work" "fuzz/corpus/$target" "${dict[@]}" \
      -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
      -artifact_prefix="$artifacts" -print_final_stats=1 >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    echo "== FINDING in $target: reproduce with $BIN/$target $artifacts<file>" >&2
    return 1
  fi
  local runs cov
  runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)"
  cov="$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)"
  echo "   $target: ${runs:-?} runs in ${seconds}s ($(( ${runs:-0} / (seconds > 0 ? seconds : 1) ))/s), coverage ${cov:-?} edges"
}

case "$action" in
  build) build ;;
  run)
    build
    for t in "${TARGETS[@]}"; do fuzz "$t" "${FUZZ_SECONDS:-60}" "$OUT/corpus/$t"; done ;;
  replay)
    build
    for t in "${TARGETS[@]}"; do
      scratch="$OUT/replay/$t"
      rm -rf "$scratch"
      fuzz "$t" "${FUZZ_SECONDS:-3}" "$scratch"
    done ;;
  keep)
    build
    for t in "${TARGETS[@]}"; do
      merged="$OUT/merged/$t"
      rm -rf "$merged" && mkdir -p "$merged" "$OUT/corpus/$t"
      # shellcheck disable=SC2046 # keep_flags prints zero or more flags
      nice -n "$NICE" "$BIN/$t" -set_cover_merge=1 $(keep_flags "$t") "$merged" "fuzz/corpus/$t" "$OUT/corpus/$t" >"$OUT/$t.merge.log" 2>&1
      rm -rf "fuzz/corpus/$t" && mv "$merged" "fuzz/corpus/$t"
      echo "   $t: $(ls "fuzz/corpus/$t" | wc -l) inputs, $(cat "fuzz/corpus/$t"/* | wc -c) bytes"
    done ;;
  *) echo "usage: $0 build|run|replay|keep [target...]" >&2; exit 2 ;;
esac
