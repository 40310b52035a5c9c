// Tests for the Philox4x32-10 generator: Random123 known-answer vectors, the
// word-level stream contract that GPU kernels rely on, and rough statistics
// of the host fills.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <set>
#include <stdexcept>
#include <vector>

#include "tensor/error.h"
#include "tensor/generator.h"
#include "tensor/philox.h"

using rg::Generator;
namespace philox = rg::philox;

namespace {

constexpr int64_t kDraws = 100000;

void require_block(const philox::Block& b, uint32_t x0, uint32_t x1,
                   uint32_t x2, uint32_t x3) {
  REQUIRE(b.x[0] == x0);
  REQUIRE(b.x[1] == x1);
  REQUIRE(b.x[2] == x2);
  REQUIRE(b.x[3] == x3);
}

template <typename T>
double mean_of(const std::vector<T>& v) {
  double s = 0;
  for (T x : v) s += static_cast<double>(x);
  return s / static_cast<double>(v.size());
}

template <typename T>
double variance_of(const std::vector<T>& v) {
  const double m = mean_of(v);
  double s = 0;
  for (T x : v) s += (static_cast<double>(x) - m) * (static_cast<double>(x) - m);
  return s / static_cast<double>(v.size());
}

}  // namespace

TEST_CASE("tensor.philox_kat") {
  // Known-answer vectors from Random123's kat_vectors for philox4x32_10.
  {
    const uint32_t ctr[4] = {0, 0, 0, 0};
    const uint32_t key[2] = {0, 0};
    require_block(philox::philox4x32_10_raw(ctr, key), 0x6627e8d5, 0xe169c58d,
                  0xbc57ac4c, 0x9b00dbd8);
  }
  {
    const uint32_t ctr[4] = {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff};
    const uint32_t key[2] = {0xffffffff, 0xffffffff};
    require_block(philox::philox4x32_10_raw(ctr, key), 0x408f276d, 0x41c83b0e,
                  0xa20bc7c6, 0x6d5451fd);
  }
  {
    const uint32_t ctr[4] = {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344};
    const uint32_t key[2] = {0xa4093822, 0x299f31d0};
    require_block(philox::philox4x32_10_raw(ctr, key), 0xd16cfe09, 0x94fdcceb,
                  0x5001e420, 0x24126ea1);
  }
}

TEST_CASE("tensor.philox_counter64") {
  // The 64-bit form is the raw form with counter (lo, hi, 0, 0), key (lo, hi).
  require_block(philox::philox4x32_10(0, 0), 0x6627e8d5, 0xe169c58d,
                0xbc57ac4c, 0x9b00dbd8);
  const uint32_t ctr[4] = {0x243f6a88, 0x85a308d3, 0, 0};
  const uint32_t key[2] = {0xa4093822, 0x299f31d0};
  const philox::Block raw = philox::philox4x32_10_raw(ctr, key);
  const philox::Block b =
      philox::philox4x32_10(0x85a308d3243f6a88ull, 0x299f31d0a4093822ull);
  require_block(b, raw.x[0], raw.x[1], raw.x[2], raw.x[3]);

  // word(seed, w) is word w % 4 of block w / 4.
  for (uint64_t w = 0; w < 12; ++w) {
    REQUIRE(philox::word(7, w) == philox::philox4x32_10(w / 4, 7).x[w % 4]);
  }
}

TEST_CASE("tensor.philox_conversions") {
  REQUIRE(philox::uniform_float(0) == 0.0f);
  REQUIRE(philox::uniform_float(0xffffffffu) < 1.0f);
  REQUIRE(philox::uniform_double(0, 0) == 0.0);
  REQUIRE(philox::uniform_double(0xffffffffu, 0xffffffffu) < 1.0);
  REQUIRE(philox::bounded(0, 10) == 0);
  REQUIRE(philox::bounded(0xffffffffu, 10) == 9);
  REQUIRE(philox::bounded(0xffffffffu, uint64_t{1} << 32) == 0xffffffffll);
  // u1 = 1 at the largest word, so the normal is exactly 0 there.
  REQUIRE(philox::normal_from(0xffffffffu, 0) == 0.0);
  REQUIRE(std::isfinite(philox::normal_from(0, 0)));
  // Rounding up to `high` is folded back to `low`: 1 + (1 - 2^-24) rounds to 2.
  REQUIRE(philox::uniform_in(philox::uniform_float(0xffffffffu), 1.0f, 2.0f) ==
          1.0f);
}

