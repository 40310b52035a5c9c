// Lab 4, the central (parameter-server) reduction (parallel/star.cpp: star_all_reduce):
// results against a serial sum, and rank 0 moving (N-1)·S each way while every other rank
// moves S (labs/README.md).
#include <catch2/catch.hpp>

#include "parallel/checks.h"

namespace rg::parallel {
using namespace testing;

TEST_CASE("labs.lab4.star_all_reduce_matches_the_serial_sum", "[lab4][points=3]") {
  for (int n : {1, 2, 3, 4, 5, 8}) {
    INFO("world size " << n);
    CHECK(on_world(n, [](ProcessGroup& pg) { return check_all_reduce_lengths(pg, Algorithm::star, Device::cpu()); }) ==
          "");
  }
}

TEST_CASE("labs.lab4.rank_0_moves_n_minus_1_buffers_each_way", "[lab4][points=2]") {
  for (int n : {1, 2, 3, 4, 5, 8})
    for (int64_t length : {int64_t{1}, int64_t{1001}}) {
      INFO("world size " << n << ", " << length << " float32");
      const uint64_t s = 4 * static_cast<uint64_t>(length);
      CHECK(on_world(n, [&](ProcessGroup& pg) {
              pg.reset_stats();
              Tensor t = input_for(pg.rank(), length, DType::float32, Device::cpu());
              pg.all_reduce(t, {.algorithm = Algorithm::star});
              const CommStats stats = pg.stats();
              const uint64_t expected = pg.rank() == 0 ? (n - 1) * s : s;
              if (stats.bytes_sent != expected || stats.bytes_received != expected)
                return detail::concat("rank ", pg.rank(), " of ", n, " sent ", stats.bytes_sent, " and received ",
                                      stats.bytes_received, " bytes; expected ", expected, " each way");
              return std::string();
            }) == "");
    }
}

}  // namespace rg::parallel
