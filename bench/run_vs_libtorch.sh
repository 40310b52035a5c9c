#!/usr/bin/env bash
# Training throughput, ringgrad vs LibTorch, on full epochs of Fashion-MNIST: MLP batch
# 64/128/256 and CNN batch 64, at 1 and 2 threads. Each configuration runs REPS times,
# ringgrad and LibTorch interleaved (so machine load hits both alike); the table gives
# medians with their spread (min-max over the runs), the ratio of the medians, the achieved
# GFLOP/s beside the measured sgemm roofline, and each side's peak memory (maximum resident
# set). LibTorch runs in its best configuration here: OPENBLAS_NUM_THREADS=1 (its OpenMP
# pool and OpenBLAS's pool fight over the cores otherwise).
#   Usage: bench/run_vs_libtorch.sh [BUILD_DIR]   (REPS=5; MODELS="mlp cnn")
set -euo pipefail
build=${1:-build}
reps=${REPS:-5}
models=${MODELS:-mlp cnn}
train=$build/bin/ringgrad-train
torch_bin=$build/bin/bench_train_libtorch
tensor_bin=$build/bin/bench_tensor
for bin in "$train" "$torch_bin" "$tensor_bin"; do
  [[ -x $bin ]] || { echo "error: $bin not built (LibTorch: apt install libtorch-dev, then rebuild)" >&2; exit 1; }
done
[[ -x /usr/bin/time ]] || { echo "error: /usr/bin/time missing (apt install time)" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
train_size=60000

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
spread() { sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "%.0f-%.0f", lo, hi}'; }

# Multiply-adds x 2 of one training step, per sample: forward, the weight gradients, and
# the input gradients of every layer but the first (nothing needs the image's gradient).
#   MLP 784-256-128-10: forward 2*(784*256 + 256*128 + 128*10); backward twice that, less
#   the first layer's input gradient (2*784*256).
#   CNN: conv1 1->16 5x5 on 28x28 (2*16*25*784), conv2 16->32 5x5 on 14x14 (2*32*400*196),
#   fc 1568->10; backward as for the MLP (conv1 has no input gradient).
flop_per_sample() {
  case $1 in
    mlp) echo $((3 * 2 * (784 * 256 + 256 * 128 + 128 * 10) - 2 * 784 * 256)) ;;
    cnn) echo $((3 * 2 * (16 * 25 * 784 + 32 * 400 * 196 + 1568 * 10) - 2 * 16 * 25 * 784)) ;;
  esac
}

ringgrad_run() {  # model batch threads lr -> "samples_per_s peak_kb"
  RINGGRAD_PROGRESS=plain /usr/bin/time -f %M -o "$out/rss" "$train" --data fashion-mnist --model "$1" \
    --batch-size "$2" --threads "$3" --epochs 1 --lr "$4" --trace-steps 0 --out "$out/run" >"$out/log" 2>/dev/null
  echo "$(tail -n 1 "$out/log" | sed -E 's/.*samples_per_s=([0-9]+).*/\1/') $(cat "$out/rss")"
}
libtorch_run() {  # model batch threads -> "samples_per_s peak_kb"
  OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=$3 /usr/bin/time -f %M -o "$out/rss" "$torch_bin" --model "$1" \
    --batch-size "$2" --threads "$3" --steps $((train_size / $2)) >"$out/log"
  echo "$(sed -E 's/.*samples_per_s=([0-9]+).*/\1/' "$out/log") $(cat "$out/rss")"
}

load() { cut -d' ' -f1 /proc/loadavg; }
load_before=$(load)
"$tensor_bin" --sgemm-roofline >"$out/roofline"
roofline() { sed -nE "s/sgemm_roofline threads=$1 gflops=([0-9.]+)/\1/p" "$out/roofline"; }
RINGGRAD_PROGRESS=plain "$train" --data synthetic --max-steps 1 --out "$out/probe" >/dev/null 2>&1 || true
config_value() { sed -nE "s/.*\"$1\": *\"([^\"]*)\".*/\\1/p" "$out/probe/config.json" 2>/dev/null || true; }
kernels=$(config_value blas_kernels) sgemm=$(config_value sgemm)
echo "machine: $(lscpu | sed -nE 's/^Model name: *//p'), $(nproc) cores; OpenBLAS kernels: ${kernels:-unknown};" \
  "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-(unset)}; ringgrad's float32 GEMM: ${sgemm:-unknown}" \
  "(RINGGRAD_SGEMM=${RINGGRAD_SGEMM:-(unset)}); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "sgemm roofline (bench_tensor --sgemm-roofline): $(roofline 1) GFLOP/s at 1 thread, $(roofline 2) at 2"
echo "one full epoch ($train_size images) per run, $reps runs each, interleaved; samples/s as median (min-max)"
printf '%-5s %5s %3s | %20s %20s %5s | %14s %14s | %13s\n' model batch thr "ringgrad samples/s" "LibTorch samples/s" \
  ratio "ringgrad GFLOP/s" "LibTorch GFLOP/s" "peak MB rg/lt"
# model batch lr
for config in "mlp 64 0.05" "mlp 128 0.05" "mlp 256 0.05" "cnn 64 0.01"; do
  read -r model batch lr <<<"$config"
  [[ " $models " == *" $model "* ]] || continue
  for threads in 1 2; do
    : >"$out/rg"
    : >"$out/lt"
    for ((r = 0; r < reps; ++r)); do
      ringgrad_run "$model" "$batch" "$threads" "$lr" >>"$out/rg"
      libtorch_run "$model" "$batch" "$threads" >>"$out/lt"
    done
    rg=$(cut -d' ' -f1 "$out/rg" | median)
    lt=$(cut -d' ' -f1 "$out/lt" | median)
    rg_mb=$(($(cut -d' ' -f2 "$out/rg" | median | cut -d. -f1) / 1024))
    lt_mb=$(($(cut -d' ' -f2 "$out/lt" | median | cut -d. -f1) / 1024))
    flop=$(flop_per_sample "$model")
    gflops() { echo "$1 * $flop / 1000000000" | bc -l; }
    peak=$(roofline "$threads")
    printf '%-5s %5s %3s | %8.0f (%s) %8.0f (%s) %5.2f | %5.1f (%3.0f%%) %5.1f (%3.0f%%) | %6s/%-6s\n' \
      "$model" "$batch" "$threads" "$rg" "$(cut -d' ' -f1 "$out/rg" | spread)" "$lt" \
      "$(cut -d' ' -f1 "$out/lt" | spread)" "$(echo "$rg / $lt" | bc -l)" "$(gflops "$rg")" \
      "$(echo "100 * $(gflops "$rg") / $peak" | bc -l)" "$(gflops "$lt")" "$(echo "100 * $(gflops "$lt") / $peak" | bc -l)" \
      "$rg_mb" "$lt_mb"
  done
done
load_after=$(load)
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
if awk -v a="$load_before" 'BEGIN {exit !(a > 0.5)}'; then
  echo "note: the load average was $load_before before the runs (above 0.5): other work shared the cores"
fi
