// Philox4x32-10 counter-based random numbers (Salmon et al., SC'11) and the
// ringgrad stream definition built on it. Header-only and free of host-only
// calls so CPU code and CUDA kernels produce the same bits for the same
// (seed, word index).
#pragma once

#include <cmath>
#include <cstdint>

#ifndef RG_HOST_DEVICE
#ifdef __CUDACC__
#define RG_HOST_DEVICE __host__ __device__
#else
#define RG_HOST_DEVICE
#endif
#endif

// Stream definition (the CPU/GPU contract):
//   A generator is (seed, offset); offset counts 32-bit words already used.
//   Word w of the stream is word (w % 4) of philox4x32_10(w / 4, seed).
//   A fill of n elements starting at offset o uses a fixed number of words
//   per element so offsets advance predictably:
//     1 word  (w = o + i):          float32 uniform, randint
//     2 words (o + 2i, o + 2i + 1): float64 uniform, normals (any dtype)
//   Any thread can therefore compute element i alone, with no shared state.
namespace rg::philox {

struct Block {
  uint32_t x[4];
};

inline constexpr uint32_t kMul0 = 0xD2511F53u;
inline constexpr uint32_t kMul1 = 0xCD9E8D57u;
inline constexpr uint32_t kWeyl0 = 0x9E3779B9u;  // golden ratio
inline constexpr uint32_t kWeyl1 = 0xBB67AE85u;  // sqrt(3) - 1
inline constexpr int kRounds = 10;

// One Philox round: two 32x32->64 multiplies, then a fixed word shuffle that
// mixes the high halves with the other counter words and the round key.
RG_HOST_DEVICE inline void philox_round(uint32_t c[4], const uint32_t k[2]) {
  const uint64_t p0 = static_cast<uint64_t>(kMul0) * c[0];
  const uint64_t p1 = static_cast<uint64_t>(kMul1) * c[2];
  const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32);
  const uint32_t lo0 = static_cast<uint32_t>(p0);
  const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32);
  const uint32_t lo1 = static_cast<uint32_t>(p1);
  const uint32_t c1 = c[1];
  const uint32_t c3 = c[3];
  c[0] = hi1 ^ c1 ^ k[0];
  c[1] = lo1;
  c[2] = hi0 ^ c3 ^ k[1];
  c[3] = lo0;
}

// Full 128-bit counter and 64-bit key, exactly as in Random123, so the
// published known-answer vectors can be checked directly.
RG_HOST_DEVICE inline Block philox4x32_10_raw(const uint32_t ctr[4],
                                              const uint32_t key[2]) {
  uint32_t c[4] = {ctr[0], ctr[1], ctr[2], ctr[3]};
  uint32_t k[2] = {key[0], key[1]};
  for (int r = 0; r < kRounds; ++r) {
    if (r > 0) {  // the key is bumped between rounds, not before the first
      k[0] += kWeyl0;
      k[1] += kWeyl1;
    }
    philox_round(c, k);
  }
  return Block{{c[0], c[1], c[2], c[3]}};
}

// counter -> (lo32, hi32, 0, 0), key -> (lo32, hi32). 2^64 blocks per seed is
// far more than any run consumes, so the upper counter words stay zero.
RG_HOST_DEVICE inline Block philox4x32_10(uint64_t counter, uint64_t key) {
  const uint32_t c[4] = {static_cast<uint32_t>(counter),
                         static_cast<uint32_t>(counter >> 32), 0u, 0u};
  const uint32_t k[2] = {static_cast<uint32_t>(key),
                         static_cast<uint32_t>(key >> 32)};
  return philox4x32_10_raw(c, k);
}

// Word number w of the stream for this seed.
RG_HOST_DEVICE inline uint32_t word(uint64_t seed, uint64_t w) {
  return philox4x32_10(w / 4, seed).x[w % 4];
}

// [0, 1) from the top 24 bits: every result is exactly representable in a
// float, so no rounding can push a value up to 1.0f.
RG_HOST_DEVICE inline float uniform_float(uint32_t bits) {
  return static_cast<float>(bits >> 8) * (1.0f / 16777216.0f);  // 2^-24
}

// [0, 1) from 53 bits: the top 53 of (hi << 32 | lo), again exact in a double.
RG_HOST_DEVICE inline double uniform_double(uint32_t hi, uint32_t lo) {
  const uint64_t bits = (static_cast<uint64_t>(hi) << 32) | lo;
  return static_cast<double>(bits >> 11) * (1.0 / 9007199254740992.0);  // 2^-53
}

// [0, range) by multiply-shift. Requires 1 <= range <= 2^32 (so the product
// fits in 64 bits). Each result has floor or ceil of 2^32 / range source
// values, a relative bias of at most range / 2^32; accepted because it is
// branch-free and uses exactly one word, which keeps offsets predictable.
RG_HOST_DEVICE inline int64_t bounded(uint32_t bits, uint64_t range) {
  return static_cast<int64_t>((static_cast<uint64_t>(bits) * range) >> 32);
}

// scale * x + shift with two roundings everywhere. nvcc fuses a*b+c into one
// FMA by default, which would make GPU results differ from the CPU in the
// last bit; the _rn intrinsics forbid that fusion.
RG_HOST_DEVICE inline float affine(float x, float scale, float shift) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(__fmul_rn(scale, x), shift);
#else
  return scale * x + shift;
#endif
}

RG_HOST_DEVICE inline double affine(double x, double scale, double shift) {
#ifdef __CUDA_ARCH__
  return __dadd_rn(__dmul_rn(scale, x), shift);
#else
  return scale * x + shift;
#endif
}

// u in [0, 1) mapped to [low, high). Even with u < 1, low + (high - low) * u
// can round up to exactly high (e.g. float low = 1, high = 2); mapping that
// case to low keeps the interval half-open without drawing another word.
RG_HOST_DEVICE inline float uniform_in(float u, float low, float high) {
  const float v = affine(u, high - low, low);
  return v >= high ? low : v;
}

RG_HOST_DEVICE inline double uniform_in(double u, double low, double high) {
  const double v = affine(u, high - low, low);
  return v >= high ? low : v;
}

// Standard normal by Box-Muller from two words: u1 = (a + 1) / 2^32 lies in
// (0, 1] so log never sees 0, u2 = b / 2^32 lies in [0, 1). Only the cosine
// branch is used so each element needs exactly two words. Tails are cut at
// sqrt(2 ln 2^32) ~ 6.66 sigma, which 32-bit u1 cannot go beyond.
// Computed in double; CUDA code must use this same function (double log,
// sqrt, cos). The two libms differ, so GPU and CPU normals agree to a few
// ulps rather than bit for bit.
RG_HOST_DEVICE inline double normal_from(uint32_t a, uint32_t b) {
  constexpr double kInv2Pow32 = 1.0 / 4294967296.0;
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  const double u1 = (static_cast<double>(a) + 1.0) * kInv2Pow32;
  const double u2 = static_cast<double>(b) * kInv2Pow32;
  return ::sqrt(-2.0 * ::log(u1)) * ::cos(kTwoPi * u2);
}

}  // namespace rg::philox
