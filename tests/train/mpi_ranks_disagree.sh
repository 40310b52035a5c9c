#!/usr/bin/env bash
# train.mpi_ranks_that_disagree: two MPI ranks of ringgrad-train launched with flags that
# disagree (MPMD: `mpiexec -n 1 A : -n 1 B`) must both stop with an error that names the
# disagreement, soon, and never with memory corruption or a crash, whatever the algorithm.
# Usage: mpi_ranks_disagree.sh MPIEXEC RINGGRAD_TRAIN
set -uo pipefail
mpiexec=$1 train=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
base=(--data synthetic --model mlp --parallel ddp --threads 1 --epochs 1)
failures=0
# run NAME SECONDS WANTED "FLAGS OF RANK 0" "FLAGS OF RANK 1"
run() {
  local name=$1 limit=$2 wanted=$3 a=$4 b=$5 log=$out/$1.log
  # shellcheck disable=SC2086
  timeout "$limit" "$mpiexec" --oversubscribe -n 1 "$train" "${base[@]}" $a --out "$out/$name-0" : \
    -n 1 "$train" "${base[@]}" $b --out "$out/$name-1" >"$log" 2>&1
  local rc=$?
  if [ $rc -eq 0 ] || [ $rc -eq 124 ] || grep -qiE "corrupt|invalid pointer|segmentation|double free|Signal: " "$log" ||
     ! grep -q "$wanted" "$log"; then
    echo "FAIL: $name (exit $rc): expected a clean error containing '$wanted'"
    cat "$log"
    failures=$((failures + 1))
  else
    echo "ok: $name: $(grep -m1 "$wanted" "$log")"
  fi
}
for algorithm in library ring pipelined_ring relay star; do
  run "max_steps_$algorithm" 60 "ranks disagree on the collective" \
    "--allreduce $algorithm --max-steps 3" "--allreduce $algorithm --max-steps 5"
done
run check_every_on_one_rank 60 "ranks disagree on the collective" "--check-every 1 --max-steps 4" "--max-steps 4"
run reducers_differ 60 "ranks disagree on the collective" "--reducer flat --max-steps 4" "--reducer bucketed --max-steps 4"
run algorithms_differ 60 "ranks disagree on the collective" "--allreduce ring --max-steps 4" "--allreduce library --max-steps 4"
run batches_differ 60 "different numbers of batches" "--batch-size 64 --max-steps 4" "--batch-size 32 --max-steps 4"
exit $((failures > 0))
