// Samplers: the order in which a DataLoader visits a dataset's indices, one list per epoch.
// DistributedSampler follows PyTorch's rule exactly (same padding, same rank striding) so
// lecture code maps one to one; its shuffled order comes from our Philox generator seeded
// with seed + epoch, so it differs from PyTorch's but is the same on every rank.
// ShardSampler splits a dataset into contiguous, unpadded shares for distributed evaluation.
#pragma once
#include <cstdint>
#include <vector>

namespace rg::data {

class Sampler {
 public:
  virtual ~Sampler() = default;
  virtual int64_t size() const = 0;  // indices per epoch
  // The order for epoch epoch(). Called once per epoch, when the loader's iteration begins.
  virtual std::vector<int64_t> indices() = 0;
  void set_epoch(int64_t epoch) { epoch_ = epoch; }
  int64_t epoch() const { return epoch_; }

 protected:
  int64_t epoch_ = 0;
};

// 0, 1, ..., n-1 every epoch.
class SequentialSampler : public Sampler {
 public:
  explicit SequentialSampler(int64_t n);
  int64_t size() const override { return n_; }
  std::vector<int64_t> indices() override;  // then moves to the next epoch

 private:
  int64_t n_;
};

// A permutation of 0..n-1 drawn from (seed, epoch); like PyTorch's RandomSampler it
// reshuffles on every pass by moving to the next epoch after each indices() call.
class RandomSampler : public Sampler {
 public:
  explicit RandomSampler(int64_t n, uint64_t seed = 0);
  int64_t size() const override { return n_; }
  std::vector<int64_t> indices() override;

 private:
  int64_t n_;
  uint64_t seed_;
};

struct DistributedSamplerOptions {
  int64_t num_replicas = 1;
  int64_t rank = 0;
  bool shuffle = true;
  uint64_t seed = 0;
  bool drop_last = false;
};

// Rank r of R gets positions r, r+R, r+2R, ... of the epoch's list: a permutation of
// 0..n-1 from (seed, epoch) when shuffling, else 0..n-1; padded to a multiple of R by
// repeating from its start, or trimmed to one when drop_last. The epoch only changes
// through set_epoch(), as in PyTorch: forgetting it repeats the same order every epoch,
// which indices() reports on stderr (once) and counts in repeated_epochs().
class DistributedSampler : public Sampler {
 public:
  DistributedSampler(int64_t n, DistributedSamplerOptions options = {});
  int64_t size() const override { return num_samples_; }  // indices per rank per epoch
  std::vector<int64_t> indices() override;

  int64_t total_size() const { return num_samples_ * options_.num_replicas; }
  // This rank's padded duplicates: always the last num_padded() entries of indices(), so a
  // distributed evaluation counts only the first size() - num_padded() results.
  int64_t num_padded() const;
  int64_t num_dropped() const { return options_.drop_last ? n_ - total_size() : 0; }  // all ranks together
  int64_t repeated_epochs() const { return repeated_epochs_; }

 private:
  int64_t n_;
  DistributedSamplerOptions options_;
  int64_t num_samples_;
  int64_t last_epoch_ = -1;
  int64_t repeated_epochs_ = 0;
};

// Rank r of world_size gets the r-th contiguous share of 0..n-1, [n r / R, n (r+1) / R),
// in order, every epoch. Unlike DistributedSampler's, the shares are not padded: together
// they cover every index exactly once (their sizes differ by at most one, and some are
// empty when n < R), so sums reduced over the ranks count each example once: a
// distributed evaluation.
class ShardSampler : public Sampler {
 public:
  ShardSampler(int64_t n, int64_t rank, int64_t world_size);
  int64_t size() const override { return end_ - begin_; }
  std::vector<int64_t> indices() override;  // begin(), begin() + 1, ..., end() - 1

  int64_t begin() const { return begin_; }
  int64_t end() const { return end_; }

 private:
  int64_t begin_, end_;
};

}  // namespace rg::data
