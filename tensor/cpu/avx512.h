// Whether this CPU has AVX-512F, asked once, and the lane mask every AVX-512 kernel's edges
// use. The portable build compiles for SSE2; the few kernels written for AVX-512
// (sgemm_avx512.cpp, the 2x2 max pool, col2im's adds and zeroing) carry
// __attribute__((target("avx512f"))) and run only where cpu_has_avx512f() says yes.
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

namespace rg::cpu {

inline bool cpu_has_avx512f() {
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
}

// Lanes [0, valid) of a 16-float register (none for valid <= 0, all for valid >= 16): the mask
// of a masked load or store that must not touch memory past the last valid element.
inline __mmask16 first_lanes(int64_t valid) {
  return valid >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << std::max<int64_t>(valid, 0)) - 1);
}

}  // namespace rg::cpu
