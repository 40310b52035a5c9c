#!/usr/bin/env bash
# Test accuracy of ringgrad-train on real Fashion-MNIST (issue 6's quality bar, >= 88%):
# MLP, batch 128, SGD lr 0.05 momentum 0.9, 10 epochs, median of the seeds in SEEDS (default
# 3); CNN, batch 64, SGD lr 0.01 momentum 0.9, 3 epochs (CNN_SEEDS, default 1).
# Usage: bench/quality.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
train=$build/bin/ringgrad-train
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

run() {  # label seeds flags...
  local label=$1 seeds=$2
  shift 2
  : >"$out/acc"
  for seed in $seeds; do
    local line
    line=$(RINGGRAD_PROGRESS=plain "$train" --data fashion-mnist "$@" --seed "$seed" --out "$out/$label" 2>/dev/null |
      tail -n 1)
    echo "$label seed $seed: $line"
    sed -E 's/.*test_acc=([0-9.]+).*/\1/' <<<"$line" >>"$out/acc"
  done
  echo "$label: median test accuracy $(median <"$out/acc") (bar: 0.88)"
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores"
run mlp "${SEEDS:-0 1 2}" --model mlp --batch-size 128 --lr 0.05 --momentum 0.9 --epochs 10
run cnn "${CNN_SEEDS:-0}" --model cnn --batch-size 64 --lr 0.01 --momentum 0.9 --epochs 3
