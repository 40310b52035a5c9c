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

// The GEMM the CPU convolution runs in float32 (float64 is always OpenBLAS's): ringgrad's own
// AVX-512 kernel (tensor/cpu/sgemm_avx512.h), the default where the CPU has AVX-512F, or
// OpenBLAS, the default elsewhere and with RINGGRAD_CONV_GEMM=openblas in the environment.
enum class ConvGemm { openblas, own_avx512 };
ConvGemm conv_gemm();
// For tests and benchmarks: own_avx512 on a CPU without AVX-512F is an error.
void set_conv_gemm(ConvGemm choice);
const char* conv_gemm_name(ConvGemm choice);  // "openblas", "ringgrad-avx512"

}  // namespace rg
