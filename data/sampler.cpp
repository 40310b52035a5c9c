// Samplers (see sampler.h). rank_indices(), DistributedSampler's index list and lab 2's
// region, mirrors torch/utils/data/distributed.py line for line.
#include "data/sampler.h"

#include <iostream>
#include <numeric>

#include "tensor/error.h"
#include "tensor/generator.h"

namespace rg::data {

namespace {

std::vector<int64_t> identity(int64_t n) {
  std::vector<int64_t> out(n);
  std::iota(out.begin(), out.end(), int64_t{0});
  return out;
}

std::vector<int64_t> permutation(int64_t n, uint64_t seed, int64_t epoch) {
  Generator gen(seed + static_cast<uint64_t>(epoch));
  return gen.randperm(n);
}

// Rank options.rank's share of epoch `epoch` of a dataset of n examples, as PyTorch's
// DistributedSampler.__iter__ computes it: the epoch's order (permutation(n, options.seed,
// epoch) when options.shuffle, else 0, 1, ..., n-1), padded to `total` entries by repeating
// it from its start (over and over when n is small), or cut to its first `total` entries
// when options.drop_last; then the entries at positions rank, rank + R, rank + 2R, ...
// (R = options.num_replicas). total = R * size() is a multiple of R, so every rank gets
// total / R indices.
// BEGIN SOLUTION lab2.rank_indices
std::vector<int64_t> rank_indices(int64_t n, int64_t total, const DistributedSamplerOptions& options, int64_t epoch) {
  std::vector<int64_t> order = options.shuffle ? permutation(n, options.seed, epoch) : identity(n);
  if (!options.drop_last) {
    for (int64_t i = 0; static_cast<int64_t>(order.size()) < total; ++i) order.push_back(order[i]);
  } else {
    order.resize(total);
  }
  std::vector<int64_t> mine;
  mine.reserve(total / options.num_replicas);
  for (int64_t pos = options.rank; pos < total; pos += options.num_replicas) mine.push_back(order[pos]);
  return mine;
}
// END SOLUTION

void check_size(int64_t n, const char* who) { RG_CHECK(n >= 0, who, ": dataset size must be >= 0, got ", n); }

}  // namespace

SequentialSampler::SequentialSampler(int64_t n) : n_(n) { check_size(n, "SequentialSampler"); }

std::vector<int64_t> SequentialSampler::indices() {
  ++epoch_;
  return identity(n_);
}

RandomSampler::RandomSampler(int64_t n, uint64_t seed) : n_(n), seed_(seed) { check_size(n, "RandomSampler"); }

std::vector<int64_t> RandomSampler::indices() { return permutation(n_, seed_, epoch_++); }

DistributedSampler::DistributedSampler(int64_t n, DistributedSamplerOptions options)
    : n_(n), options_(options) {
  check_size(n, "DistributedSampler");
  const int64_t r = options.num_replicas;
  RG_CHECK(r > 0, "DistributedSampler: num_replicas must be > 0, got ", r);
  RG_CHECK(options.rank >= 0 && options.rank < r, "DistributedSampler: rank ", options.rank,
           " out of range [0, ", r, ")");
  // PyTorch: with drop_last, ceil((n - R) / R) = floor(n / R) whenever n % R != 0.
  num_samples_ = options_.drop_last && n % r != 0 ? n / r : (n + r - 1) / r;
}

int64_t DistributedSampler::num_padded() const {
  if (options_.drop_last) return 0;
  // Positions >= n of the padded list are duplicates; this rank holds those among
  // rank, rank + R, ..., below total_size().
  int64_t count = 0;
  for (int64_t pos = options_.rank; pos < total_size(); pos += options_.num_replicas) count += pos >= n_;
  return count;
}

std::vector<int64_t> DistributedSampler::indices() {
  if (options_.shuffle && epoch_ == last_epoch_) {
    if (repeated_epochs_++ == 0)
      std::cerr << "ringgrad warning: DistributedSampler: epoch " << epoch_
                << " starts with the same shuffled order as the last one; call sampler.set_epoch(epoch) before "
                   "each epoch\n";
  }
  last_epoch_ = epoch_;
  return rank_indices(n_, total_size(), options_, epoch_);
}

ShardSampler::ShardSampler(int64_t n, int64_t rank, int64_t world_size) {
  check_size(n, "ShardSampler");
  RG_CHECK(world_size >= 1, "ShardSampler: world_size must be >= 1, got ", world_size);
  RG_CHECK(rank >= 0 && rank < world_size, "ShardSampler: rank ", rank, " out of range [0, ", world_size, ")");
  begin_ = n * rank / world_size;
  end_ = n * (rank + 1) / world_size;
}

std::vector<int64_t> ShardSampler::indices() {
  std::vector<int64_t> out(size());
  std::iota(out.begin(), out.end(), begin_);
  return out;
}

}  // namespace rg::data
