// What the CPU backend's BLAS (OpenBLAS) runs on this machine, so a program can say so and
// point out a better setting. OpenBLAS picks its kernels for the CPU it detects, unless
// OPENBLAS_CORETYPE names a family; a CPU newer than the release, or that variable, can
// leave an AVX-512 CPU on AVX2 kernels at half the sgemm speed or less.
#pragma once
#include <string>

namespace rg {

struct BlasInfo {
  std::string config;   // e.g. "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ..."
  std::string kernels;  // the kernel family in use, e.g. "Haswell"
  // Non-empty when the CPU supports AVX-512 but the kernels in use do not: how to get them.
  std::string advice;
};

BlasInfo blas_info();

}  // namespace rg
