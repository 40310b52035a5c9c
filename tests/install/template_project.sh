#!/usr/bin/env bash
# template_project.sh BUILD_DIR SOURCE_DIR [MPIEXEC]: what a student does with the installed
# library, checked step by step. The template's program must be chapter 13's, unchanged.
set -euo pipefail
build=$1 source=$2 mpiexec=${3:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

step() { echo "== $*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

step "the template's program is chapter 13's"
cmp -s "$source/examples/my_first_ddp/main.cpp" "$source/chapters/13_ddp_recipe/main.cpp" ||
  fail "examples/my_first_ddp/main.cpp differs from chapters/13_ddp_recipe/main.cpp: copy it again"

step "cmake --install $build --prefix $prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null
[ -f "$prefix/include/ringgrad/ringgrad.h" ] || fail "no umbrella header <ringgrad/ringgrad.h>"

step "build the template out of the tree, against the installed package only"
cp -r "$source/examples/my_first_ddp" "$work/my_first_ddp"
generator=()  # the project's own build tool where make is absent (a fresh Debian 12 has no make)
command -v make >/dev/null || generator=(-G Ninja)
cmake -S "$work/my_first_ddp" -B "$work/my_first_ddp/build" "${generator[@]}" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release >"$work/configure.log" 2>&1 || { cat "$work/configure.log"; fail "configure"; }
cmake --build "$work/my_first_ddp/build" --parallel 2 >"$work/build.log" 2>&1 || { cat "$work/build.log"; fail "build"; }
program=$work/my_first_ddp/build/my_first_ddp
# It must load the installed libraries, not the build tree's.
if ldd "$program" | grep -q "$build/"; then ldd "$program"; fail "the program loads libraries from the build tree"; fi
ldd "$program" | grep -q "$prefix/lib/libringgrad_parallel.so" || { ldd "$program"; fail "libringgrad_parallel not from $prefix"; }

check_run() {  # the last line is the program's verdict
  local what=$1 output
  shift
  output=$("$@" 2>&1) || { echo "$output"; fail "$what exited non-zero"; }
  echo "$output" | tail -1 | grep -q '^verdict C13: ' || { echo "$output"; fail "$what printed no verdict last"; }
  echo "$output" | tail -1
}
step "run on the local backend (2 rank-threads)"
check_run "local run" "$program" --quick --backend local --workers 2
if [ -n "$mpiexec" ]; then
  step "run under $mpiexec -n 2"
  check_run "mpi run" "$mpiexec" -n 2 --oversubscribe "$program" --quick
fi

step "pkg-config: a one-file program"
if command -v pkg-config >/dev/null; then
  cat >"$work/hello.cpp" <<'CPP'
#include <ringgrad/ringgrad.h>
#include <iostream>
int main() {
  rg::Tensor t = rg::Tensor::ones({2, 3});
  std::cout << rg::sum(t).item() << "\n";
}
CPP
  # shellcheck disable=SC2046
  g++ -std=c++20 "$work/hello.cpp" -o "$work/hello" $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs ringgrad)
  [ "$("$work/hello")" = 6 ] || fail "the pkg-config program printed $("$work/hello"), not 6"
else
  echo "(pkg-config not installed: skipped this step)"
fi
echo "template project: ok"
