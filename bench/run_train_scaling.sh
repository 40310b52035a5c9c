#!/usr/bin/env bash
# Data-parallel scaling of the training program itself (issue 13, item 2): ringgrad-train's
# summary samples/s (training time, evaluation excluded) for --parallel none, for DDP on the
# local backend (--workers 2, ranks as threads) and for DDP under mpirun -n 2, every run with
# the same per-rank batch and 1 thread per rank, repeated REPS times interleaved (none, local,
# mpi, none, ...). Prints each run, then per mode the median, the spread (min-max) and the
# median's ratio to --parallel none's, with the machine's state before and after: on 2 shared
# cores the load average moves every figure.
#   Usage: bench/run_train_scaling.sh [BUILD_DIR]   (REPS=5, MODEL=mlp, EPOCHS=1, BATCH=64)
set -euo pipefail
build=${1:-build}
reps=${REPS:-5} model=${MODEL:-mlp} epochs=${EPOCHS:-1} batch=${BATCH:-64}
train=$build/bin/ringgrad-train
[[ -x $train ]] || { echo "error: $train not built" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export RINGGRAD_PROGRESS=plain OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

flags=(--data fashion-mnist --model "$model" --epochs "$epochs" --batch-size "$batch" --threads 1 --out "$out/run")
declare -A command=(
  [none]="$train ${flags[*]} --parallel none"
  [local]="$train ${flags[*]} --parallel ddp --workers 2"
  [mpi]="mpirun -n 2 --oversubscribe $train ${flags[*]} --parallel ddp"
)
modes=(none local mpi)
command -v mpirun > /dev/null || modes=(none local)

echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "   $(env | grep OPENBLAS || echo 'no OPENBLAS_* variable set'); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== $model, batch $batch per rank, $epochs epoch(s), 1 thread per rank, $reps interleaved repetitions"
for ((rep = 1; rep <= reps; ++rep)); do
  for mode in "${modes[@]}"; do
    rate=$(${command[$mode]} 2>&1 | sed -nE 's/^summary: .*samples_per_s=([0-9.]+).*/\1/p')
    [[ -n $rate ]] || { echo "error: no summary line from: ${command[$mode]}" >&2; exit 1; }
    echo "$rate" >> "$out/$mode"
    printf 'rep %d %-6s %8s samples/s\n' "$rep" "$mode" "$rate"
  done
done

median() { sort -n "$1" | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
base=$(median "$out/none")
printf '%-6s %10s %20s %10s\n' mode median "spread (min-max)" "/ none"
for mode in "${modes[@]}"; do
  printf '%-6s %10.0f %9.0f-%-10.0f %10.2f\n' "$mode" "$(median "$out/$mode")" "$(sort -n "$out/$mode" | head -1)" \
    "$(sort -n "$out/$mode" | tail -1)" "$(echo "$(median "$out/$mode") / $base" | bc -l)"
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
