#!/usr/bin/env bash
# scripts/gpu-check.sh — one prepared command for a GPU machine (the CUDA backend's check).
#   scripts/gpu-check.sh prepare   on the build machine (Debian 12, apt): packs the Debian packages
#                                  a GPU machine lacks into .gpu-deps/deps.tar.gz (ignored by git,
#                                  carried with the tree to the GPU machine)
#   scripts/gpu-check.sh           on the GPU machine (CUDA toolkit, CMake, ninja; no registry):
#                                  unpacks them, configures with -DRINGGRAD_CUDA=ON, builds, runs
#                                  the GPU tests and prints the GPU benchmarks. A few minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
DEPS=$PWD/.gpu-deps
BUILD=${RINGGRAD_GPU_BUILD_DIR:-build-gpu}
PACKAGES=(libopenblas0-pthread libopenblas-pthread-dev libopenblas-dev libgfortran5 catch2
          nlohmann-json3-dev zlib1g-dev libcli11-dev libstb-dev libstb0)

prepare() {
  local work
  work=$(mktemp -d)
  chmod 755 "$work"  # apt downloads as the _apt user
  (cd "$work" && apt-get download "${PACKAGES[@]}" >/dev/null)
  for deb in "$work"/*.deb; do dpkg -x "$deb" "$work/root"; done
  # Only headers, shared libraries and CMake files are needed: drop the rest to stay small.
  find "$work/root" -name '*.a' -delete
  rm -rf "$work/root/usr/share/doc" "$work/root/usr/share/man"
  mkdir -p "$DEPS"
  tar czf "$DEPS/deps.tar.gz" -C "$work/root" .
  rm -rf "$work"
  echo "packed $(du -h "$DEPS/deps.tar.gz" | cut -f1) into $DEPS/deps.tar.gz"
}

check() {
  [ -f "$DEPS/deps.tar.gz" ] || { echo "run 'scripts/gpu-check.sh prepare' on the build machine first" >&2; exit 2; }
  local root=$DEPS/root
  rm -rf "$root" && mkdir -p "$root" && tar xzf "$DEPS/deps.tar.gz" -C "$root"
  export LD_LIBRARY_PATH=$root/usr/lib/x86_64-linux-gnu/openblas-pthread:$root/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  local nvcc=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
  local generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  echo "== configure"
  cmake -S . -B "$BUILD" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DRINGGRAD_CUDA=ON \
    -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHS:-90}" \
    -DCMAKE_PREFIX_PATH="$root/usr" | grep -E "CUDA backend|NCCL|OpenBLAS|MPI|Error" || true
  echo "== build"
  cmake --build "$BUILD" --parallel "$(nproc)" --target ringgrad_cuda cuda_tests tensor_tests bench_cuda bench_train_step
  echo "== GPU tests"
  ctest --test-dir "$BUILD" -R '^cuda\.' --output-on-failure || true
  echo "== CPU tensor tests on this machine (sanity)"
  ctest --test-dir "$BUILD" -R '^tensor\.' --parallel "$(nproc)" 2>&1 | tail -3
  echo "== GPU benchmarks"
  "$BUILD/bin/bench_cuda"
  compare_training_step
}

# samples/s of the same MLP and CNN training step in ringgrad and (where present) PyTorch.
compare_training_step() {
  echo "== training step on the GPU (random 1x28x28 inputs, SGD momentum): ringgrad vs PyTorch"
  local ours theirs
  ours=$("$BUILD/bin/bench_train_step" --device cuda)
  if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    theirs=$(python3 bench/torch_train_step.py cuda)
  else
    theirs=""
    echo "(PyTorch with CUDA not found: ringgrad's figures only)"
  fi
  printf '%-6s %6s %18s %18s %7s\n' model batch "ringgrad samples/s" "PyTorch samples/s" ratio
  while read -r model batch rate; do
    local ref
    ref=$(awk -v m="$model" '$1 == m {print $3}' <<<"$theirs")
    if [ -n "$ref" ]; then
      printf '%-6s %6s %18s %18s %7.2f\n' "$model" "$batch" "$rate" "$ref" "$(awk -v a="$rate" -v b="$ref" 'BEGIN {print a / b}')"
    else
      printf '%-6s %6s %18s %18s %7s\n' "$model" "$batch" "$rate" - -
    fi
  done <<<"$ours"
}

case "${1:-check}" in
  prepare) prepare ;;
  check) check ;;
  *) echo "usage: scripts/gpu-check.sh [prepare|check]" >&2; exit 2 ;;
esac
