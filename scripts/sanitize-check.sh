#!/usr/bin/env bash
# scripts/sanitize-check.sh address|thread: a sanitizer build in its own directory, and the
# tests that need it.
#   address: Debug (-O0) + ASan/UBSan; the autograd tests (at -O0 frames are large and
#            nothing is inlined, so a recursive graph walk or destructor chain would crash),
#            and the parallel tests, the MPI ones included: the collectives, DDP, the
#            parameter server, and the failures (mismatched ranks, timeouts) whose buffers
#            must outlive MPI's pending requests. OpenMPI itself is not instrumented; ASan
#            checks our side of every call. The two-"host" test needs ringgrad-train: left out.
#   thread:  TSan; the tensor and parallel tests (thread pool, local world, communication
#            thread). The parallel.mpi.* tests are left out: OpenMPI's shared-memory transport
#            and progress threads are uninstrumented, so TSan cannot see their synchronisation
#            and reports races inside libmpi/libopen-pal; hiding them would take suppressions
#            broad enough to hide ours. The communication thread they use is the same code the
#            local world exercises here. The parallel.async.hogwild_* tests are left out too:
#            Hogwild!'s threads update one model without locks on purpose, so TSan would
#            (rightly) report that race. The thread-pool start-failure tests fork a child
#            under a thread limit: TSan refuses to start threads after a multi-threaded fork,
#            so they run in the plain build only. allocator_may_return_null: the size-overflow
#            tests ask for 2^62 bytes on purpose and expect our out-of-memory error, which
#            TSan's allocator would otherwise pre-empt by aborting.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  address)
    sanitizer=address,undefined build_type=Debug
    targets=(autograd_tests parallel_tests parallel_mpi_check parallel_ddp_mpi_check parallel_async_mpi_check)
    tests='^(autograd|parallel)\.' exclude='^parallel\.mpi\.two_hosts$'
    export ASAN_OPTIONS="detect_leaks=0 ${ASAN_OPTIONS:-}" UBSAN_OPTIONS="halt_on_error=1 print_stacktrace=1"
    ;;
  thread)
    sanitizer=thread build_type=RelWithDebInfo targets=(tensor_tests parallel_tests)
    tests='^(tensor|parallel)\.' exclude='^(parallel\.(mpi\.|async\.hogwild_)|tensor\.thread_pool_st(art_failure|arts_again))'
    export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 allocator_may_return_null=1 ${TSAN_OPTIONS:-}"
    ;;
  *) echo "usage: scripts/sanitize-check.sh address|thread" >&2; exit 2 ;;
esac
build_dir=build-${1}san
if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  cmake -S . -B "$build_dir" -G Ninja -DRINGGRAD_SANITIZE="$sanitizer" -DCMAKE_BUILD_TYPE="$build_type" \
    -DRINGGRAD_CUDA=OFF -DRINGGRAD_BUILD_BENCH=OFF >/dev/null
fi
cmake --build "$build_dir" --parallel "$(nproc)" --target "${targets[@]}"
# Sanitizers slow the code 5-15x; the tests' own timeouts are generous enough.
log=$build_dir/sanitize-check.log
if ! ctest --test-dir "$build_dir" --parallel "$(nproc)" --output-on-failure -R "$tests" -E "$exclude" >"$log" 2>&1; then
  cat "$log"
  exit 1
fi
tail -3 "$log"
