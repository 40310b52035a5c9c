// Lab 2, DistributedSampler's index list (data/sampler.cpp: rank_indices). Without shuffling
// the lists are PyTorch's, written out below from its rule (torch/utils/data/distributed.py:
// pad to R*ceil(n/R) by repeating from the start, or with drop_last cut to R*floor(n/R);
// rank r takes positions r, r+R, ...); with shuffling, the same rule applied to ringgrad's
// own permutation of the epoch (labs/README.md).
#include <catch2/catch.hpp>

#include "lab_training.h"

namespace rg::data {
namespace {

std::vector<int64_t> indices_of(int64_t n, int64_t replicas, int64_t rank, bool shuffle, bool drop_last,
                                int64_t epoch = 0, uint64_t seed = 0) {
  DistributedSampler sampler(
      n, {.num_replicas = replicas, .rank = rank, .shuffle = shuffle, .seed = seed, .drop_last = drop_last});
  sampler.set_epoch(epoch);
  return sampler.indices();
}

using List = std::vector<int64_t>;

}  // namespace

TEST_CASE("labs.lab2.unshuffled_lists_stride_over_the_ranks", "[lab2][points=2]") {
  // n = 8, R = 4: no padding; PyTorch gives rank r the indices r and r + 4.
  CHECK(indices_of(8, 4, 0, false, false) == List{0, 4});
  CHECK(indices_of(8, 4, 3, false, false) == List{3, 7});
  // R = 1: the whole dataset in order.
  CHECK(indices_of(5, 1, 0, false, false) == List{0, 1, 2, 3, 4});
}

TEST_CASE("labs.lab2.unshuffled_lists_pad_by_repeating_from_the_start", "[lab2][points=2]") {
  // n = 10, R = 4: padded to 12 with 0, 1: [0..9, 0, 1], strided.
  CHECK(indices_of(10, 4, 0, false, false) == List{0, 4, 8});
  CHECK(indices_of(10, 4, 1, false, false) == List{1, 5, 9});
  CHECK(indices_of(10, 4, 2, false, false) == List{2, 6, 0});
  CHECK(indices_of(10, 4, 3, false, false) == List{3, 7, 1});
  // n = 2, R = 5: fewer examples than ranks, padded to 5 by repeating [0, 1] over and over.
  CHECK(indices_of(2, 5, 0, false, false) == List{0});
  CHECK(indices_of(2, 5, 2, false, false) == List{0});
  CHECK(indices_of(2, 5, 3, false, false) == List{1});
  CHECK(indices_of(2, 5, 4, false, false) == List{0});
}

TEST_CASE("labs.lab2.drop_last_cuts_the_tail", "[lab2][points=2]") {
  // n = 10, R = 4, drop_last: cut to 8, so 8 and 9 are never seen.
  CHECK(indices_of(10, 4, 0, false, true) == List{0, 4});
  CHECK(indices_of(10, 4, 1, false, true) == List{1, 5});
  CHECK(indices_of(10, 4, 3, false, true) == List{3, 7});
  // n = 11, R = 3: cut to 9.
  CHECK(indices_of(11, 3, 2, false, true) == List{2, 5, 8});
}

TEST_CASE("labs.lab2.shuffled_lists_follow_the_rule_on_ringgrad_s_permutation", "[lab2][points=2]") {
  for (int64_t n : {1, 7, 29, 100})
    for (int64_t replicas : {1, 2, 3, 8})
      for (bool drop_last : {false, true})
        for (int64_t epoch : {0, 1, 5}) {
          if (drop_last && n < replicas) continue;
          INFO("n " << n << ", " << replicas << " replicas, drop_last " << drop_last << ", epoch " << epoch);
          const auto order = labs::epoch_order(n, true, 3, epoch);
          for (int64_t rank = 0; rank < replicas; ++rank)
            CHECK(indices_of(n, replicas, rank, true, drop_last, epoch, 3) ==
                  labs::pytorch_rank_indices(order, replicas, rank, drop_last));
        }
}

TEST_CASE("labs.lab2.set_epoch_changes_the_shuffle", "[lab2][points=1]") {
  DistributedSampler sampler(50, {.num_replicas = 2, .rank = 1, .shuffle = true, .seed = 9});
  sampler.set_epoch(0);
  const auto first = sampler.indices();
  sampler.set_epoch(1);
  const auto second = sampler.indices();
  CHECK(first != second);
  CHECK(second == labs::pytorch_rank_indices(labs::epoch_order(50, true, 9, 1), 2, 1, false));
}

}  // namespace rg::data
