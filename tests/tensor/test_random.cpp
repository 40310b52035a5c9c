// Seeded random tensors (rand, randn, randint, uniform_/normal_ into views) and the intra-op ThreadPool.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>

#include "reference.h"

using namespace rg;
using ref::values;
using Values = std::vector<double>;

namespace {

double mean_of(const Values& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

double variance_of(const Values& v) {
  const double m = mean_of(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / static_cast<double>(v.size());
}

// Sets (or, with nullopt, unsets) an environment variable and restores it afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) saved_ = old;
    set(value);
  }
  ~ScopedEnv() { set(saved_); }
  void set(const std::optional<std::string>& value) {
    if (value) setenv(name_, value->c_str(), 1);
    else unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> saved_;
};

}  // namespace

TEST_CASE("tensor.random_same_seed_same_tensor", "[tensor]") {
  Generator a(42), b(42), c(43);
  const Values first = values(rand({1000}, a));
  REQUIRE(first == values(rand({1000}, b)));
  REQUIRE(first != values(rand({1000}, c)));
  REQUIRE(first != values(rand({1000}, a)));  // the generator moved on

  Generator n1(5), n2(5);
  REQUIRE(values(randn({500}, n1, 0, 1, DType::float64)) == values(randn({500}, n2, 0, 1, DType::float64)));
  REQUIRE(values(randint(0, 100, {500}, n1)) == values(randint(0, 100, {500}, n2)));

  Generator on_cpu1(42);  // the same stream on every device
  REQUIRE(values(rand({1000}, on_cpu1, 0, 1, DType::float32, Device::cpu(1))) == first);
}

TEST_CASE("tensor.random_follows_the_generator_stream", "[tensor]") {
  Generator g(1), h(1);
  const Tensor u = rand({1001}, g, -1, 1);
  std::vector<float> expected(1001);
  h.fill_uniform(expected.data(), 1001, -1, 1);
  REQUIRE(u.to_vector<float>() == expected);
  REQUIRE(g.offset() == 1004);  // 1 word per float, rounded up to a whole Philox block

  randn({10}, g);
  REQUIRE(g.offset() == 1024);  // 2 words per normal
  const Tensor k = randint(-5, 5, {7}, g);
  std::vector<int64_t> expected_k(7);
  h.set_state(1, 1024);
  h.fill_randint(expected_k.data(), 7, -5, 5);
  REQUIRE(k.to_vector<int64_t>() == expected_k);
  REQUIRE(g.offset() == 1032);
}

TEST_CASE("tensor.random_ranges_and_moments", "[tensor]") {
  Generator g(7);
  for (DType dtype : {DType::float32, DType::float64}) {
    INFO(dtype_name(dtype));
    const Tensor u = rand({200000}, g, -2, 3, dtype);
    REQUIRE(u.dtype() == dtype);
    const Values uv = values(u);
    REQUIRE(*std::min_element(uv.begin(), uv.end()) >= -2);
    REQUIRE(*std::max_element(uv.begin(), uv.end()) < 3);
    REQUIRE(std::fabs(mean_of(uv) - 0.5) < 0.02);
    REQUIRE(std::fabs(variance_of(uv) - 25.0 / 12) < 0.05);

    const Values nv = values(randn({200000}, g, 1.5, 2.0, dtype));
    REQUIRE(std::fabs(mean_of(nv) - 1.5) < 0.03);
    REQUIRE(std::fabs(std::sqrt(variance_of(nv)) - 2.0) < 0.03);
  }
  for (DType dtype : {DType::int64, DType::int32}) {
    const Tensor k = randint(-3, 4, {70000}, g, dtype);
    REQUIRE(k.dtype() == dtype);
    std::vector<int> counts(7, 0);
    for (double v : values(k)) {
      REQUIRE(v >= -3);
      REQUIRE(v < 4);
      ++counts[static_cast<size_t>(v + 3)];
    }
    for (int count : counts) REQUIRE(std::abs(count - 10000) < 600);
  }
}

TEST_CASE("tensor.random_fills_only_the_view", "[tensor]") {
  Generator g(3);
  const Tensor x = Tensor::zeros({4, 6});
  uniform_(x.slice(1, 0, 6, 2), g, 1, 2);  // even columns
  Values even;
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 6; ++j) {
      const double v = ref::at(x, {i, j});
      if (j % 2) {
        REQUIRE(v == 0);
      } else {
        REQUIRE(v >= 1);
        REQUIRE(v < 2);
        even.push_back(v);
      }
    }
  REQUIRE(variance_of(even) > 0);

  const Tensor y = Tensor::zeros({3, 5});
  uniform_(y.t(), g, 1, 2);
  for (double v : values(y)) REQUIRE((v >= 1 && v < 2));

  const Tensor z = Tensor::zeros({4, 6}, DType::float64);
  normal_(z.select(1, 2), g, 0, 1);
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 6; ++j) REQUIRE((ref::at(z, {i, j}) != 0) == (j == 2));
}

