#!/usr/bin/env bash
# expect_failure.sh <max seconds> <regex>... -- <command>...: passes when the command fails
# (non-zero exit) within <max seconds>, its output matches every regex, and none of its
# processes outlive it. Used by the parallel.mpi.* failure tests.
set -uo pipefail
max_seconds=$1
shift
patterns=()
while [ "$1" != "--" ]; do
  patterns+=("$1")
  shift
done
shift
program=""
for word in "$@"; do
  case "$word" in */parallel_*_check) program=$word ;; esac
done

start=$(date +%s%N)
output=$("$@" 2>&1)
status=$?
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
echo "$output"
echo "== exit status $status after ${elapsed_ms} ms"

failed=0
if [ "$status" -eq 0 ]; then echo "FAIL: the job succeeded but should have failed"; failed=1; fi
if [ "$elapsed_ms" -gt $((max_seconds * 1000)) ]; then echo "FAIL: took more than $max_seconds s"; failed=1; fi
for p in "${patterns[@]}"; do
  if ! grep -qE -- "$p" <<<"$output"; then echo "FAIL: no line matches: $p"; failed=1; fi
done
# Orphans: processes still running the program's executable (not just naming it).
sleep 1
if [ -n "$program" ]; then
  executable=$(readlink -f "$program")
  for pid in $(pgrep -f -- "$program"); do
    if [ "$(readlink -f "/proc/$pid/exe" 2>/dev/null)" = "$executable" ]; then
      echo "FAIL: process $pid of $program is still running"
      failed=1
    fi
  done
fi
exit $failed
