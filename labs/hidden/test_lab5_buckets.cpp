// Lab 5's hidden tests: overlap read from the trace (a delay injected into backward, so the
// verdict does not hang on timing luck), no_sync accumulation, a parameter shared by two
// layers counted once, and unused parameters.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <thread>

#include "autograd/node.h"
#include "lab5_models.h"
#include "lab_training.h"
#include "parallel/no_sync_training.h"
#include "parallel/reducer_bucketed.h"

namespace rg::parallel {
namespace {
using namespace test;
constexpr double kBytesPerMb = 1024.0 * 1024.0;
constexpr auto kDelay = std::chrono::milliseconds(150);

// The identity, whose backward sleeps: backward reaches fc2 and fc1 kDelay after fc3.
Variable slow_in_backward(const Variable& x) {
  return make_result("slow_in_backward", x.data(), {x}, [](const Tensor& g, const NeedsGrad&) {
    std::this_thread::sleep_for(kDelay);
    return Gradients{g};
  });
}

struct SlowMlp : nn::Module {
  SlowMlp() {
    fc1 = register_module("fc1", nn::Linear(kIn, kHidden));
    fc2 = register_module("fc2", nn::Linear(kHidden, kHidden));
    fc3 = register_module("fc3", nn::Linear(kHidden, kClasses));
  }
  Variable forward(const Variable& x) override {
    return fc3->forward(relu(slow_in_backward(fc2->forward(relu(fc1->forward(x))))));
  }
  std::shared_ptr<nn::Linear> fc1, fc2, fc3;
};

// fc1, then one Linear registered twice (its weight and bias are the same Variables).
struct TiedMlp : nn::Module {
  TiedMlp() {
    fc1 = register_module("fc1", nn::Linear(kIn, kHidden));
    shared = register_module("shared", nn::Linear(kHidden, kHidden));
    register_module("shared_again", shared);
  }
  Variable forward(const Variable& x) override { return shared->forward(relu(shared->forward(relu(fc1->forward(x))))); }
  std::shared_ptr<nn::Linear> fc1, shared;
};

}  // namespace

TEST_CASE("labs.lab5.first_bucket_s_all_reduce_starts_before_backward_ends", "[lab5][points=2][hidden]") {
  // fc3 (272 bytes) fills bucket 0; with the delay after it, its all-reduce must be running
  // while backward sleeps, long before backward ends.
  auto batch = make_batches(1, 2 * kLocalBatch, DType::float32)[0];
  std::vector<report::TraceEvent> events;
  run_local_world(2, [&](std::shared_ptr<ProcessGroup> pg) {
    auto model = std::make_shared<SlowMlp>();
    report::TraceRecorder trace(pg->rank());
    TraceObserver observer(&trace);
    DistributedDataParallel ddp(model, pg, {.first_bucket_mb = 300 / kBytesPerMb, .observer = &observer});
    pg->set_observer(&observer);
    Batch mine = batch.rows(pg->rank() * kLocalBatch, kLocalBatch);
    Variable loss = cross_entropy(ddp(mine.x), mine.y);
    {
      report::TraceRecorder::Scope backward(&trace, "backward", "backward");
      loss.backward();
    }
    pg->set_observer(nullptr);
    if (pg->rank() == 0) events = trace.events();
  });
  const auto backward = std::find_if(events.begin(), events.end(), [](auto& e) { return e.category == "backward"; });
  const auto first_all_reduce = std::find_if(events.begin(), events.end(), [](auto& e) {
    return e.category == "comm" && e.name.rfind("all_reduce", 0) == 0;
  });
  REQUIRE(backward != events.end());
  REQUIRE(first_all_reduce != events.end());
  const int64_t backward_end = backward->start_us + backward->duration_us;
  const int64_t delay_us = std::chrono::duration_cast<std::chrono::microseconds>(kDelay).count();
  INFO("backward [" << backward->start_us << ", " << backward_end << "], first all-reduce starts at "
                    << first_all_reduce->start_us);
  CHECK(first_all_reduce->start_us < backward_end - delay_us / 2);
}

TEST_CASE("labs.lab5.no_sync_accumulates_without_communicating", "[lab5][points=1][hidden]") {
  const NoSyncRun run = train_with_no_sync(3, {.bucket_cap_mb = 300 / kBytesPerMb, .first_bucket_mb = 100 / kBytesPerMb});
  CHECK(run.launches_inside == std::vector<int>(3, 0));
  CHECK(run.worst_error < 1e-10);
}

TEST_CASE("labs.lab5.shared_and_unused_parameters", "[lab5][points=1][hidden]") {
  // A Linear registered twice: its two parameters sit in the buckets once.
  run_local_world(2, [&](std::shared_ptr<ProcessGroup> pg) {
    auto model = std::make_shared<TiedMlp>();
    DistributedDataParallel ddp(model, pg, {.bucket_cap_mb = 100 / kBytesPerMb, .first_bucket_mb = 100 / kBytesPerMb});
    size_t planned = 0;
    for (const auto& bucket : dynamic_cast<const BucketedReducer&>(ddp.reducer()).buckets())
      planned += bucket.parameters.size();
    if (pg->rank() == 0) CHECK(planned == 4);
    Batch mine = make_batches(1, 2 * kLocalBatch, DType::float32)[0].rows(pg->rank() * kLocalBatch, kLocalBatch);
    cross_entropy(ddp(mine.x), mine.y).backward();
  });
  // fc2 left out of every forward: with find_unused_parameters its bucket still completes,
  // and the replicas train like one process.
  const int n = 2;
  auto initial = make_mlp(DType::float64);
  initial->skip_fc2 = true;
  auto batches = make_batches(4, n * kLocalBatch, DType::float64);
  auto reference = clone_of(*initial);
  reference->skip_fc2 = true;
  train_single(*reference, batches);
  std::vector<std::shared_ptr<Mlp>> replicas;
  for (int r = 0; r < n; ++r) {
    replicas.push_back(clone_of(*initial));
    replicas.back()->skip_fc2 = true;
  }
  run_local_world(n, [&](std::shared_ptr<ProcessGroup> pg) {
    Mlp& model = *replicas[pg->rank()];
    DistributedDataParallel ddp(replicas[pg->rank()], pg,
                                {.bucket_cap_mb = 300 / kBytesPerMb, .find_unused_parameters = true});
    auto opt = make_sgd(model);
    for (const Batch& batch : batches) {
      Batch mine = batch.rows(pg->rank() * kLocalBatch, kLocalBatch);
      opt.zero_grad();
      cross_entropy(ddp(mine.x), mine.y).backward();
      opt.step();
    }
  });
  for (auto& replica : replicas) CHECK(relative_error(*replica, *reference) < 1e-10);
}

}  // namespace rg::parallel
