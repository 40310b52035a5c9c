// Sampler tests: DistributedSampler's unshuffled lists equal PyTorch's (fixtures from
// scripts/make_sampler_fixtures.py), its shuffled order depends on (seed, epoch) only and is
// shared by all ranks, padding is counted, and a forgotten set_epoch is reported.
// ShardSampler's contiguous shares cover a dataset exactly once for any size and world.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <iostream>
#include <numeric>
#include <set>
#include <sstream>

#include "helpers.h"

using namespace rg;

namespace {

nlohmann::json load_fixtures() {
  const auto path = std::filesystem::path(RINGGRAD_TESTS_DIR) / "data" / "fixtures" / "distributed_sampler.json";
  std::ifstream in(path);
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

data::DistributedSampler make(int64_t n, int64_t replicas, int64_t rank, bool shuffle, bool drop_last,
                              uint64_t seed = 0) {
  return data::DistributedSampler(
      n, {.num_replicas = replicas, .rank = rank, .shuffle = shuffle, .seed = seed, .drop_last = drop_last});
}

}  // namespace

TEST_CASE("data.distributed_sampler_matches_pytorch", "[data]") {
  const nlohmann::json fixtures = load_fixtures();
  REQUIRE(fixtures["unshuffled"].size() > 300);
  for (const auto& c : fixtures["unshuffled"]) {
    auto sampler = make(c["size"], c["num_replicas"], c["rank"], false, c["drop_last"]);
    INFO("case " << c.dump());
    const auto expected = c["indices"].get<std::vector<int64_t>>();
    CHECK(sampler.indices() == expected);
    CHECK(sampler.size() == static_cast<int64_t>(expected.size()));
  }
}

TEST_CASE("data.distributed_sampler_shuffle_is_shared_by_ranks", "[data]") {
  const int64_t n = 103, replicas = 4;
  for (bool drop_last : {false, true}) {
    std::vector<int64_t> all;
    for (int64_t r = 0; r < replicas; ++r) {
      auto s = make(n, replicas, r, true, drop_last, 7);
      s.set_epoch(3);
      const std::vector<int64_t> mine = s.indices();
      all.insert(all.end(), mine.begin(), mine.end());
    }
    // Together the ranks cover every index once (plus padding, or minus the dropped tail).
    const std::set<int64_t> distinct(all.begin(), all.end());
    CHECK(static_cast<int64_t>(all.size()) == (drop_last ? 100 : 104));
    CHECK(static_cast<int64_t>(distinct.size()) == (drop_last ? 100 : 103));
  }
  auto a = make(n, replicas, 1, true, false, 7), b = make(n, replicas, 1, true, false, 7);
  a.set_epoch(5);
  b.set_epoch(5);
  const std::vector<int64_t> order = a.indices();
  CHECK(order == b.indices());
  b.set_epoch(6);
  CHECK(order != b.indices());
  auto c = make(n, replicas, 1, true, false, 8);
  c.set_epoch(5);
  CHECK(order != c.indices());
}

TEST_CASE("data.distributed_sampler_counts_padding", "[data]") {
  // 10 samples on 4 ranks: padded to 12, positions 10 and 11 (ranks 2 and 3) repeat 0 and 1.
  for (int64_t r = 0; r < 4; ++r) {
    auto s = make(10, 4, r, false, false);
    CHECK(s.size() == 3);
    CHECK(s.num_padded() == (r >= 2 ? 1 : 0));
    CHECK(s.num_dropped() == 0);
  }
  CHECK(make(10, 4, 3, false, false).indices() == std::vector<int64_t>{3, 7, 1});
  auto dropped = make(10, 4, 0, false, true);
  CHECK(dropped.size() == 2);
  CHECK(dropped.num_padded() == 0);
  CHECK(dropped.num_dropped() == 2);
  // Three samples on eight ranks: everyone gets one, five of them a duplicate.
  int64_t padded = 0;
  for (int64_t r = 0; r < 8; ++r) padded += make(3, 8, r, true, false).num_padded();
  CHECK(padded == 5);
}

TEST_CASE("data.distributed_sampler_warns_on_repeated_epoch", "[data]") {
  std::ostringstream captured;
  std::streambuf* old = std::cerr.rdbuf(captured.rdbuf());
  auto s = make(20, 2, 0, true, false);
  s.indices();
  s.set_epoch(1);
  s.indices();
  CHECK(s.repeated_epochs() == 0);
  s.indices();  // set_epoch forgotten
  s.indices();
  std::cerr.rdbuf(old);
  CHECK(s.repeated_epochs() == 2);
  CHECK_THAT(captured.str(), Catch::Matchers::Contains("set_epoch"));
  // Without shuffling the order is meant to repeat.
  auto plain = make(20, 2, 0, false, false);
  plain.indices();
  plain.indices();
  CHECK(plain.repeated_epochs() == 0);
}

TEST_CASE("data.distributed_sampler_rejects_bad_arguments", "[data]") {
  CHECK_THROWS_AS(make(10, 0, 0, false, false), Error);
  CHECK_THROWS_AS(make(10, 2, 2, false, false), Error);
  CHECK_THROWS_AS(make(-1, 2, 0, false, false), Error);
}

TEST_CASE("data.random_and_sequential_samplers", "[data]") {
  data::RandomSampler a(50, 3), b(50, 3);
  const std::vector<int64_t> first = a.indices();
  CHECK(first == b.indices());
  CHECK(a.indices() != first);  // a new pass reshuffles
  std::vector<int64_t> sorted = first;
  std::sort(sorted.begin(), sorted.end());
  data::SequentialSampler seq(50);
  CHECK(sorted == seq.indices());
}

TEST_CASE("data.shard_sampler_covers_the_dataset_exactly_once", "[data]") {
  for (int64_t world = 1; world <= 8; ++world) {
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{2}, int64_t{5}, int64_t{7}, int64_t{13}, int64_t{97},
                      int64_t{1000}, int64_t{10007}}) {
      INFO("n " << n << ", world " << world);
      std::vector<int64_t> all;
      int64_t smallest = n, largest = 0;
      for (int64_t rank = 0; rank < world; ++rank) {
        data::ShardSampler shard(n, rank, world);
        const std::vector<int64_t> mine = shard.indices();
        REQUIRE(static_cast<int64_t>(mine.size()) == shard.size());
        CHECK(shard.begin() == n * rank / world);
        CHECK(shard.end() == n * (rank + 1) / world);
        CHECK(mine == shard.indices());  // the same share every epoch
        smallest = std::min(smallest, shard.size());
        largest = std::max(largest, shard.size());
        all.insert(all.end(), mine.begin(), mine.end());  // rank order: the shares follow each other
      }
      std::vector<int64_t> expected(static_cast<size_t>(n));
      std::iota(expected.begin(), expected.end(), int64_t{0});
      CHECK(all == expected);
      CHECK(largest - smallest <= 1);
    }
  }
}

TEST_CASE("data.shard_sampler_with_fewer_items_than_ranks", "[data]") {
  // 3 items over 5 ranks: [0, 0), [0, 1), [1, 1), [1, 2), [2, 3).
  std::vector<std::vector<int64_t>> shares;
  for (int64_t rank = 0; rank < 5; ++rank) shares.push_back(data::ShardSampler(3, rank, 5).indices());
  CHECK(shares == std::vector<std::vector<int64_t>>{{}, {0}, {}, {1}, {2}});
}

TEST_CASE("data.shard_sampler_rejects_bad_arguments", "[data]") {
  CHECK_THROWS_WITH(data::ShardSampler(10, 0, 0), Catch::Contains("ShardSampler: world_size must be >= 1, got 0"));
  CHECK_THROWS_WITH(data::ShardSampler(10, 3, 3), Catch::Contains("ShardSampler: rank 3 out of range [0, 3)"));
  CHECK_THROWS_WITH(data::ShardSampler(10, -1, 3), Catch::Contains("ShardSampler: rank -1 out of range [0, 3)"));
  CHECK_THROWS_WITH(data::ShardSampler(-1, 0, 2), Catch::Contains("ShardSampler: dataset size must be >= 0, got -1"));
}
