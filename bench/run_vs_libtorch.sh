#!/usr/bin/env bash
# Training throughput, ringgrad vs LibTorch, on Fashion-MNIST: MLP batch 64/128/256 and CNN
# batch 64 at 1 and 2 threads. Each configuration runs REPS times, ringgrad and LibTorch
# interleaved (so machine load hits both alike), and the medians are compared. LibTorch runs
# in its best configuration here: OPENBLAS_NUM_THREADS=1 (its OpenMP pool and OpenBLAS's pool
# fight over the cores otherwise).  Usage: bench/run_vs_libtorch.sh [BUILD_DIR]   (REPS=3)
set -euo pipefail
build=${1:-build}
reps=${REPS:-3}
train=$build/bin/ringgrad-train
torch_bin=$build/bin/bench_train_libtorch
for bin in "$train" "$torch_bin"; do
  [[ -x $bin ]] || { echo "error: $bin not built (LibTorch: apt install libtorch-dev, then rebuild)" >&2; exit 1; }
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

ringgrad_rate() {  # model batch threads steps lr
  RINGGRAD_PROGRESS=plain "$train" --data fashion-mnist --model "$1" --batch-size "$2" --threads "$3" \
    --max-steps "$4" --lr "$5" --out "$out/run" 2>/dev/null | tail -n 1 | sed -E 's/.*samples_per_s=([0-9]+).*/\1/'
}
libtorch_rate() {  # model batch threads steps
  OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=$3 "$torch_bin" --model "$1" --batch-size "$2" --threads "$3" \
    --steps "$4" | sed -E 's/.*samples_per_s=([0-9]+).*/\1/'
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; $reps runs each, medians"
printf '%-10s %7s %8s %20s %20s %8s\n' model batch threads "ringgrad samples/s" "LibTorch samples/s" ratio
# model batch steps lr
for config in "mlp 64 600 0.05" "mlp 128 400 0.05" "mlp 256 250 0.05" "cnn 64 80 0.01"; do
  read -r model batch steps lr <<<"$config"
  for threads in 1 2; do
    : >"$out/rg"
    : >"$out/lt"
    for ((r = 0; r < reps; ++r)); do
      ringgrad_rate "$model" "$batch" "$threads" "$steps" "$lr" >>"$out/rg"
      libtorch_rate "$model" "$batch" "$threads" "$steps" >>"$out/lt"
    done
    rg=$(median <"$out/rg")
    lt=$(median <"$out/lt")
    printf '%-10s %7s %8s %20.0f %20.0f %8.2f\n' "$model" "$batch" "$threads" "$rg" "$lt" "$(echo "$rg / $lt" | bc -l)"
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