TEST_CASE("tensor.generator_uniform") {
  Generator g(123);
  std::vector<float> f(kDraws);
  g.fill_uniform(f.data(), kDraws, -2.0, 3.0);
  for (float x : f) {
    REQUIRE(x >= -2.0f);
    REQUIRE(x < 3.0f);
  }
  // Uniform on [a, b): mean (a + b) / 2, variance (b - a)^2 / 12.
  CHECK(mean_of(f) == Approx(0.5).margin(0.03));
  CHECK(variance_of(f) == Approx(25.0 / 12.0).margin(0.05));

  std::vector<double> d(kDraws);
  g.fill_uniform(d.data(), kDraws, 0.0, 1.0);
  for (double x : d) {
    REQUIRE(x >= 0.0);
    REQUIRE(x < 1.0);
  }
  CHECK(mean_of(d) == Approx(0.5).margin(0.01));
  CHECK(variance_of(d) == Approx(1.0 / 12.0).margin(0.005));
}

TEST_CASE("tensor.generator_normal") {
  Generator g(7);
  std::vector<double> d(kDraws);
  g.fill_normal(d.data(), kDraws, 0.0, 1.0);
  CHECK(mean_of(d) == Approx(0.0).margin(0.02));
  CHECK(std::sqrt(variance_of(d)) == Approx(1.0).margin(0.02));

  std::vector<float> f(kDraws);
  g.fill_normal(f.data(), kDraws, 3.0, 2.0);
  CHECK(mean_of(f) == Approx(3.0).margin(0.04));
  CHECK(std::sqrt(variance_of(f)) == Approx(2.0).margin(0.04));
  for (float x : f) REQUIRE(std::isfinite(x));
}

TEST_CASE("tensor.generator_randint") {
  Generator g(99);
  std::vector<int64_t> v(kDraws);
  g.fill_randint(v.data(), kDraws, -3, 7);
  std::set<int64_t> seen;
  for (int64_t x : v) {
    REQUIRE(x >= -3);
    REQUIRE(x < 7);
    seen.insert(x);
  }
  REQUIRE(seen.size() == 10);

  // The widest allowed range, 2^32, straddling zero.
  const int64_t lo = -(int64_t{1} << 31);
  const int64_t hi = int64_t{1} << 31;
  g.fill_randint(v.data(), 1000, lo, hi);
  for (int i = 0; i < 1000; ++i) {
    REQUIRE(v[i] >= lo);
    REQUIRE(v[i] < hi);
  }
}

TEST_CASE("tensor.generator_randint_error") {
  Generator g(1);
  int64_t out[4];
  REQUIRE_THROWS_AS(g.fill_randint(out, 4, 5, 3), rg::Error);
  REQUIRE_THROWS_WITH(g.fill_randint(out, 4, 5, 3),
                      Catch::Contains("low=5") && Catch::Contains("high=3"));
  REQUIRE_THROWS_WITH(g.fill_randint(out, 4, 4, 4), Catch::Contains("low=4"));
  REQUIRE_THROWS_WITH(g.fill_randint(out, 4, 0, (int64_t{1} << 32) + 1),
                      Catch::Contains("high=4294967297"));
  // high - low overflows int64 here; it must be rejected, not wrap around.
  REQUIRE_THROWS_AS(g.fill_randint(out, 4, std::numeric_limits<int64_t>::min(),
                                   std::numeric_limits<int64_t>::max()),
                    rg::Error);
  REQUIRE_NOTHROW(g.fill_randint(out, 4, 0, int64_t{1} << 32));
}

TEST_CASE("tensor.generator_determinism") {
  Generator a(42), b(42), c(43);
  std::vector<float> fa(1000), fb(1000), fc(1000);
  a.fill_uniform(fa.data(), 1000, 0.0, 1.0);
  b.fill_uniform(fb.data(), 1000, 0.0, 1.0);
  c.fill_uniform(fc.data(), 1000, 0.0, 1.0);
  REQUIRE(fa == fb);
  REQUIRE(fa != fc);

  // set_state rewinds: the same (seed, offset) replays the same values.
  a.set_state(42, 0);
  a.fill_uniform(fc.data(), 1000, 0.0, 1.0);
  REQUIRE(fa == fc);
  REQUIRE(a.seed() == 42);
  REQUIRE(a.offset() == 1000);
}

