// Whether this CPU has AVX-512F, asked once. The portable build compiles for SSE2; the few
// kernels written for AVX-512 (sgemm_avx512.cpp, the 2x2 max pool, col2im's adds) carry
// __attribute__((target("avx512f"))) and run only where this says yes.
#pragma once

namespace rg::cpu {

inline bool cpu_has_avx512f() {
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
}

}  // namespace rg::cpu
