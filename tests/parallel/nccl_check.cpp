// parallel_nccl_check: the cuda.nccl.* tests, run under mpiexec with one process per GPU.
// Every rank exits 77 (skipped) when this node has fewer GPUs than ranks, so the skip is
// unanimous (mpirun reports the first non-zero exit code); any failure exits 1.
#include <iostream>

#include "checks.h"
#include "tensor/cuda.h"

namespace rg::parallel {
namespace {

int run(int argc, char** argv) {
  // OpenMPI tells every process the job's size before MPI_Init, so the skip needs no MPI.
  const char* world = std::getenv("OMPI_COMM_WORLD_SIZE");
  int ranks = world ? std::atoi(world) : 1;
  if (cuda::device_count() < ranks) {
    std::cout << "cuda.nccl skipped: " << ranks << " rank(s) need as many GPUs, found " << cuda::device_count()
              << (cuda::is_available() ? "" : " (" + cuda::unavailable_reason() + ")") << "\n";
    return 77;
  }
  auto pg = init_process_group({.backend = "nccl"}, argc, argv);
  Device device = Device::cuda(pg->local_rank());
  std::string error = testing::check_all_reduce_matrix(*pg, device);
  for (DType dtype : {DType::float32, DType::float64})
    for (int64_t length : {int64_t{0}, int64_t{1}, int64_t{pg->size() + 1}, int64_t{1009}})
      if (error.empty()) error = testing::check_other_collectives(*pg, dtype, length, device);
  if (!error.empty()) {
    std::cerr << error << std::endl;
    pg->abort(1);
  }
  if (pg->rank() == 0) std::cout << "cuda.nccl: all collectives correct on " << pg->size() << " GPU rank(s)\n";
  return 0;
}

}  // namespace
}  // namespace rg::parallel

int main(int argc, char** argv) {
  try {
    return rg::parallel::run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << e.what() << std::endl;
    return 1;
  }
}
