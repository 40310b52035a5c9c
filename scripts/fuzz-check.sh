#!/usr/bin/env bash
# scripts/fuzz-check.sh [--seconds N]: builds the libFuzzer targets with clang-16 (Debian's
# default clang 14 cannot compile C++20 against g++ 12's library) in build-fuzz, then
#   (no argument) replays the committed corpus fuzz/corpus/<target>/ -- seeds, every input
#     that ever crashed a fuzzer, and the coverage corpus -- once through each target. This
#     is what CI runs: it is deterministic. Fuzzing proper is not, even from a fixed seed:
#     libFuzzer's comparison tracing feeds heap addresses back into its mutations, so two
#     machines explore differently (CI once found a crash at input 143,604 of a seeded run
#     that had passed here).
#   --seconds N: fuzzes each target for N seconds from the committed corpus, then merges
#     every input that reached new code into fuzz/corpus/<target>/coverage/, for the next
#     replay to keep. Commit what it adds; a crash stops it with the input saved as
#     build-fuzz/<target>-crash-*.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=0
if [ "${1:-}" = "--seconds" ]; then
  seconds=${2:?--seconds needs a number}
elif [ $# -gt 0 ]; then
  echo "usage: $0 [--seconds N]" >&2
  exit 2
fi
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
if ! dpkg -s clang-16 libclang-rt-16-dev >/dev/null 2>&1; then
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends clang-16 libclang-rt-16-dev >/dev/null
fi
[ -f build-fuzz/CMakeCache.txt ] ||
  cmake -S fuzz -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang-16 -DCMAKE_CXX_COMPILER=clang++-16
cmake --build build-fuzz --parallel "$(nproc)"

# run_target NAME LOG ARGS...: runs build-fuzz/fuzz_NAME, and on failure shows the log's end.
run_target() {
  local name=$1 log=$2
  shift 2
  if ! "build-fuzz/fuzz_$name" -timeout=10 -rss_limit_mb=2048 -artifact_prefix="build-fuzz/$name-" "$@" >"$log" 2>&1; then
    tail -40 "$log"
    echo "fuzz_$name failed (a crashing input is saved as build-fuzz/$name-*)" >&2
    exit 1
  fi
}

for target in build-fuzz/fuzz_*; do
  name=${target#build-fuzz/fuzz_}
  corpus="fuzz/corpus/$name"
  [ -d "$corpus" ] || continue
  if [ "$seconds" -eq 0 ]; then
    run_target "$name" "build-fuzz/$name.log" -runs=0 "$corpus"
    echo "== fuzz_$name: $(grep -o 'Done [0-9]* runs' "build-fuzz/$name.log" | head -1) over $corpus"
    continue
  fi
  work="build-fuzz/corpus-$name"
  mkdir -p "$work" "$corpus/coverage"
  echo "== fuzzing $name for $seconds s"
  run_target "$name" "build-fuzz/$name.log" -max_total_time="$seconds" "$work" "$corpus"
  tail -1 "build-fuzz/$name.log"
  before=$(find "$corpus/coverage" -type f | wc -l)
  # Edges only (no hit counts) keep the committed corpus to a few hundred small files.
  run_target "$name" "build-fuzz/$name-merge.log" -merge=1 -use_counters=0 "$corpus/coverage" "$work"
  echo "   $(($(find "$corpus/coverage" -type f | wc -l) - before)) new inputs in $corpus/coverage"
done
