// parallel.*: every collective and all-reduce algorithm on the local backend against the
// serial reference for world sizes 1..8, traffic counters, async work, the ring's trace.
#include <catch2/catch.hpp>

#include <atomic>
#include <sstream>
#include <thread>

#include "checks.h"
#include "parallel/algorithms.h"
#include "tensor/ops.h"
#include "tensor/thread_pool.h"

namespace rg::parallel {
using namespace testing;

TEST_CASE("parallel.all_reduce_matches_serial_reference", "[parallel][lab3]") {
  for (int n = 1; n <= 8; ++n) {
    INFO("world size " << n);
    CHECK(on_world(n, [](ProcessGroup& pg) { return check_all_reduce_matrix(pg, Device::cpu()); }) == "");
  }
}

TEST_CASE("parallel.collectives_match_serial_reference", "[parallel]") {
  for (int n = 1; n <= 8; ++n) {
    INFO("world size " << n);
    CHECK(on_world(n, [](ProcessGroup& pg) {
            for (DType dtype : {DType::float32, DType::float64, DType::int32, DType::int64})
              for (int64_t length : {int64_t{0}, int64_t{1}, int64_t{pg.size() + 1}, int64_t{1009}}) {
                std::string error = check_other_collectives(pg, dtype, length, Device::cpu());
                if (!error.empty()) return error;
              }
            return std::string();
          }) == "");
  }
}

TEST_CASE("parallel.ring_pipelines_chunks_larger_than_a_piece", "[parallel]") {
  // Each rank's chunk spans two whole pieces and a ragged third, in both dtypes.
  for (int n : {2, 3})
    for (DType dtype : {DType::float32, DType::float64}) {
      const int64_t piece = kRingPieceBytes / static_cast<int64_t>(dtype_size(dtype));
      const int64_t length = n * (2 * piece + 4099) + 1;
      INFO("world size " << n << ", " << length << " " << dtype_name(dtype));
      CHECK(on_world(n, [&](ProcessGroup& pg) {
              return check_all_reduce(pg, Algorithm::ring, ReduceOp::sum, dtype, length, Device::cpu());
            }) == "");
    }
}

TEST_CASE("parallel.traffic_counters_follow_the_formulas", "[parallel][lab3]") {
  for (int n = 1; n <= 8; ++n) {
    INFO("world size " << n);
    for (int64_t length : {int64_t{1}, int64_t{1000}, int64_t{100003}})
      CHECK(on_world(n, [length](ProcessGroup& pg) { return check_traffic(pg, length); }) == "");
  }
}

TEST_CASE("parallel.all_gather_stats_gives_every_rank_each_rank_s_traffic", "[parallel]") {
  // A broadcast from rank 0 (the root sends, the others receive), then rank r sends r
  // messages to rank r + 1: the figures differ by rank, and every rank must gather exactly
  // what each reported.
  const int n = 4;
  std::vector<CommStats> reported(n);
  std::vector<std::vector<CommStats>> gathered(n);
  run_local_world(n, [&](std::shared_ptr<ProcessGroup> pg) {
    pg->broadcast(Tensor::ones({1000}));
    for (int i = 0; i < pg->rank(); ++i) pg->send(Tensor::ones({17}), (pg->rank() + 1) % n);
    for (int i = 0; i < (pg->rank() + n - 1) % n; ++i) pg->recv(Tensor::zeros({17}), (pg->rank() + n - 1) % n);
    reported[pg->rank()] = pg->stats();
    gathered[pg->rank()] = all_gather_stats(*pg);
  });
  for (int r = 0; r < n; ++r) {
    INFO("rank " << r);
    REQUIRE(gathered[r].size() == static_cast<size_t>(n));
    for (int q = 0; q < n; ++q) {
      CHECK(gathered[r][q].bytes_sent == reported[q].bytes_sent);
      CHECK(gathered[r][q].bytes_received == reported[q].bytes_received);
      CHECK(gathered[r][q].seconds == reported[q].seconds);
      CHECK(gathered[r][q].operations == reported[q].operations);
    }
  }
}

TEST_CASE("parallel.sum_over_ranks_adds_each_value_exactly", "[parallel]") {
  // Rank r contributes (r, 2^51 + r, 0.5): a sum of counts just under 2^53 must come back
  // exact, which float32 arithmetic would not give.
  const int n = 3;
  std::vector<std::vector<double>> sums(n);
  run_local_world(n, [&](std::shared_ptr<ProcessGroup> pg) {
    const double r = pg->rank();
    sums[pg->rank()] = sum_over_ranks(*pg, {r, 2251799813685248.0 + r, 0.5});
  });
  for (int r = 0; r < n; ++r) {
    INFO("rank " << r);
    CHECK(sums[r] == std::vector<double>{3.0, 3 * 2251799813685248.0 + 3, 1.5});
  }
}

// avg's division, by a power of two a multiply by the reciprocal: bit for bit a division,
// subnormal results and the largest floats included.
TEST_CASE("parallel.divide_by_rounds_as_a_division", "[parallel]") {
  std::vector<float> values{1.0f, -3.0f, 0.1f, 1e-38f, 3e-45f, -7e-44f, 3.4e38f, 12345.678f, 0.0f};
  for (int n = 1; n <= 9; ++n)
    for (DType dtype : {DType::float32, DType::float64}) {
      INFO("n = " << n << ", " << dtype_name(dtype));
      Tensor t = Tensor::from_vector(values, {static_cast<int64_t>(values.size())}).to(dtype);
      divide_by(t, n);
      const std::vector<double> got = t.to_vector<double>();
      for (size_t i = 0; i < values.size(); ++i) {
        const double expected = dtype == DType::float32 ? static_cast<double>(values[i] / static_cast<float>(n))
                                                        : static_cast<double>(values[i]) / n;
        CHECK(got[i] == expected);
      }
    }
}

TEST_CASE("parallel.virtual_cpu_devices_and_views", "[parallel]") {
  // Each rank's tensor on its own virtual device cpu:rank, and a transposed (non-contiguous) view.
  CHECK(on_world(3, [](ProcessGroup& pg) {
          Tensor base = input_for(pg.rank(), 12, DType::float64, Device::cpu()).to(Device::cpu(pg.rank()));
          Tensor view = base.view({3, 4}).t();
          pg.all_reduce(view, {.algorithm = Algorithm::ring});
          return compare("transposed all_reduce", base,
                         [&](int64_t i) { return serial_reduce<double>(ReduceOp::sum, pg.size(), i); });
        }) == "");
}

TEST_CASE("parallel.async_work_completes_in_issue_order", "[parallel]") {
  CHECK(on_world(4, [](ProcessGroup& pg) {
          std::vector<Tensor> tensors;
          std::vector<std::shared_ptr<Work>> works;
          for (Algorithm algorithm : {Algorithm::ring, Algorithm::library, Algorithm::star, Algorithm::relay,
                                      Algorithm::pipelined_ring}) {
            tensors.push_back(input_for(pg.rank(), 5000, DType::float32, Device::cpu()));
            works.push_back(pg.all_reduce_async(tensors.back(), {.op = ReduceOp::avg, .algorithm = algorithm}));
          }
          works.push_back(pg.barrier_async());
          works.back()->wait();
          for (auto& w : works)
            if (!w->is_completed()) return std::string("an op issued before a finished barrier is not complete");
          for (size_t k = 0; k < tensors.size(); ++k) {
            works[k]->wait();
            std::string error = compare("async avg", tensors[k], [&](int64_t i) {
              return static_cast<double>(serial_reduce<float>(ReduceOp::avg, pg.size(), i));
            });
            if (!error.empty()) return error;
          }
          return std::string();
        }) == "");
}

// DDP's last bucket (waited_at_once) runs on its caller's thread when the group is idle, with
// no hand-off to the communication thread; behind another op it waits its turn there.
TEST_CASE("parallel.a_waited_at_once_all_reduce_runs_on_the_caller_of_an_idle_group", "[parallel]") {
  CHECK(on_world(2, [](ProcessGroup& pg) {
          struct RanOn : Observer {
            std::vector<std::thread::id> threads;
            void op_finished(const OpRecord&) override { threads.push_back(std::this_thread::get_id()); }
          } ran_on;
          std::vector<Tensor> tensors;
          for (int k = 0; k < 3; ++k) tensors.push_back(input_for(pg.rank(), 1000, DType::float32, Device::cpu()));
          pg.set_observer(&ran_on);
          pg.all_reduce_async(tensors[0], {.agreed = true, .waited_at_once = true})->wait();
          auto queued = pg.all_reduce_async(tensors[1]);  // not agreed: queued, checked on the thread
          pg.all_reduce_async(tensors[2], {.agreed = true, .waited_at_once = true})->wait();
          queued->wait();
          pg.set_observer(nullptr);
          const auto caller = std::this_thread::get_id();
          if (ran_on.threads.size() != 3) return std::string("expected 3 ops reported");
          if (ran_on.threads[0] != caller) return std::string("the idle group's op did not run on its caller");
          if (ran_on.threads[2] == caller) return std::string("the op behind a queued one ran on its caller");
          for (const Tensor& t : tensors) {
            std::string error = compare_with_serial("all_reduce", t, ReduceOp::sum, pg.size());
            if (!error.empty()) return error;
          }
          return std::string();
        }) == "");
}

TEST_CASE("parallel.ring_trace_shows_the_relay_baton", "[parallel][lab3]") {
  std::ostringstream trace;
  run_local_world(4, [&](std::shared_ptr<ProcessGroup> pg) {
    Tensor t = Tensor::full({12}, pg->rank() + 1.0);
    pg->all_reduce(t, {.algorithm = Algorithm::ring, .trace = &trace});
  });
  std::string text = trace.str();
  INFO(text);
  // 4 ranks x (3 reduce-scatter + 3 all-gather steps), one line each.
  CHECK(std::count(text.begin(), text.end(), '\n') == 24);
  // Chunk c starts at rank c+1 and ends complete at rank c: rank 0 first passes on chunk 3,
  // its last reduce-scatter step passes chunk 1 with ranks 2, 3 and 0 added (3 + 4 + 1),
  // and the all-gather starts from its complete chunk 0 (1 + 2 + 3 + 4).
  CHECK(text.find("reduce-scatter step 1/3  rank 0: sends chunk 3 [9,12) { 1 1 1 } to rank 1, receives chunk 2 "
                  "from rank 3") != std::string::npos);
  CHECK(text.find("reduce-scatter step 3/3  rank 0: sends chunk 1 [3,6) { 8 8 8 } to rank 1") != std::string::npos);
  CHECK(text.find("all-gather step 1/3  rank 0: sends chunk 0 [0,3) { 10 10 10 } to rank 1") != std::string::npos);
}

// Chunks of several pieces (4 MiB each): the pipelined ring must add them in the ring's
// order, so its bits equal the plain ring's.
TEST_CASE("parallel.pipelined_ring_equals_the_plain_ring_bit_for_bit", "[parallel]") {
  for (int n : {2, 3}) {
    const int64_t length = n * (kRingPieceBytes / 4) * 5 / 2 + 7;  // 2.5 pieces per chunk, not divisible
    std::vector<std::vector<float>> plain(n), pipelined(n);
    run_local_world(n, [&](std::shared_ptr<ProcessGroup> pg) {
      Generator gen(pg->rank());
      const Tensor input = randn({length}, gen);
      Tensor a = input.clone(), b = input.clone();
      pg->all_reduce(a, {.op = ReduceOp::avg, .algorithm = Algorithm::ring});
      pg->all_reduce(b, {.op = ReduceOp::avg, .algorithm = Algorithm::pipelined_ring});
      plain[pg->rank()] = a.to_vector<float>();
      pipelined[pg->rank()] = b.to_vector<float>();
    });
    for (int r = 0; r < n; ++r) {
      CHECK(pipelined[r] == plain[r]);
      CHECK(plain[r] == plain[0]);
    }
  }
}

TEST_CASE("parallel.init_process_group_local_and_options", "[parallel]") {
  auto pg = init_process_group({.backend = "local", .algorithm = Algorithm::ring, .timeout_s = 7});
  CHECK(pg->rank() == 0);
  CHECK(pg->size() == 1);
  CHECK(pg->backend() == "local");
  CHECK(pg->timeout_s() == 7);
  Tensor t = Tensor::full({5}, 2.0);
  pg->all_reduce(t, {.op = ReduceOp::avg});
  CHECK(t.to_vector<float>() == std::vector<float>(5, 2.0f));
  CHECK(parse_algorithm("naive_ring") == Algorithm::relay);  // the older name
  for (Algorithm algorithm : all_algorithms()) CHECK(parse_algorithm(algorithm_name(algorithm)) == algorithm);
  CHECK_THROWS_WITH(parse_algorithm("tree"), Catch::Contains("unknown all-reduce algorithm 'tree'"));
  CHECK_THROWS_WITH(init_process_group({.backend = "carrier-pigeon"}), Catch::Contains("backend 'carrier-pigeon'"));
}

TEST_CASE("parallel.local_ranks_share_the_thread_pool", "[parallel]") {
  std::atomic<int> total{0};
  run_local_world(2, [&](std::shared_ptr<ProcessGroup>) { total += get_num_threads(); });
  CHECK(total.load() == 2 * std::max(1, default_num_threads() / 2));
}

}  // namespace rg::parallel
