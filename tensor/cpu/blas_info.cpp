// blas_info(): OpenBLAS's own report of its build and kernels, and the CPU's AVX-512 support;
// the convolution's choice of GEMM.
#include "tensor/blas.h"

#include <cblas.h>

#include <atomic>
#include <cstdlib>
#include <set>
#include <string>

#include "tensor/cpu/sgemm_avx512.h"
#include "tensor/error.h"

namespace rg {

namespace {

// The AVX-512 subsets OpenBLAS's SkylakeX kernels need.
bool cpu_has_skylakex_features() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512vl");
}

// OpenBLAS kernel families (openblas_get_corename) that use AVX-512.
bool uses_avx512(const std::string& kernels) {
  static const std::set<std::string> avx512_families{"SkylakeX", "Cooperlake", "Sapphirerapids"};
  return avx512_families.count(kernels) > 0;
}

}  // namespace

BlasInfo blas_info() {
  BlasInfo info{openblas_get_config(), openblas_get_corename(), ""};
  if (!cpu_has_skylakex_features() || uses_avx512(info.kernels)) return info;
  if (const char* forced = std::getenv("OPENBLAS_CORETYPE")) {
    info.advice = std::string("OPENBLAS_CORETYPE=") + forced + " in the environment holds OpenBLAS to its " +
                  info.kernels + " kernels on this CPU, which has AVX-512; without it OpenBLAS picks its own";
  } else {
    info.advice = "OpenBLAS does not recognise this CPU and runs its " + info.kernels +
                  " kernels although the CPU has AVX-512; OPENBLAS_CORETYPE=SKYLAKEX selects its AVX-512 ones";
  }
  return info;
}

namespace {

bool openblas_asked_for() {
  for (const char* variable : {"RINGGRAD_SGEMM", "RINGGRAD_CONV_GEMM"})
    if (const char* asked = std::getenv(variable); asked && std::string(asked) == "openblas") return true;
  return false;
}

Sgemm default_sgemm_kernel() {
  return cpu::own_sgemm_supported() && !openblas_asked_for() ? Sgemm::own_avx512 : Sgemm::openblas;
}

std::atomic<Sgemm>& sgemm_choice() {
  static std::atomic<Sgemm> choice{default_sgemm_kernel()};
  return choice;
}

}  // namespace

Sgemm sgemm_kernel() { return sgemm_choice().load(std::memory_order_relaxed); }

void set_sgemm_kernel(Sgemm choice) {
  RG_CHECK(choice == Sgemm::openblas || cpu::own_sgemm_supported(),
           "set_sgemm_kernel: ringgrad-avx512 needs AVX-512F, which this CPU lacks");
  sgemm_choice().store(choice, std::memory_order_relaxed);
}

const char* sgemm_kernel_name(Sgemm choice) { return choice == Sgemm::openblas ? "openblas" : "ringgrad-avx512"; }

}  // namespace rg
