#!/usr/bin/env bash
# train.mpi_ddp_equals_local: ringgrad-train --parallel ddp as 2 MPI processes and as 2
# rank-threads of one process (--backend local) must write the same checkpoint, bit for
# bit: with two ranks an all-reduce adds the same two numbers in either backend.
# Usage: mpi_ddp_equals_local.sh MPIEXEC RINGGRAD_TRAIN
set -euo pipefail
mpiexec=$1 train=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
flags=(--data synthetic --model mlp --epochs 2 --parallel ddp --batch-size 32 --threads 1)
"$mpiexec" -n 2 --oversubscribe "$train" "${flags[@]}" --out "$out/mpi" >"$out/mpi.log" 2>&1 ||
  { cat "$out/mpi.log"; exit 1; }
"$train" "${flags[@]}" --backend local --workers 2 --out "$out/local" >"$out/local.log" 2>&1 ||
  { cat "$out/local.log"; exit 1; }
tail -1 "$out/mpi.log"
tail -1 "$out/local.log"
cmp "$out/mpi/checkpoint.safetensors" "$out/local/checkpoint.safetensors"
echo "identical checkpoints"
