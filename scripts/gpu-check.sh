#!/usr/bin/env bash
# scripts/gpu-check.sh — one prepared command for a GPU machine (the CUDA backend's check).
#   scripts/gpu-check.sh prepare   on the build machine (Debian 12, apt): packs what a GPU machine
#                                  lacks into .gpu-deps/ (ignored by git, carried with the tree):
#                                  the Debian packages the build needs, OpenMPI with the libraries
#                                  it depends on, and Fashion-MNIST's 10000-image test split
#   scripts/gpu-check.sh           on the GPU machine (CUDA toolkit, CMake, ninja; no registry, no
#                                  network, maybe one GPU): unpacks them, configures with
#                                  -DRINGGRAD_CUDA=ON, builds, runs the GPU tests, the GPU demos of
#                                  ringgrad-train (DDP on NCCL over the GPUs present, DataParallel
#                                  over them, CUDA against CPU on the same steps), and prints the
#                                  GPU benchmarks beside their targets. A few minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
DEPS=$PWD/.gpu-deps
BUILD=${RINGGRAD_GPU_BUILD_DIR:-build-gpu}
PACKAGES=(libopenblas0-pthread libopenblas-pthread-dev libopenblas-dev libgfortran5 catch2
          nlohmann-json3-dev zlib1g-dev libcli11-dev libstb-dev libstb0)
# OpenMPI and the libraries it loads that a CUDA machine may lack (the C library and the
# compiler's runtime it surely has: shadowing those would break its own programs).
MPI_PACKAGES=(openmpi-bin openmpi-common libopenmpi3 libopenmpi-dev libhwloc15 libevent-core-2.1-7
              libevent-pthreads-2.1-7 libpmix2 libfabric1 libucx0 libibverbs1 librdmacm1 libpsm2-2
              libpsm-infinipath1 libnl-3-200 libnl-route-3-200 libnuma1 libmunge2 libpciaccess0
              libxnvctrl0 ocl-icd-libopencl1 libxml2 libicu72)

