// Lab 3, the ring all-reduce (parallel/ring.cpp: ring_reduce_scatter and ring_all_gather),
// on the local world: results against a serial sum for every length/world-size edge case
// and the bytes each rank moves, 2(N-1)/N·S for the all-reduce (labs/README.md).
#include <catch2/catch.hpp>

#include <cmath>
#include <mutex>

#include "parallel/checks.h"
#include "tensor/ops.h"

namespace rg::parallel {
using namespace testing;

namespace {

const std::vector<int> kWorldSizes{1, 2, 3, 4, 5, 8};

// Rank r's reduce_scatter output is block r of every rank's input, summed in rank order.
std::string check_ring_reduce_scatter(ProcessGroup& pg, DType dtype, int64_t block) {
  const int n = pg.size();
  Tensor out = Tensor::zeros({block}, dtype);
  const Tensor in = input_for(pg.rank(), n * block, dtype, Device::cpu());
  pg.reduce_scatter(out, in, {.op = ReduceOp::sum, .algorithm = Algorithm::ring});
  std::string what = detail::concat("rank ", pg.rank(), " of ", n, ": ring reduce_scatter of ", n, " x ", block, " ",
                                    dtype_name(dtype));
  return dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    return compare(what, out, [&](int64_t i) {
      return static_cast<double>(serial_reduce<T>(ReduceOp::sum, n, pg.rank() * block + i));
    });
  });
}

// After all_gather, block r of every rank's output is rank r's input.
std::string check_ring_all_gather(ProcessGroup& pg, DType dtype, int64_t block) {
  const int n = pg.size();
  Tensor out = Tensor::zeros({n * block}, dtype);
  pg.all_gather(out, input_for(pg.rank(), block, dtype, Device::cpu()), {.algorithm = Algorithm::ring});
  std::string what = detail::concat("rank ", pg.rank(), " of ", n, ": ring all_gather of ", n, " x ", block, " ",
                                    dtype_name(dtype));
  return compare(what, out, [&](int64_t i) { return stored(dtype, value_at(static_cast<int>(i / block), i % block)); });
}

}  // namespace

TEST_CASE("labs.lab3.ring_all_reduce_matches_the_serial_sum", "[lab3][points=3]") {
  // Lengths 0, 1, N-1 (some chunks empty), N, N+1 (not divisible), 12 and a large prime.
  for (int n : kWorldSizes) {
    INFO("world size " << n);
    CHECK(on_world(n, [](ProcessGroup& pg) { return check_all_reduce_lengths(pg, Algorithm::ring, Device::cpu()); }) ==
          "");
  }
}

TEST_CASE("labs.lab3.ring_reduce_scatter_leaves_each_rank_its_reduced_block", "[lab3][points=2]") {
  for (int n : kWorldSizes) {
    INFO("world size " << n);
    CHECK(on_world(n, [](ProcessGroup& pg) {
            for (DType dtype : {DType::float32, DType::float64})
              for (int64_t block : {1, 3, 1000}) {
                std::string error = check_ring_reduce_scatter(pg, dtype, block);
                if (!error.empty()) return error;
              }
            return std::string();
          }) == "");
  }
}

TEST_CASE("labs.lab3.ring_all_gather_gives_every_rank_every_block", "[lab3][points=2]") {
  for (int n : kWorldSizes) {
    INFO("world size " << n);
    CHECK(on_world(n, [](ProcessGroup& pg) {
            for (DType dtype : {DType::float32, DType::float64})
              for (int64_t block : {1, 3, 1000}) {
                std::string error = check_ring_all_gather(pg, dtype, block);
                if (!error.empty()) return error;
              }
            return std::string();
          }) == "");
  }
}

TEST_CASE("labs.lab3.ring_moves_2_n_minus_1_over_n_of_the_buffer", "[lab3][points=2]") {
  // Each rank sends and receives 2(N-1)/N·S within one chunk of rounding; summed over the
  // ranks it is exactly 2(N-1)·S (every chunk makes N-1 hops in each phase).
  for (int n : kWorldSizes)
    for (int64_t length : {int64_t{1}, int64_t{n + 1}, int64_t{1000}, int64_t{1001}}) {
      INFO("world size " << n << ", " << length << " float32");
      const double s = 4.0 * static_cast<double>(length);
      const double chunk = 4.0 * std::ceil(static_cast<double>(length) / n);
      std::mutex mutex;
      uint64_t total_sent = 0, total_received = 0;
      CHECK(on_world(n, [&](ProcessGroup& pg) {
              pg.reset_stats();
              Tensor t = input_for(pg.rank(), length, DType::float32, Device::cpu());
              pg.all_reduce(t, {.algorithm = Algorithm::ring});
              const CommStats stats = pg.stats();
              {
                std::lock_guard lock(mutex);
                total_sent += stats.bytes_sent;
                total_received += stats.bytes_received;
              }
              const double expected = 2.0 * (n - 1) / n * s;
              if (std::abs(stats.bytes_sent - expected) > chunk || std::abs(stats.bytes_received - expected) > chunk)
                return detail::concat("rank ", pg.rank(), " sent ", stats.bytes_sent, " and received ",
                                      stats.bytes_received, " bytes; 2(N-1)/N·S is ", expected, " (within ", chunk,
                                      ")");
              return std::string();
            }) == "");
      CHECK(total_sent == static_cast<uint64_t>(2.0 * (n - 1) * s));
      CHECK(total_received == static_cast<uint64_t>(2.0 * (n - 1) * s));
    }
}

TEST_CASE("labs.lab3.ring_reduce_scatter_and_all_gather_each_move_n_minus_1_over_n", "[lab3][points=1]") {
  for (int n : kWorldSizes) {
    INFO("world size " << n);
    const int64_t block = 250;
    const uint64_t s = 4 * block * n, expected = s * (n - 1) / n;
    CHECK(on_world(n, [&](ProcessGroup& pg) {
            pg.reset_stats();
            Tensor out = Tensor::zeros({block});
            pg.reduce_scatter(out, input_for(pg.rank(), n * block, DType::float32, Device::cpu()),
                              {.algorithm = Algorithm::ring});
            const CommStats scatter = pg.stats();
            pg.reset_stats();
            Tensor gathered = Tensor::zeros({n * block});
            pg.all_gather(gathered, out, {.algorithm = Algorithm::ring});
            const CommStats gather = pg.stats();
            if (scatter.bytes_sent != expected || scatter.bytes_received != expected ||
                gather.bytes_sent != expected || gather.bytes_received != expected)
              return detail::concat("rank ", pg.rank(), ": reduce_scatter sent/received ", scatter.bytes_sent, "/",
                                    scatter.bytes_received, ", all_gather ", gather.bytes_sent, "/",
                                    gather.bytes_received, " bytes; (N-1)/N·S is ", expected);
            return std::string();
          }) == "");
  }
}

}  // namespace rg::parallel
