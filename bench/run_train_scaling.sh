#!/usr/bin/env bash
# Data-parallel scaling of the training program itself (issue 13, item 2): ringgrad-train's
# summary samples/s (training time, evaluation excluded) for --parallel none, for DDP on the
# local backend (--workers 2, ranks as threads) and for DDP under mpirun -n 2, every run with
# the same per-rank batch and 1 thread per rank, repeated REPS times interleaved (none, local,
# mpi, none, ...). Prints each run, then per mode the median, the spread (min-max) and the
# median's ratio to --parallel none's, with the machine's state before and after: on 2 shared
# cores the load average moves every figure.
# BASELINE=OTHER_BUILD_DIR runs that build's ringgrad-train too, interleaved with this one's
# (e.g. a worktree of the commit before a change: the change's effect, measured side by side).
#   Usage: bench/run_train_scaling.sh [BUILD_DIR]   (REPS=5, MODEL=mlp, EPOCHS=1, BATCH=64, BASELINE=)
set -euo pipefail
build=${1:-build}
reps=${REPS:-5} model=${MODEL:-mlp} epochs=${EPOCHS:-1} batch=${BATCH:-64}
builds=("$build")
[[ -n ${BASELINE:-} ]] && builds=("$BASELINE" "$build")
for b in "${builds[@]}"; do
  [[ -x $b/bin/ringgrad-train ]] || { echo "error: $b/bin/ringgrad-train not built" >&2; exit 1; }
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export RINGGRAD_PROGRESS=plain OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

flags=(--data fashion-mnist --model "$model" --epochs "$epochs" --batch-size "$batch" --threads 1 --out "$out/run")
# The command of one mode with the ringgrad-train of build folder $2.
command_of() {
  local train="$2/bin/ringgrad-train"
  case $1 in
    none) echo "$train ${flags[*]} --parallel none" ;;
    local) echo "$train ${flags[*]} --parallel ddp --workers 2" ;;
    mpi) echo "mpirun -n 2 --oversubscribe $train ${flags[*]} --parallel ddp" ;;
  esac
}
modes=(none local mpi)
command -v mpirun > /dev/null || modes=(none local)

echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "   $(env | grep '^OPENBLAS_' | tr '\n' ' ' || echo 'no OPENBLAS_* variable set'); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== $model, batch $batch per rank, $epochs epoch(s), 1 thread per rank, $reps interleaved repetitions"
for ((rep = 1; rep <= reps; ++rep)); do
  for b in "${builds[@]}"; do
    for mode in "${modes[@]}"; do
      rate=$($(command_of "$mode" "$b") 2>&1 | sed -nE 's/^summary: .*samples_per_s=([0-9.]+).*/\1/p')
      [[ -n $rate ]] || { echo "error: no summary line from: $(command_of "$mode" "$b")" >&2; exit 1; }
      echo "$rate" >> "$out/${b//\//_}.$mode"
      printf 'rep %d %-6s %8s samples/s  (%s)\n' "$rep" "$mode" "$rate" "$b"
    done
  done
done

median() { sort -n "$1" | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
for b in "${builds[@]}"; do
  results="$out/${b//\//_}"
  base=$(median "$results.none")
  echo "== $b"
  printf '%-6s %10s %20s %10s\n' mode median "spread (min-max)" "/ none"
  for mode in "${modes[@]}"; do
    printf '%-6s %10.0f %9.0f-%-10.0f %10.2f\n' "$mode" "$(median "$results.$mode")" \
      "$(sort -n "$results.$mode" | head -1)" "$(sort -n "$results.$mode" | tail -1)" \
      "$(echo "$(median "$results.$mode") / $base" | bc -l)"
  done
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
