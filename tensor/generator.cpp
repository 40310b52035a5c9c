// Host fills for rg::Generator: reserve stream words, then map each element
// to its words with the pure functions of philox.h.
#include "tensor/generator.h"

#include <string>
#include <utility>

#include "tensor/error.h"
#include "tensor/philox.h"

namespace rg {
namespace {

constexpr uint64_t kTwoPow32 = uint64_t{1} << 32;

// Walks words w, w+1, ... computing each Philox block once instead of once
// per word. Gives exactly philox::word(seed, w) for every w.
class WordCursor {
 public:
  WordCursor(uint64_t seed, uint64_t w) : seed_(seed), w_(w) {
    if (w_ % 4 != 0) load();  // otherwise next() loads the first block
  }

  uint32_t next() {
    if (w_ % 4 == 0) load();
    return block_.x[w_++ % 4];
  }

 private:
  void load() { block_ = philox::philox4x32_10(w_ / 4, seed_); }

  uint64_t seed_;
  uint64_t w_;
  philox::Block block_{};
};

void check_count(int64_t n, const char* what) {
  if (n < 0) {
    RG_THROW(std::string(what) + ": negative count " +
                                std::to_string(n));
  }
}

void check_range(double low, double high) {
  if (!(low <= high)) {  // also rejects NaN bounds
    RG_THROW("fill_uniform: need low <= high, got low=" +
                                std::to_string(low) +
                                ", high=" + std::to_string(high));
  }
}

void check_std(double std) {
  if (!(std >= 0)) {
    RG_THROW("fill_normal: need std >= 0, got " +
                                std::to_string(std));
  }
}

}  // namespace

uint64_t Generator::reserve(uint64_t words) {
  return offset_.fetch_add((words + 3) / 4 * 4, std::memory_order_relaxed);
}

void Generator::fill_uniform(float* out, int64_t n, double low, double high) {
  check_count(n, "fill_uniform");
  check_range(low, high);
  const float lo = static_cast<float>(low);
  const float hi = static_cast<float>(high);
  WordCursor words(seed_, reserve(static_cast<uint64_t>(n)));
  for (int64_t i = 0; i < n; ++i) {
    out[i] = philox::uniform_in(philox::uniform_float(words.next()), lo, hi);
  }
}

void Generator::fill_uniform(double* out, int64_t n, double low, double high) {
  check_count(n, "fill_uniform");
  check_range(low, high);
  WordCursor words(seed_, reserve(2 * static_cast<uint64_t>(n)));
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t a = words.next();  // sequenced: first word is the high half
    const uint32_t b = words.next();
    out[i] = philox::uniform_in(philox::uniform_double(a, b), low, high);
  }
}

void Generator::fill_normal(float* out, int64_t n, double mean, double std) {
  check_count(n, "fill_normal");
  check_std(std);
  WordCursor words(seed_, reserve(2 * static_cast<uint64_t>(n)));
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t a = words.next();
    const uint32_t b = words.next();
    // Scale in double and round once, so float and double fills of the same
    // stream differ only by that final rounding.
    out[i] = static_cast<float>(
        philox::affine(philox::normal_from(a, b), std, mean));
  }
}

void Generator::fill_normal(double* out, int64_t n, double mean, double std) {
  check_count(n, "fill_normal");
  check_std(std);
  WordCursor words(seed_, reserve(2 * static_cast<uint64_t>(n)));
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t a = words.next();
    const uint32_t b = words.next();
    out[i] = philox::affine(philox::normal_from(a, b), std, mean);
  }
}

void Generator::fill_randint(int64_t* out, int64_t n, int64_t low,
                             int64_t high) {
  check_count(n, "fill_randint");
  // Unsigned subtraction: high - low may not fit in int64 (e.g. INT64_MIN..0)
  // but is exact modulo 2^64, which is enough once high > low is known.
  const uint64_t range =
      static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  if (high <= low || range > kTwoPow32) {
    RG_THROW(
        "fill_randint: need low < high and high - low <= 2^32, got low=" +
        std::to_string(low) + ", high=" + std::to_string(high));
  }
  WordCursor words(seed_, reserve(static_cast<uint64_t>(n)));
  for (int64_t i = 0; i < n; ++i) {
    out[i] = low + philox::bounded(words.next(), range);
  }
}

std::vector<int64_t> Generator::randperm(int64_t n) {
  check_count(n, "randperm");
  if (static_cast<uint64_t>(n) > kTwoPow32) {
    RG_THROW("randperm: n must be <= 2^32, got " +
                                std::to_string(n));
  }
  std::vector<int64_t> perm(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) perm[static_cast<size_t>(i)] = i;
  if (n < 2) return perm;
  WordCursor words(seed_, reserve(static_cast<uint64_t>(n - 1)));
  for (int64_t i = n - 1; i >= 1; --i) {
    const int64_t j =
        philox::bounded(words.next(), static_cast<uint64_t>(i) + 1);
    std::swap(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(j)]);
  }
  return perm;
}

Generator& default_generator() {
  static Generator generator(0);
  return generator;
}

}  // namespace rg