TEST_CASE("tensor.generator_reserve") {
  Generator g(5);
  REQUIRE(g.reserve(0) == 0);
  REQUIRE(g.offset() == 0);
  REQUIRE(g.reserve(1) == 0);
  REQUIRE(g.offset() == 4);
  REQUIRE(g.reserve(4) == 4);
  REQUIRE(g.offset() == 8);
  REQUIRE(g.reserve(5) == 8);
  REQUIRE(g.offset() == 16);
  // An offset set by hand is used as is; only the advance is rounded.
  g.set_state(5, 6);
  REQUIRE(g.reserve(1) == 6);
  REQUIRE(g.offset() == 10);

  // Fills advance by their word count rounded up: 3 doubles = 6 words -> 8.
  g.set_state(5, 0);
  double d[3];
  g.fill_normal(d, 3, 0.0, 1.0);
  REQUIRE(g.offset() == 8);
  float f[3];
  g.fill_uniform(f, 3, 0.0, 1.0);
  REQUIRE(g.offset() == 12);
}

TEST_CASE("tensor.generator_matches_words") {
  // The stream contract: each fill element is a pure function of
  // (seed, start offset, i), exactly what a CUDA kernel computes.
  const uint64_t seed = 0x1234567890abcdefull;
  constexpr int64_t kN = 37;
  // Start offsets on and off a block boundary.
  for (uint64_t start : {uint64_t{0}, uint64_t{8}, uint64_t{5}}) {
    Generator g(seed);

    g.set_state(seed, start);
    std::vector<float> f(kN);
    g.fill_uniform(f.data(), kN, -1.0, 2.0);
    for (int64_t i = 0; i < kN; ++i) {
      const float u = philox::uniform_float(philox::word(seed, start + i));
      REQUIRE(f[i] == philox::uniform_in(u, -1.0f, 2.0f));
    }

    g.set_state(seed, start);
    std::vector<double> d(kN);
    g.fill_uniform(d.data(), kN, -1.0, 2.0);
    for (int64_t i = 0; i < kN; ++i) {
      const double u = philox::uniform_double(philox::word(seed, start + 2 * i),
                                              philox::word(seed, start + 2 * i + 1));
      REQUIRE(d[i] == philox::uniform_in(u, -1.0, 2.0));
    }

    g.set_state(seed, start);
    g.fill_normal(d.data(), kN, 0.5, 3.0);
    for (int64_t i = 0; i < kN; ++i) {
      const double z = philox::normal_from(philox::word(seed, start + 2 * i),
                                           philox::word(seed, start + 2 * i + 1));
      REQUIRE(d[i] == 3.0 * z + 0.5);
    }

    g.set_state(seed, start);
    g.fill_normal(f.data(), kN, 0.5, 3.0);
    for (int64_t i = 0; i < kN; ++i) {
      const double z = philox::normal_from(philox::word(seed, start + 2 * i),
                                           philox::word(seed, start + 2 * i + 1));
      REQUIRE(f[i] == static_cast<float>(3.0 * z + 0.5));
    }

    g.set_state(seed, start);
    std::vector<int64_t> r(kN);
    g.fill_randint(r.data(), kN, -50, 50);
    for (int64_t i = 0; i < kN; ++i) {
      REQUIRE(r[i] == -50 + philox::bounded(philox::word(seed, start + i), 100));
    }
  }
}

TEST_CASE("tensor.generator_split_fill") {
  // Splitting a fill is not required to reproduce the unsplit fill: each fill
  // starts on a fresh 4-word block. Here 3 + 3 skips word 3, so element 3 of
  // the split fill is word 4, not word 3.
  Generator whole(11), split(11);
  std::vector<float> w(6), s(6);
  whole.fill_uniform(w.data(), 6, 0.0, 1.0);
  split.fill_uniform(s.data(), 3, 0.0, 1.0);
  split.fill_uniform(s.data() + 3, 3, 0.0, 1.0);
  REQUIRE(std::equal(w.begin(), w.begin() + 3, s.begin()));
  REQUIRE(s[3] == w[4]);
  REQUIRE(s[3] != w[3]);
}

TEST_CASE("tensor.generator_randperm") {
  Generator a(3), b(3), c(4);
  const std::vector<int64_t> p = a.randperm(1000);
  std::vector<int64_t> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> iota(1000);
  std::iota(iota.begin(), iota.end(), 0);
  REQUIRE(sorted == iota);
  REQUIRE(p != iota);
  REQUIRE(b.randperm(1000) == p);
  REQUIRE(c.randperm(1000) != p);
  REQUIRE(a.offset() == 1000);  // 999 words rounded up

  // The documented algorithm, replayed from raw words.
  std::vector<int64_t> q = iota;
  for (int64_t i = 999, k = 0; i >= 1; --i, ++k) {
    const int64_t j =
        philox::bounded(philox::word(3, static_cast<uint64_t>(k)),
                        static_cast<uint64_t>(i) + 1);
    std::swap(q[i], q[j]);
  }
  REQUIRE(q == p);

  REQUIRE(a.randperm(0).empty());
  REQUIRE(a.randperm(1) == std::vector<int64_t>{0});
}
