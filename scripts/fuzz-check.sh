#!/usr/bin/env bash
# scripts/fuzz-check.sh [SECONDS]: builds the libFuzzer targets with clang-16 (Debian's
# default clang 14 cannot compile C++20 against g++ 12's library) in build-fuzz and runs
# each for SECONDS (default 30) from the committed corpus; any crash fails.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
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
  mkdir -p "build-fuzz/corpus-$name"
  echo "== fuzzing $name for ${seconds}s"
  if ! "$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -artifact_prefix="build-fuzz/$name-" \
    "build-fuzz/corpus-$name" "fuzz/corpus/$name" >"build-fuzz/$name.log" 2>&1; then
    tail -40 "build-fuzz/$name.log"
    echo "fuzz_$name found a crash (input saved as build-fuzz/$name-*)" >&2
    exit 1
  fi
  tail -2 "build-fuzz/$name.log"
done
