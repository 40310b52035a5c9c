// Host-side random generator: a (seed, offset) position in the Philox stream
// defined in philox.h, plus fills of contiguous CPU buffers. CUDA kernels get
// the same numbers by calling reserve() here and the philox.h functions there.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

namespace rg {

class Generator {
 public:
  explicit Generator(uint64_t seed = 0) : seed_(seed) {}
  Generator(const Generator& other) : seed_(other.seed_), offset_(other.offset()) {}
  Generator& operator=(const Generator& other) {
    set_state(other.seed_, other.offset());
    return *this;
  }

  uint64_t seed() const { return seed_; }
  uint64_t offset() const { return offset_.load(std::memory_order_relaxed); }
  void set_state(uint64_t seed, uint64_t offset) {
    seed_ = seed;
    offset_.store(offset, std::memory_order_relaxed);
  }

  // Returns the current offset and advances it by `words` rounded up to a
  // multiple of 4, in one atomic step: fills from several threads never share
  // words. Starting every fill on a fresh Philox block means a GPU thread can
  // own whole blocks of one fill, and no block is shared between two fills that
  // might run on different devices or streams.
  uint64_t reserve(uint64_t words);

  // Each fill reserves its words first, then element i is a pure function of
  // (seed, start offset, i), so splitting the work across threads never
  // changes a value. Two consecutive fills of n/2 are NOT the same as one
  // fill of n: each fill starts on a new block (see reserve).
  //   float uniform:  1 word,  low + (high - low) * u in float, u from 24 bits
  //   double uniform: 2 words, same in double, u from 53 bits
  //   normal:         2 words, Box-Muller in double, then mean + std * z
  //   randint:        1 word,  low + bounded(word, high - low)
  void fill_uniform(float* out, int64_t n, double low, double high);
  void fill_uniform(double* out, int64_t n, double low, double high);
  void fill_normal(float* out, int64_t n, double mean, double std);
  void fill_normal(double* out, int64_t n, double mean, double std);
  // Values in [low, high); throws rg::Error unless
  // low < high and high - low <= 2^32.
  void fill_randint(int64_t* out, int64_t n, int64_t low, int64_t high);

  // A random permutation of 0..n-1 that every rank computes identically from
  // the same (seed, offset). Algorithm (Fisher-Yates, descending): start
  // from the identity; reserve n-1 words starting at o; for k = 0, 1, ...,
  // with i = n-1-k going from n-1 down to 1: j = bounded(word(seed, o + k),
  // i + 1), swap(p[i], p[j]). Requires 0 <= n <= 2^32.
  std::vector<int64_t> randperm(int64_t n);

 private:
  uint64_t seed_;
  std::atomic<uint64_t> offset_{0};
};

// The process-wide generator (seed 0) used when no generator is given, e.g. by
// a layer's default initialisation. Fills from several threads (the rank-threads
// of a local world building their models) are safe, but which thread gets which
// words depends on timing: tests and programs that care about reproducibility
// should create and pass their own Generator, or set the state before each use.
Generator& default_generator();

}  // namespace rg