prepare() {
  local work
  work=$(mktemp -d)
  chmod 755 "$work"  # apt downloads as the _apt user
  (cd "$work" && apt-get download "${PACKAGES[@]}" "${MPI_PACKAGES[@]}" >/dev/null)
  for deb in "$work"/*.deb; do dpkg -x "$deb" "$work/root"; done
  # Only headers, shared libraries and CMake files are needed: drop the rest to stay small.
  find "$work/root" -name '*.a' -delete
  rm -rf "$work/root/usr/share/doc" "$work/root/usr/share/man"
  mkdir -p "$DEPS"
  tar czf "$DEPS/deps.tar.gz" -C "$work/root" .
  rm -rf "$work"
  # The test split only (4.4 MB): the GPU machine trains and evaluates on it.
  mkdir -p "$DEPS/data/fashion-mnist"
  cp /usr/share/datasets/fashion-mnist/t10k-* "$DEPS/data/fashion-mnist/"
  echo "packed $(du -sh "$DEPS" | cut -f1) into $DEPS"
}

check() {
  [ -f "$DEPS/deps.tar.gz" ] || { echo "run 'scripts/gpu-check.sh prepare' on the build machine first" >&2; exit 2; }
  local root=$DEPS/root
  rm -rf "$root" && mkdir -p "$root" && tar xzf "$DEPS/deps.tar.gz" -C "$root"
  export LD_LIBRARY_PATH=$root/usr/lib/x86_64-linux-gnu/openblas-pthread:$root/usr/lib/x86_64-linux-gnu:$root/usr/lib/x86_64-linux-gnu/openmpi/lib:${LD_LIBRARY_PATH:-}
  if ! command -v mpirun >/dev/null; then  # the packed OpenMPI, relocated to where it was unpacked
    export PATH=$root/usr/bin:$PATH OPAL_PREFIX=$root/usr OPAL_LIBDIR=$root/usr/lib/x86_64-linux-gnu/openmpi/lib
    for tool in mpirun mpiexec mpicc mpicxx; do ln -sf "$tool.openmpi" "$root/usr/bin/$tool"; done  # Debian's alternatives
  fi
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_plm_rsh_agent=false
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  local nvcc=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
  local generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  echo "== configure"
  cmake -S . -B "$BUILD" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DRINGGRAD_CUDA=ON \
    -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHS:-90}" \
    -DCMAKE_PREFIX_PATH="$root/usr" | grep -E "CUDA backend|NCCL|OpenBLAS|MPI|Error" || true
  echo "== build"
  cmake --build "$BUILD" --parallel "$(nproc)" --target ringgrad_cuda cuda_tests tensor_tests bench_cuda \
    bench_train_step ringgrad-train chapter_09_library_vs_handwritten
  echo "== GPU tests"
  ctest --test-dir "$BUILD" -R '^cuda\.' --output-on-failure || true
  echo "== CPU tensor tests on this machine (sanity)"
  ctest --test-dir "$BUILD" -R '^tensor\.' --parallel "$(nproc)" 2>&1 | tail -3
  training_demos
  echo "== chapter 09 on NCCL (the chapter with a GPU mode): mpirun -n GPUS chapter_09_library_vs_handwritten --nccl"
  mpirun -n "$(gpu_count)" "$BUILD/bin/chapter_09_library_vs_handwritten" --nccl --out "$BUILD/gpu-demos/c09" || true
  echo "== GPU benchmarks (targets: a training step of the MLP at batch 128 at most 1.3x its GEMMs alone;"
  echo "   the CNN at least 20x the 1-thread CPU figure in README.md's table)"
  "$BUILD/bin/bench_cuda"
  compare_training_step
}

# The GPUs nvidia-smi lists, at least 1 (a machine without nvidia-smi still has its one).
gpu_count() {
  local n
  n=$(nvidia-smi --list-gpus 2>/dev/null | wc -l)
  echo $((n > 0 ? n : 1))
}

# ringgrad-train on the GPUs present: DDP on NCCL (one process per GPU), DataParallel over
# them, and the same steps on CUDA and on the CPU (float64: equal to rounding).
training_demos() {
  local train=$BUILD/bin/ringgrad-train gpus out=$BUILD/gpu-demos
  gpus=$(gpu_count)
  [ "$gpus" -eq 1 ] && echo "(one GPU: the multi-GPU paths run at N = 1 only; their scaling needs a machine with more)"
  export RINGGRAD_DATA=$DEPS/data RINGGRAD_PROGRESS=plain
  prepare_fashion_test_split
  echo "== DDP on NCCL over $gpus GPU(s): mpirun -n $gpus ringgrad-train --device cuda --parallel ddp"
  mpirun -n "$gpus" "$train" --data fashion-mnist --model mlp --device cuda --parallel ddp --batch-size 128 \
    --epochs 1 --trace-steps 5 --out "$out/ddp" | grep -E "^(ringgrad-train|batch|test accuracy|communication|summary)" || true
  echo "== DataParallel over cuda:0..$((gpus - 1))"
  "$train" --data fashion-mnist --model cnn --device cuda --parallel dp --workers "$gpus" --batch-size 128 \
    --epochs 1 --out "$out/dp" | grep -E "^(ringgrad-train|test accuracy|summary)" || true
  echo "== one epoch of the MLP, batch 128, training only (target: a 60000-image epoch under 1 s;"
  echo "   this is the 10000-image split: multiply train_s by 6)"
  "$train" --data fashion-mnist --model mlp --device cuda --batch-size 128 --epochs 1 --out "$out/epoch" | grep "^summary"
  echo "== CUDA against CPU: 20 steps of the CNN in float64, same seed"
  local cpu gpu
  cpu=$("$train" --data synthetic --model cnn --dtype float64 --max-steps 20 --threads "$(nproc)" --out "$out/cpu" | grep "^summary")
  gpu=$("$train" --data synthetic --model cnn --dtype float64 --max-steps 20 --device cuda --out "$out/cuda" | grep "^summary")
  echo "cpu:  $cpu"; echo "cuda: $gpu"
  awk -v a="$cpu" -v b="$gpu" 'BEGIN {
    match(a, /test_loss=[0-9.]+/); la = substr(a, RSTART + 10, RLENGTH - 10)
    match(b, /test_loss=[0-9.]+/); lb = substr(b, RSTART + 10, RLENGTH - 10)
    d = la - lb; if (d < 0) d = -d
    printf "test loss %s vs %s: %s\n", la, lb, (d <= 1e-4 ? "equal to 4 decimals" : "DIFFERENT") }'
}

# Fashion-MNIST's test split serves as both splits here (the packed copy stays small).
prepare_fashion_test_split() {
  local dir=$DEPS/data/fashion-mnist
  [ -f "$dir/t10k-images-idx3-ubyte.gz" ] || return 0
  cp -n "$dir/t10k-images-idx3-ubyte.gz" "$dir/train-images-idx3-ubyte.gz"
  cp -n "$dir/t10k-labels-idx1-ubyte.gz" "$dir/train-labels-idx1-ubyte.gz"
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
