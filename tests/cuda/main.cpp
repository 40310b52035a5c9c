// main() for the GPU tests: exits 77 (ctest's "skipped") when no GPU is visible, else
// runs Catch2 and exits 1 on any failure (Catch2's own main returns the failure count,
// which could itself be 77).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <iostream>

#include "tensor/cuda.h"

int main(int argc, char** argv) {
  if (rg::cuda::device_count() == 0) {
    std::cout << "cuda tests skipped: " << rg::cuda::unavailable_reason() << "\n";
    return 77;
  }
  std::cout << "cuda tests on " << rg::cuda::device_count() << " device(s), cuda:0 is "
            << rg::cuda::device_name(0) << "\n";
  return Catch::Session().run(argc, argv) == 0 ? 0 : 1;
}
