// DataLoader prefetch workers that the system refuses to start (a process limit): begin()
// throws an rg::Error naming the loader and the worker, never std::terminate, and the
// loader can be asked again or destroyed. Run in a forked child (tests/thread_limit.h).
#include <catch2/catch.hpp>

#include "data/data.h"
#include "tensor/thread_pool.h"
#include "thread_limit.h"

using namespace rg;
using Catch::Contains;

namespace {

data::InMemoryDataset tiny_dataset() {
  return data::InMemoryDataset(Tensor::zeros({12, 1, 2, 2}, DType::uint8), Tensor::zeros({12}, DType::int64),
                               {.name = "Tiny", .num_classes = 2, .normalization = {{0.5f}, {0.5f}}});
}

int64_t batches_of(data::DataLoader& loader) {
  int64_t n = 0;
  for (auto& batch : loader) n += batch.x.size(0) > 0;
  return n;
}

}  // namespace

TEST_CASE("data.loader_worker_start_failure_is_an_error", "[data]") {
  const bool exact = test::thread_limit_is_exact();
  const data::InMemoryDataset dataset = tiny_dataset();  // before the fork: see thread_limit.h
  const test::ChildResult child = test::run_with_thread_limit(3, [exact, &dataset](const auto& report) {
    try {
      ThreadPoolScope inline_ops(1);  // the parent's default pool has no threads in this child
      data::DataLoader loader(dataset, {.batch_size = 4, .num_workers = 50});
      for (int attempt = 0; attempt < 2; ++attempt) {  // refused, and refused again: no state left behind
        try {
          loader.begin();
          return 1;
        } catch (const Error& e) {
          report(std::string(e.what()) + "\n");
        }
      }
      data::DataLoader fits(dataset, {.batch_size = 4, .num_workers = exact ? 2 : 0});
      if (batches_of(fits) != 3) return 2;
      data::DataLoader inline_loader(dataset, {.batch_size = 5});
      if (batches_of(inline_loader) != 3) return 3;
      return 0;
    } catch (const std::exception& e) {
      report(std::string("unexpected: ") + e.what());
      return 4;
    }
  });
  INFO(child.output);
  REQUIRE(child.exit_code == 0);
  CHECK_THAT(child.output, Contains("DataLoader with 50 workers: could not start thread ") && Contains(" of 50: "));
  if (child.exact) CHECK_THAT(child.output, Contains("could not start thread 4 of 50: "));
}
