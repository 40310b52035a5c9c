#!/usr/bin/env bash
# scripts/fuzz-check.sh [RUNS | --seconds N]: builds the libFuzzer targets with clang-16
# (Debian's default clang 14 cannot compile C++20 against g++ 12's library) in build-fuzz
# and fuzzes each target starting from the committed corpus; any crash fails.
#   RUNS (default 200000): a fixed number of inputs from a fixed seed and a fresh working
#     corpus, so the run is reproducible: CI fails on this machine exactly when it fails
#     on yours.
#   --seconds N: an exploratory run of N seconds per target, new seed each time, keeping
#     its working corpus in build-fuzz/corpus-<target>; use it to look for new bugs.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--seconds" ]; then
  budget=(-max_total_time="${2:?--seconds needs a number}")
  explore=1
else
  budget=(-runs="${1:-200000}" -seed=1)
  explore=0
fi
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
if ! dpkg -s clang-16 libclang-rt-16-dev >/dev/null 2>&1; then
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends clang-16 libclang-rt-16-dev >/dev/null
fi
[ -f build-fuzz/CMakeCache.txt ] ||
  cmake -S fuzz -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang-16 -DCMAKE_CXX_COMPILER=clang++-16
cmake --build build-fuzz --parallel "$(nproc)"
for target in build-fuzz/fuzz_*; do
  name=${target#build-fuzz/fuzz_}
  [ -d "fuzz/corpus/$name" ] || continue
  work="build-fuzz/corpus-$name"
  [ "$explore" -eq 1 ] || rm -rf "$work"
  mkdir -p "$work"
  echo "== fuzzing $name (${budget[*]})"
  if ! "$target" "${budget[@]}" -timeout=10 -rss_limit_mb=2048 -artifact_prefix="build-fuzz/$name-" \
    "$work" "fuzz/corpus/$name" >"build-fuzz/$name.log" 2>&1; then
    tail -40 "build-fuzz/$name.log"
    echo "fuzz_$name found a crash (input saved as build-fuzz/$name-*)" >&2
    exit 1
  fi
  tail -2 "build-fuzz/$name.log"
done