TEST_CASE("tensor.thread_pool_covers_each_index_once", "[tensor]") {
  const std::vector<std::tuple<int64_t, int64_t, int64_t>> ranges = {  // begin, end, grain
      {0, 0, 1},   {0, 1, 1},     {0, 10, 1},      {5, 105, 7},   {0, 1000, 1},
      {0, 1000, 1000}, {0, 1000, 5000}, {3, 4, 100}, {-10, 10, 3}, {0, 100000, 64}};
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    REQUIRE(pool.num_threads() == threads);
    for (const auto& [begin, end, grain] : ranges) {
      INFO(threads << " threads, [" << begin << ", " << end << "), grain " << grain);
      std::vector<std::atomic<int>> hits(static_cast<size_t>(end - begin));
      std::mutex mutex;
      std::vector<int64_t> chunk_sizes;
      bool first_on_caller = false;
      const std::thread::id caller = std::this_thread::get_id();
      pool.parallel_for(begin, end, grain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) ++hits[static_cast<size_t>(i - begin)];
        std::lock_guard<std::mutex> lock(mutex);
        chunk_sizes.push_back(e - b);
        if (b == begin) first_on_caller = std::this_thread::get_id() == caller;
      });
      REQUIRE(std::all_of(hits.begin(), hits.end(), [](const auto& h) { return h.load() == 1; }));
      REQUIRE(chunk_sizes.size() <= static_cast<size_t>(threads));
      if (chunk_sizes.size() > 1)
        for (int64_t size : chunk_sizes) REQUIRE(size >= grain);
      if (end > begin) REQUIRE(first_on_caller);
    }
  }
}

TEST_CASE("tensor.thread_pool_nested_calls_run_inline", "[tensor]") {
  ThreadPool pool(4);
  std::atomic<int> wrong{0};
  auto nested = [&](const std::function<void(const std::function<void(int64_t, int64_t)>&)>& inner_for) {
    pool.parallel_for(0, 8, 1, [&](int64_t, int64_t) {
      const std::thread::id outer = std::this_thread::get_id();
      int calls = 0;
      inner_for([&](int64_t b, int64_t e) {
        ++calls;
        if (b != 0 || e != 100 || std::this_thread::get_id() != outer) ++wrong;
      });
      if (calls != 1) ++wrong;
    });
  };
  nested([&](const auto& fn) { pool.parallel_for(0, 100, 1, fn); });
  nested([&](const auto& fn) { parallel_for(0, 100, 1, fn); });  // through the current pool
  REQUIRE(wrong.load() == 0);
}

TEST_CASE("tensor.thread_pool_rethrows", "[tensor]") {
  ThreadPool pool(3);
  REQUIRE_THROWS_AS(pool.parallel_for(0, 300, 1,
                                      [](int64_t b, int64_t) {
                                        if (b > 0) throw std::out_of_range("worker chunk failed");
                                      }),
                    std::out_of_range);
  REQUIRE_THROWS_WITH(pool.parallel_for(0, 300, 1,
                                        [](int64_t b, int64_t) {
                                          if (b == 0) throw std::runtime_error("caller chunk failed");
                                        }),
                      "caller chunk failed");
  std::atomic<int64_t> total{0};  // still usable afterwards
  pool.parallel_for(0, 300, 1, [&](int64_t b, int64_t e) { total += e - b; });
  REQUIRE(total.load() == 300);
}

TEST_CASE("tensor.thread_pool_scope_is_per_thread", "[tensor]") {
  const int outside = get_num_threads();
  {
    ThreadPoolScope scope(3);
    REQUIRE(get_num_threads() == 3);
    REQUIRE(current_thread_pool().num_threads() == 3);
    int seen_by_other_thread = 0;
    std::thread other([&] { seen_by_other_thread = get_num_threads(); });
    other.join();
    REQUIRE(seen_by_other_thread == outside);

    std::atomic<int> chunks{0};
    parallel_for(0, 300, 1, [&](int64_t, int64_t) { ++chunks; });
    REQUIRE(chunks.load() <= 3);
    {
      ThreadPoolScope inner(1);
      REQUIRE(get_num_threads() == 1);
    }
    REQUIRE(get_num_threads() == 3);
    set_num_threads(2);  // resizes the scope's pool, not the default one
    REQUIRE(get_num_threads() == 2);
  }
  REQUIRE(get_num_threads() == outside);
}

TEST_CASE("tensor.default_num_threads_reads_the_environment", "[tensor]") {
  ScopedEnv threads("RINGGRAD_NUM_THREADS", std::nullopt);
  ScopedEnv local_size("OMPI_COMM_WORLD_LOCAL_SIZE", std::nullopt);
  const int cores = default_num_threads();
  REQUIRE(cores >= 1);

  threads.set("3");
  REQUIRE(default_num_threads() == 3);
  local_size.set("2");
  REQUIRE(default_num_threads() == 3);  // an explicit setting wins

  threads.set(std::nullopt);
  REQUIRE(default_num_threads() == std::max(1, cores / 2));
  local_size.set("1000");
  REQUIRE(default_num_threads() == 1);
}

TEST_CASE("tensor.ops_and_pools_from_several_threads", "[tensor]") {
  // DataParallel runs one replica per thread: ops, the allocator and the pools must cope.
  const Tensor a = ref::random_tensor({512, 1024}, 1), b = ref::random_tensor({1024}, 2);
  const Values va = values(a), vb = values(b);
  ThreadPool shared(2);
  std::atomic<int> wrong{0};
  auto replica = [&](int k) {
    std::optional<ThreadPoolScope> own;
    if (k % 2) own.emplace(1);  // half the threads get their own pool
    for (int step = 0; step < 3; ++step) {
      const std::vector<float> got = add(a, b).to_vector<float>();
      for (size_t i = 0; i < got.size(); ++i)
        if (std::fabs(got[i] - (va[i] + vb[i % 1024])) > 1e-6) ++wrong;
      std::vector<std::atomic<int>> hits(10000);
      shared.parallel_for(0, 10000, 100, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) ++hits[static_cast<size_t>(i)];
      });
      for (const auto& h : hits)
        if (h.load() != 1) ++wrong;
    }
  };
  std::vector<std::thread> threads;
  for (int k = 0; k < 4; ++k) threads.emplace_back(replica, k);
  for (std::thread& t : threads) t.join();
  REQUIRE(wrong.load() == 0);
}
