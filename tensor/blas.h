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

// The single-precision GEMM of the CPU backend, the matrix product's and the convolution's
// (float64 is always OpenBLAS's): ringgrad's own AVX-512 kernel (tensor/cpu/sgemm_avx512.h),
// the default where the CPU has AVX-512F, or OpenBLAS, the default elsewhere and with
// RINGGRAD_SGEMM=openblas in the environment (RINGGRAD_CONV_GEMM=openblas, its name while only
// the convolution used it, still works).
enum class Sgemm { openblas, own_avx512 };
Sgemm sgemm_kernel();
// For tests and benchmarks: own_avx512 on a CPU without AVX-512F is an error.
void set_sgemm_kernel(Sgemm choice);
const char* sgemm_kernel_name(Sgemm choice);  // "openblas", "ringgrad-avx512"

}  // namespace rg
