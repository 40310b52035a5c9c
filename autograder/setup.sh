#!/usr/bin/env bash
# Gradescope's setup.sh (autograder/README.md): runs once, as root, when Gradescope builds the
# autograder image from the zip, which it unpacks into /autograder/source. Installs the build
# tools and libraries, then copies and builds the reference tree and every lab's test program,
# so that grading a submission only recompiles the files the student's regions are in.
# Written for Gradescope's Ubuntu 22.04 image; the package names exist in Debian 12 as well.
set -euo pipefail
# In the zip this file sits at the tree's top; in the repository, in autograder/.
source_dir=$(cd "$(dirname "$0")" && pwd)
[[ -x $source_dir/scripts/grade ]] || source_dir=$(dirname "$source_dir")
export DEBIAN_FRONTEND=noninteractive

# ccache: a region file put back to the reference text after a lab recompiles from the cache.
packages=(g++ make cmake ninja-build pkg-config ccache libopenblas-dev catch2 zlib1g-dev libstb-dev
          nlohmann-json3-dev libcli11-dev libopenmpi-dev openmpi-bin git)
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${packages[@]}" > /dev/null

# The tree needs CMake 3.25; Ubuntu 22.04 has 3.22, so Kitware's wheel from PyPI replaces it there.
cmake_version=$(cmake --version | sed -n 's/^cmake version //p')
if [[ $(printf '%s\n' 3.25 "$cmake_version" | sort -V | head -1) != 3.25 ]]; then
  apt-get install -y -qq --no-install-recommends python3-pip > /dev/null
  python3 -m pip install --quiet 'cmake>=3.25,<4'
  hash -r
fi

# The same folder run_autograder grades in.
bash "$source_dir/scripts/grade" --setup --work "${RINGGRAD_GRADE_WORK:-/autograder/grade-work}"
