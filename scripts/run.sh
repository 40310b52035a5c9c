#!/usr/bin/env bash
# scripts/run.sh demo|test|build — the README's Quick start. Installs what a fresh Debian 12
# machine lacks (skipping what is already there), builds into ./build, then runs the main
# job (demo) or the test suite (test). Both share the build directory.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages the build and tests need (iproute2: parallel.mpi.two_hosts builds its two
# "hosts" from network namespaces with `ip`).
PACKAGES=(g++ cmake ninja-build pkg-config libopenblas-dev catch2 zlib1g-dev libstb-dev nlohmann-json3-dev
          libcli11-dev libopenmpi-dev openmpi-bin dataset-fashion-mnist iproute2)
BUILD_DIR=${RINGGRAD_BUILD_DIR:-build}

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

install_packages() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return
  echo "== installing: ${missing[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

build() {
  if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
    cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release ${RINGGRAD_CMAKE_ARGS:-}
  fi
  cmake --build "$BUILD_DIR" --parallel "$(nproc)"
}

case "${1:-}" in
  demo)
    install_packages
    build
    # Data-parallel: two DistributedDataParallel workers (rank-threads of this process),
    # 64 images each per step, so the global batch is 128.
    "$BUILD_DIR/bin/ringgrad-train" --data fashion-mnist --model mlp --epochs 3 \
      --parallel ddp --workers 2 --batch-size 64 --lr 0.05 --momentum 0.9 --out runs/demo
    ;;
  test)
    install_packages
    build
    # ctest's summary (and its list of skipped tests) is the last thing printed.
    exec ctest --test-dir "$BUILD_DIR" --output-on-failure --parallel "$(nproc)"
    ;;
  build)
    install_packages
    build
    ;;
  *)
    echo "usage: scripts/run.sh demo|test|build" >&2
    exit 2
    ;;
esac
