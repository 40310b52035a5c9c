// parallel.ddp.*: DistributedDataParallel on the local world. The oracle: N ranks with
// local batch b train exactly like one process with batch N*b on the same samples, for
// every all-reduce algorithm; plus buckets, overlap (and the traces that show it, waits
// included), no_sync, unused parameters and the structure and consistency checks.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>

#include "no_sync_training.h"
#include "oracle.h"
#include "parallel/ddp.h"
#include "parallel/fault.h"
#include "parallel/gather_trace.h"
#include "parallel/reducer_bucketed.h"

namespace rg::parallel {
namespace {

using namespace test;

constexpr double kBytesPerMb = 1024.0 * 1024.0;

std::shared_ptr<Mlp> clone_mlp(const Mlp& model) {
  auto copy = clone_of(model);
  copy->skip_fc2 = model.skip_fc2;
  return copy;
}

// Single-process training on the whole batches; `skip(step)` says whether fc2 is unused.
void train_single(Mlp& model, const std::vector<Batch>& batches, const std::function<bool(int)>& skip) {
  int step = 0;
  test::train_single(model, batches, [&](const Tensor& x) {
    model.skip_fc2 = skip(step++);
    return model(x);
  });
}

// Every rank trains its replica on its share of each batch through DDP.
void train_ddp(std::vector<std::shared_ptr<Mlp>>& replicas, const std::vector<Batch>& batches,
               const DDPOptions& options, const std::function<bool(int)>& skip) {
  const int n = static_cast<int>(replicas.size());
  run_local_world(n, [&](std::shared_ptr<ProcessGroup> pg) {
    Mlp& model = *replicas[pg->rank()];
    DistributedDataParallel ddp(replicas[pg->rank()], pg, options);
    auto opt = make_sgd(model);
    for (size_t s = 0; s < batches.size(); ++s) {
      model.skip_fc2 = skip(static_cast<int>(s));
      Batch mine = batches[s].rows(pg->rank() * kLocalBatch, kLocalBatch);
      opt.zero_grad();
      cross_entropy(ddp(mine.x), mine.y).backward();
      opt.step();
    }
  });
}

// Trains N replicas with DDP and one model single-process; returns the worst relative error.
double oracle_error(int n, DType dtype, const DDPOptions& options, int steps,
                    const std::function<bool(int)>& skip = [](int) { return false; }) {
  auto initial = make_mlp(dtype);
  auto batches = make_batches(steps, n * kLocalBatch, dtype);
  auto reference = clone_mlp(*initial);
  train_single(*reference, batches, skip);
  std::vector<std::shared_ptr<Mlp>> replicas;
  for (int r = 0; r < n; ++r) replicas.push_back(clone_mlp(*initial));
  train_ddp(replicas, batches, options, skip);
  double worst = 0;
  for (auto& replica : replicas) worst = std::max(worst, relative_error(*replica, *reference));
  return worst;
}

// Calls back at every bucket launch.
struct LaunchLog : Observer {
  explicit LaunchLog(std::function<void(size_t)> on_launch) : on_launch_(std::move(on_launch)) {}
  void bucket_launched(size_t bucket, uint64_t) override { on_launch_(bucket); }
  std::function<void(size_t)> on_launch_;
};

// Rank 0's trace of one DDP step on 2 ranks (the MLP with 256 hidden units), with the
// backward inside a "backward" event; `options.observer` is set here.
std::vector<report::TraceEvent> traced_step(DDPOptions options) {
  std::vector<std::shared_ptr<Mlp>> replicas = {make_mlp(DType::float32, 256), make_mlp(DType::float32, 256)};
  auto batch = make_batches(1, 2 * kLocalBatch, DType::float32)[0];
  std::vector<report::TraceEvent> events;
  run_local_world(2, [&](std::shared_ptr<ProcessGroup> pg) {
    report::TraceRecorder trace(pg->rank());
    TraceObserver observer(&trace);
    DDPOptions traced = options;
    traced.observer = &observer;
    DistributedDataParallel ddp(replicas[pg->rank()], pg, traced);
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
  return events;
}

// Runs fn(rank, pg) on n ranks and returns the message of the error run_local_world rethrew.
std::string error_from(int n, const std::function<void(int, std::shared_ptr<ProcessGroup>)>& fn) {
  return test::error_from([&] { run_local_world(n, [&](std::shared_ptr<ProcessGroup> pg) { fn(pg->rank(), pg); }); });
}

}  // namespace

TEST_CASE("parallel.ddp.matches_single_process_big_batch", "[parallel][ddp]") {
  for (Algorithm algorithm : all_algorithms())
    for (int n : {2, 4}) {
      INFO(algorithm_name(algorithm) << ", " << n << " ranks");
      CHECK(oracle_error(n, DType::float64, {.algorithm = algorithm}, 20) < 1e-10);
      CHECK(oracle_error(n, DType::float32, {.algorithm = algorithm}, 20) < 1e-5);
    }
}

TEST_CASE("parallel.ddp.every_reducer_matches_single_process", "[parallel][ddp]") {
  for (ReducerKind reducer : {ReducerKind::per_parameter, ReducerKind::flat, ReducerKind::bucketed})
    for (Algorithm algorithm : {Algorithm::library, Algorithm::ring})
      for (int n : {1, 2, 3}) {
        INFO(reducer_name(reducer) << ", " << algorithm_name(algorithm) << ", " << n << " ranks");
        CHECK(oracle_error(n, DType::float64, {.reducer = reducer, .algorithm = algorithm}, 10) < 1e-10);
        CHECK(oracle_error(n, DType::float32, {.reducer = reducer, .algorithm = algorithm}, 10) < 1e-5);
      }
  // With unused parameters too: the reducers see them as ready with their old gradients.
  for (ReducerKind reducer : {ReducerKind::per_parameter, ReducerKind::flat})
    CHECK(oracle_error(2, DType::float64, {.reducer = reducer, .find_unused_parameters = true}, 6,
                       [](int step) { return step % 2 == 1; }) < 1e-10);
}

// The collectives per backward: one per parameter, one in all (one dtype), one per bucket.
TEST_CASE("parallel.ddp.reducers_send_the_messages_they_promise", "[parallel][ddp]") {
  auto batch = make_batches(1, 2 * kLocalBatch, DType::float32)[0];
  auto collectives = [&](const DDPOptions& options) {
    std::vector<int64_t> ops(2);
    std::vector<std::shared_ptr<Mlp>> replicas = {make_mlp(DType::float32), make_mlp(DType::float32)};
    run_local_world(2, [&](std::shared_ptr<ProcessGroup> pg) {
      DistributedDataParallel ddp(replicas[pg->rank()], pg, options);
      Batch mine = batch.rows(pg->rank() * kLocalBatch, kLocalBatch);
      Variable loss = cross_entropy(ddp(mine.x), mine.y);
      pg->reset_stats();
      loss.backward();
      ops[pg->rank()] = pg->stats().operations;
    });
    CHECK(ops[0] == ops[1]);
    return ops[0];
  };
  CHECK(collectives({.reducer = ReducerKind::per_parameter}) == 6);
  CHECK(collectives({.reducer = ReducerKind::flat}) == 1);
  CHECK(collectives({.reducer = ReducerKind::bucketed, .first_bucket_mb = 300 / kBytesPerMb}) == 2);
}

// The after-backward reducers communicate only once every gradient is in: none of their
// all-reduce time overlaps backward. The bucketed one launches inside it.
TEST_CASE("parallel.ddp.trace_shows_no_overlap_for_the_after_backward_reducers", "[parallel][ddp]") {
  for (ReducerKind reducer : {ReducerKind::per_parameter, ReducerKind::flat}) {
    INFO(reducer_name(reducer));
    const auto events = traced_step({.reducer = reducer});
    CHECK(std::count_if(events.begin(), events.end(), [](auto& e) { return e.category == "comm"; }) ==
          (reducer == ReducerKind::flat ? 1 : 6));
    CHECK(report::overlap_fraction(events, "comm", "backward", 0, "wait") == 0);
  }
  const auto bucketed = traced_step({.reducer = ReducerKind::bucketed, .first_bucket_mb = 300 / kBytesPerMb});
  const auto launch = std::find_if(bucketed.begin(), bucketed.end(), [](auto& e) { return e.category == "launch"; });
  const auto wait = std::find_if(bucketed.begin(), bucketed.end(), [](auto& e) { return e.category == "wait"; });
  REQUIRE((launch != bucketed.end() && wait != bucketed.end()));
  CHECK(launch->start_us <= wait->start_us);  // bucket 0 left before the wait for the last one began
  // One bucket: launched at backward's end and waited for at once, on the caller's thread
  // when the group is idle. Its all-reduce is then inside backward, but not hidden.
  CHECK(report::overlap_fraction(traced_step({}), "comm", "backward", 0, "wait") == 0);
}

// Each reducer marks the last launch of every backward (PyTorch's GradBucket.is_last()):
// the one DDP waits for at once, which the default hook lets its caller run.
TEST_CASE("parallel.ddp.the_last_launch_of_each_backward_is_marked", "[parallel][ddp]") {
  auto batches = make_batches(2, 2 * kLocalBatch, DType::float32);
  auto marks_of = [&](ReducerKind reducer) {
    std::vector<std::vector<bool>> marks(2);
    std::vector<std::shared_ptr<Mlp>> replicas = {make_mlp(DType::float32), make_mlp(DType::float32)};
    run_local_world(2, [&](std::shared_ptr<ProcessGroup> pg) {
      DistributedDataParallel ddp(replicas[pg->rank()], pg, {.reducer = reducer, .first_bucket_mb = 300 / kBytesPerMb});
      ddp.register_comm_hook([&marks, rank = pg->rank(), standard = ddp.comm_hook()](ProcessGroup& group,
                                                                                     const GradBucket& bucket) {
        marks[rank].push_back(bucket.is_last);
        return standard(group, bucket);
      });
      for (const Batch& batch : batches) {
        Batch mine = batch.rows(pg->rank() * kLocalBatch, kLocalBatch);
        cross_entropy(ddp(mine.x), mine.y).backward();
      }
    });
    CHECK(marks[0] == marks[1]);
    return marks[0];
  };
  using Marks = std::vector<bool>;
  CHECK(marks_of(ReducerKind::per_parameter) == Marks{0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1});
  CHECK(marks_of(ReducerKind::flat) == Marks{1, 1});
  CHECK(marks_of(ReducerKind::bucketed) == Marks{0, 1, 0, 1});
}

TEST_CASE("parallel.ddp.without_init_sync_the_replicas_start_apart_and_stay_apart", "[parallel][ddp]") {
  std::vector<std::shared_ptr<Mlp>> replicas = {make_mlp(DType::float64), make_mlp(DType::float64)};
  init_normal(*replicas[1], 99, DType::float64);  // rank 1 starts from another seed
  auto batches = make_batches(3, 2 * kLocalBatch, DType::float64);
  std::vector<double> drift;
  std::string error = error_from(2, [&](int rank, auto pg) {
    DistributedDataParallel ddp(replicas[rank], pg, {.init_sync = false});
    auto opt = make_sgd(*replicas[rank]);
    for (const Batch& batch : batches) {
      Batch mine = batch.rows(rank * kLocalBatch, kLocalBatch);
      opt.zero_grad();
      cross_entropy(ddp(mine.x), mine.y).backward();
      opt.step();
    }
    ddp.check_consistency();
  });
  CHECK_THAT(error, Catch::Contains("parameter 'fc1.weight' differs across replicas"));
  CHECK(relative_error(*replicas[0], *replicas[1]) > 0.1);  // the same averaged steps keep the gap
}

TEST_CASE("parallel.ddp.a_second_backward_through_one_forward_is_an_error", "[parallel][ddp]") {
  std::vector<std::shared_ptr<Mlp>> replicas = {make_mlp(DType::float32), make_mlp(DType::float32)};
  auto batch = make_batches(1, 2 * kLocalBatch, DType::float32)[0];
  for (ReducerKind reducer : {ReducerKind::per_parameter, ReducerKind::flat, ReducerKind::bucketed}) {
    INFO(reducer_name(reducer));
    std::string error = error_from(2, [&](int rank, auto pg) {
      DistributedDataParallel ddp(replicas[rank], pg, {.reducer = reducer});
      Batch mine = batch.rows(rank * kLocalBatch, kLocalBatch);
      Variable loss = cross_entropy(ddp(mine.x), mine.y);
      loss.backward(Tensor(), true);
      loss.backward();
    });
    CHECK_THAT(error, Catch::Contains("got a second gradient in one synchronising backward") &&
                          Catch::Contains("Each backward needs its own forward"));
  }
}

TEST_CASE("parallel.ddp.broadcasts_rank_0_state_at_construction", "[parallel][ddp]") {
  std::vector<std::shared_ptr<Mlp>> replicas = {make_mlp(DType::float32), make_mlp(DType::float32)};
  for (Variable& p : replicas[1]->parameters()) p.data().fill_(3.0);
  run_local_world(2, [&](std::shared_ptr<ProcessGroup> pg) { DistributedDataParallel ddp(replicas[pg->rank()], pg); });
  CHECK(relative_error(*replicas[1], *replicas[0]) == 0);
}

TEST_CASE("parallel.ddp.buckets_are_reverse_order_grad_views", "[parallel][ddp]") {
  // About 100 bytes per bucket: every bucket holds one or two parameters.
  const DDPOptions tiny = {.bucket_cap_mb = 100 / kBytesPerMb, .first_bucket_mb = 100 / kBytesPerMb};
  auto model = make_mlp(DType::float32);
  std::vector<std::string> order, expected;
  for (auto& [name, p] : model->named_parameters()) expected.insert(expected.begin(), name);
  bool grads_alias = true;
  size_t bucket_count = 0;
  run_local_world(1, [&](std::shared_ptr<ProcessGroup> pg) {
    DistributedDataParallel ddp(model, pg, tiny);
    const auto& reducer = dynamic_cast<const BucketedReducer&>(ddp.reducer());
    bucket_count = reducer.buckets().size();
    for (Variable& p : model->parameters()) grads_alias = grads_alias && p.grad().defined();
    for (const auto& bucket : reducer.buckets())
      for (size_t i : bucket.parameters) {
        order.push_back(reducer.parameters()[i].name);
        grads_alias = grads_alias && reducer.parameters()[i].param.grad().storage() == bucket.flat.storage();
      }
  });
  CHECK(order == expected);
  CHECK(bucket_count >= 4);
  CHECK(grads_alias);
  CHECK(oracle_error(2, DType::float64, tiny, 5) < 1e-10);
  CHECK(oracle_error(4, DType::float64, {.bucket_cap_mb = 100 / kBytesPerMb, .first_bucket_mb = 100 / kBytesPerMb,
                                         .algorithm = Algorithm::ring},
                     5) < 1e-10);
}

TEST_CASE("parallel.ddp.first_bucket_launches_before_backward_ends", "[parallel][ddp]") {
  // The first bucket holds fc3 (272 bytes); everything else shares the second.
  std::vector<std::shared_ptr<Mlp>> replicas = {make_mlp(DType::float32), make_mlp(DType::float32)};
  auto batch = make_batches(1, 2 * kLocalBatch, DType::float32)[0];
  std::vector<std::string> events;
  run_local_world(2, [&](std::shared_ptr<ProcessGroup> pg) {
    LaunchLog launches([&](size_t b) { events.push_back("launch " + std::to_string(b)); });
    DistributedDataParallel ddp(replicas[pg->rank()], pg, {.first_bucket_mb = 300 / kBytesPerMb});
    if (pg->rank() == 0) {
      ddp.set_observer(&launches);
      Variable& fc1_weight = replicas[0]->fc1->parameter("weight");
      fc1_weight.add_grad_ready_hook([&](const Variable&) { events.push_back("ready fc1"); });
    }
    Batch mine = batch.rows(pg->rank() * kLocalBatch, kLocalBatch);
    cross_entropy(ddp(mine.x), mine.y).backward();
  });
  // fc3's bucket went out while backward had yet to reach fc1.
  REQUIRE(events.size() == 3);
  CHECK(events[0] == "launch 0");
  CHECK(std::find(events.begin(), events.end(), "ready fc1") != events.end());
  CHECK(std::find(events.begin(), events.end(), "launch 1") != events.end());
}

TEST_CASE("parallel.ddp.no_sync_accumulates_like_one_big_batch", "[parallel][ddp]") {
  const NoSyncRun run = train_with_no_sync(2, {});
  CHECK(run.launches_inside == std::vector<int>(2, 0));
  CHECK(run.worst_error < 1e-10);
}

TEST_CASE("parallel.ddp.construction_names_the_mismatched_parameter", "[parallel][ddp]") {
  std::vector<std::shared_ptr<Mlp>> shapes = {make_mlp(DType::float32), make_mlp(DType::float32, 8)};
  CHECK_THAT(error_from(2, [&](int rank, auto pg) { DistributedDataParallel ddp(shapes[rank], pg); }),
             Catch::Contains("DistributedDataParallel: parameter 'fc1.weight' has shape [16, 6] on rank 0 but [8, 6] "
                             "on rank 1"));
  std::vector<std::shared_ptr<Mlp>> dtypes = {make_mlp(DType::float32), make_mlp(DType::float64)};
  CHECK_THAT(error_from(2, [&](int rank, auto pg) { DistributedDataParallel ddp(dtypes[rank], pg); }),
             Catch::Contains("parameter 'fc1.weight' has float32 [16, 6] on rank 0 but float64 [16, 6] on rank 1"));
}

TEST_CASE("parallel.ddp.unused_parameter_is_named", "[parallel][ddp]") {
  std::vector<std::shared_ptr<Mlp>> replicas = {make_mlp(DType::float32), make_mlp(DType::float32)};
  for (auto& replica : replicas) replica->skip_fc2 = true;
  auto batch = make_batches(1, 2 * kLocalBatch, DType::float32)[0];
  std::string error = error_from(2, [&](int rank, auto pg) {
    DistributedDataParallel ddp(replicas[rank], pg);
    Batch mine = batch.rows(rank * kLocalBatch, kLocalBatch);
    cross_entropy(ddp(mine.x), mine.y).backward();
    ddp(mine.x);
  });
  CHECK_THAT(error, Catch::Contains("no gradient for 'fc2.weight', 'fc2.bias'") &&
                        Catch::Contains("find_unused_parameters = true"));
}

TEST_CASE("parallel.ddp.find_unused_parameters_matches_single_process", "[parallel][ddp]") {
  auto skip_odd_steps = [](int step) { return step % 2 == 1; };
  CHECK(oracle_error(2, DType::float64, {.find_unused_parameters = true}, 6, skip_odd_steps) < 1e-10);
  // With tiny buckets, fc2's own bucket is entirely unused on the skipped steps.
  CHECK(oracle_error(2, DType::float64,
                     {.bucket_cap_mb = 100 / kBytesPerMb, .first_bucket_mb = 100 / kBytesPerMb,
                      .find_unused_parameters = true, .algorithm = Algorithm::ring},
                     6, skip_odd_steps) < 1e-10);
}

TEST_CASE("parallel.ddp.consistency_check_catches_a_hand_edit", "[parallel][ddp]") {
  std::vector<std::shared_ptr<Mlp>> replicas = {make_mlp(DType::float32), make_mlp(DType::float32)};
  auto batch = make_batches(1, 2 * kLocalBatch, DType::float32)[0];
  std::string error = error_from(2, [&](int rank, auto pg) {
    DistributedDataParallel ddp(replicas[rank], pg, {.check_every = 1});
    auto opt = make_sgd(*replicas[rank]);
    Batch mine = batch.rows(rank * kLocalBatch, kLocalBatch);
    cross_entropy(ddp(mine.x), mine.y).backward();
    opt.step();
    ddp.check_consistency();  // passes: the replicas took the same step
    if (rank == 1) replicas[1]->fc2->parameter("weight").data().add_(1e-3);  // C14's pitfall
    ddp(mine.x);
  });
  CHECK_THAT(error, Catch::Contains("parameter 'fc2.weight' differs across replicas: rank 0 (sum") &&
                        Catch::Contains(") vs rank 1 (sum") && Catch::Contains("edited by hand"));
}

TEST_CASE("parallel.ddp.consistency_check_catches_a_replaced_parameter", "[parallel][ddp]") {
  std::vector<std::shared_ptr<Mlp>> replicas = {make_mlp(DType::float32), make_mlp(DType::float32)};
  std::string error = error_from(2, [&](int rank, auto pg) {
    DistributedDataParallel ddp(replicas[rank], pg);
    if (rank == 0) replicas[0]->fc1->parameter("weight") = Variable(Tensor::zeros({kHidden, kIn}), true);
    ddp.check_consistency();
  });
  CHECK_THAT(error, Catch::Contains("check_consistency: rank 0: parameter 'fc1.weight' was replaced"));
}

// With the check due, forward runs the collective check before its own rank's structural
// one, so the rank that did not replace anything hears of it too instead of waiting at the
// next all-reduce (a short timeout turns that wait into a failure here).
TEST_CASE("parallel.ddp.forward_check_tells_every_rank_of_a_replaced_parameter", "[parallel][ddp]") {
  std::vector<std::shared_ptr<Mlp>> replicas = {make_mlp(DType::float32), make_mlp(DType::float32)};
  auto batch = make_batches(1, kLocalBatch, DType::float32)[0];
  std::vector<std::string> errors(2);
  run_local_world(2, [&](std::shared_ptr<ProcessGroup> pg) {
    DistributedDataParallel ddp(replicas[pg->rank()], pg, {.check_every = 1});
    if (pg->rank() == 1) replicas[1]->fc1->parameter("weight") = Variable(Tensor::zeros({kHidden, kIn}), true);
    errors[pg->rank()] = test::error_from([&] { cross_entropy(ddp(batch.x), batch.y).backward(); });
  }, {.timeout_s = 10});
  for (const std::string& error : errors)
    CHECK_THAT(error, Catch::Contains("check_consistency: rank 1: parameter 'fc1.weight' was replaced") &&
                          Catch::Contains("the model no longer holds the wrapped Variables"));
}

// Without the check, the replacing rank's own forward still refuses, naming itself.
TEST_CASE("parallel.ddp.forward_refuses_a_replaced_parameter_naming_the_rank", "[parallel][ddp]") {
  auto model = make_mlp(DType::float32);
  auto batch = make_batches(1, kLocalBatch, DType::float32)[0];
  std::string error = error_from(1, [&](int, auto pg) {
    DistributedDataParallel ddp(model, pg);
    model->fc2->parameter("bias") = Variable(Tensor::zeros({kHidden}), true);
    ddp(batch.x);
  });
  CHECK_THAT(error, Catch::Contains("DistributedDataParallel: rank 0: parameter 'fc2.bias' was replaced") &&
                        Catch::Contains("the model no longer holds the wrapped Variables"));
}

TEST_CASE("parallel.ddp.uneven_inputs_are_an_error_naming_the_counts", "[parallel][ddp]") {
  std::vector<std::shared_ptr<Mlp>> replicas;
  for (int r = 0; r < 4; ++r) replicas.push_back(make_mlp(DType::float32));
  std::string error = error_from(4, [&](int rank, auto pg) {
    DistributedDataParallel ddp(replicas[rank], pg);
    ddp.check_even_inputs(98);  // agreed
    ddp.check_even_inputs(rank == 3 ? 97 : 98);
  });
  CHECK_THAT(error, Catch::Contains("rank 3 has 97 batches, the others 98"));
}

// Rank 1's gradient goes wrong in step 2 of 3; the consistency check before step 3 names
// the parameter when the fault was a corruption after the all-reduce, and passes when
// it was a dropped contribution (every rank then applies the same, wrong, average).
TEST_CASE("parallel.ddp.injected_gradient_faults", "[parallel][ddp]") {
  auto batches = make_batches(3, 2 * kLocalBatch, DType::float64);
  auto run = [&](GradientFault fault, ReducerKind reducer, std::vector<std::shared_ptr<Mlp>>& replicas) {
    return error_from(2, [&](int rank, auto pg) {
      DistributedDataParallel ddp(replicas[rank], pg, {.reducer = reducer, .check_every = 1});
      GradientFaultInjector injector;
      ddp.register_comm_hook(injector.wrap(ddp.comm_hook()));
      auto opt = make_sgd(*replicas[rank]);
      for (int s = 0; s < 3; ++s) {
        if (s == 1 && rank == 1) injector.arm(fault);
        Batch mine = batches[s].rows(rank * kLocalBatch, kLocalBatch);
        opt.zero_grad();
        cross_entropy(ddp(mine.x), mine.y).backward();
        opt.step();
      }
    });
  };
  auto reference = make_mlp(DType::float64);
  train_single(*reference, batches, [](int) { return false; });
  for (ReducerKind reducer : {ReducerKind::per_parameter, ReducerKind::flat, ReducerKind::bucketed}) {
    INFO(reducer_name(reducer));
    std::vector<std::shared_ptr<Mlp>> corrupted = {make_mlp(DType::float64), make_mlp(DType::float64)};
    CHECK_THAT(run(GradientFault::corrupt, reducer, corrupted),
               Catch::Contains("parameter 'fc3.bias' differs across replicas"));
    std::vector<std::shared_ptr<Mlp>> dropped = {make_mlp(DType::float64), make_mlp(DType::float64)};
    CHECK(run(GradientFault::drop, reducer, dropped).empty());
    CHECK(relative_error(*dropped[0], *dropped[1]) == 0);    // identical replicas ...
    CHECK(relative_error(*dropped[0], *reference) > 1e-6);  // ... of the wrong model
  }
}

// Claim C11: the check names the step of the fault, the parameter it spoiled and, when the
// other ranks agree, the rank. Rank 2 of 3 corrupts its gradient in step 2 of 4: checked at
// every forward, the check before step 3 blames step 2; checked every second forward (before
// steps 2 and 4), the check before step 4 blames steps 2 to 3, since the one before step 2
// passed.
TEST_CASE("parallel.ddp.consistency_check_names_the_step_and_the_rank", "[parallel][ddp]") {
  auto batches = make_batches(4, 3 * kLocalBatch, DType::float64);
  auto run = [&](int64_t check_every) {
    std::vector<std::shared_ptr<Mlp>> replicas;
    for (int r = 0; r < 3; ++r) replicas.push_back(make_mlp(DType::float64));
    return error_from(3, [&](int rank, auto pg) {
      DistributedDataParallel ddp(replicas[rank], pg, {.check_every = check_every});
      GradientFaultInjector injector;
      ddp.register_comm_hook(injector.wrap(ddp.comm_hook()));
      auto opt = make_sgd(*replicas[rank]);
      for (int step = 1; step <= 4; ++step) {
        if (step == 2 && rank == 2) injector.arm(GradientFault::corrupt);
        Batch mine = batches[step - 1].rows(rank * kLocalBatch, kLocalBatch);
        opt.zero_grad();
        cross_entropy(ddp(mine.x), mine.y).backward();
        opt.step();
      }
    });
  };
  const std::string every_step = run(1);
  CHECK_THAT(every_step, Catch::Contains("parameter 'fc3.bias' differs across replicas: rank 2 (sum ") &&
                             Catch::Contains(") vs the other 2 ranks (sum ") &&
                             Catch::Contains("identical after step 1 and differ after step 2, so it happened in step 2"));
  CHECK_THAT(run(2), Catch::Contains("rank 2 (sum ") &&
                         Catch::Contains("identical after step 1 and differ after step 3, so it happened in steps 2 to 3"));
}

// The trace of one step: the first bucket is launched inside backward before the wait
// for the all-reduces begins, its all-reduce (a "comm" event) starts at its launch and ends
// before the wait does, and the wait ends backward. (Which thread finishes the all-reduce
// depends on how busy the machine is: the communication thread, or the caller's when it
// waits before that thread has woken up; parallel.ddp.first_bucket_launches_before_backward_ends
// and the overlap figure of ringgrad-train cover the overlap.)
TEST_CASE("parallel.ddp.trace_shows_communication_inside_backward", "[parallel][ddp]") {
  const auto events = traced_step({.first_bucket_mb = 300 / kBytesPerMb});
  const auto first = [&](const char* category) {
    return *std::find_if(events.begin(), events.end(), [&](auto& e) { return e.category == category; });
  };
  // Backward ends in the wait for what is still in flight (the last bucket's launch may be
  // a wait of its own before it).
  const auto last_ending = [&](const char* category) {
    report::TraceEvent last;
    for (const auto& e : events)
      if (e.category == category && e.start_us + e.duration_us >= last.start_us + last.duration_us) last = e;
    return last;
  };
  const report::TraceEvent backward = first("backward"), launch = first("launch"), comm = first("comm"),
                          wait = last_ending("wait");
  CHECK(launch.start_us >= backward.start_us);
  CHECK(launch.start_us <= wait.start_us);
  CHECK(comm.start_us >= launch.start_us);
  CHECK(comm.start_us + comm.duration_us <= wait.start_us + wait.duration_us);
  CHECK(wait.start_us + wait.duration_us <= backward.start_us + backward.duration_us);
  CHECK(std::count_if(events.begin(), events.end(), [](auto& e) { return e.category == "launch"; }) == 2);
}

// A straggler's delay shows on the punctual rank as DDP's step agreement: rank 1 sleeps
// before its backward, rank 0's backward waits for it in an "agree" span, before any bucket
// leaves.
TEST_CASE("parallel.ddp.trace_shows_the_wait_for_a_late_rank", "[parallel][ddp]") {
  constexpr auto kLate = std::chrono::milliseconds(60);
  std::vector<std::shared_ptr<Mlp>> replicas = {make_mlp(DType::float32), make_mlp(DType::float32)};
  auto batch = make_batches(1, 2 * kLocalBatch, DType::float32)[0];
  std::vector<report::TraceEvent> events;
  run_local_world(2, [&](std::shared_ptr<ProcessGroup> pg) {
    report::TraceRecorder trace(pg->rank());
    TraceObserver observer(&trace);
    DistributedDataParallel ddp(replicas[pg->rank()], pg, {.observer = &observer});
    Batch mine = batch.rows(pg->rank() * kLocalBatch, kLocalBatch);
    Variable loss = cross_entropy(ddp(mine.x), mine.y);
    if (pg->rank() == 1) std::this_thread::sleep_for(kLate);
    loss.backward();
    if (pg->rank() == 0) events = trace.events();
  });
  const auto agree = std::find_if(events.begin(), events.end(), [](auto& e) { return e.category == "agree"; });
  const auto launch = std::find_if(events.begin(), events.end(), [](auto& e) { return e.category == "launch"; });
  REQUIRE((agree != events.end() && launch != events.end()));
  CHECK(agree->name == "wait for every rank (step agreement)");
  CHECK(agree->duration_us >= 0.8 * std::chrono::duration_cast<std::chrono::microseconds>(kLate).count());
  CHECK(agree->start_us + agree->duration_us <= launch->start_us);
  CHECK(std::count_if(events.begin(), events.end(), [](auto& e) { return e.category == "agree"; }) == 1);
}

// Rank 0 gets rank 1's all-reduces with their byte counts (what the flow picture shows).
TEST_CASE("parallel.ddp.gathered_trace_carries_every_rank_s_bytes", "[parallel][ddp]") {
  std::vector<std::shared_ptr<Mlp>> replicas = {make_mlp(DType::float32), make_mlp(DType::float32)};
  auto batch = make_batches(1, 2 * kLocalBatch, DType::float32)[0];
  std::vector<report::TraceEvent> gathered;
  std::vector<CommStats> stats(2);
  run_local_world(2, [&](std::shared_ptr<ProcessGroup> pg) {
    report::TraceRecorder trace(pg->rank());
    TraceObserver observer(&trace);
    DistributedDataParallel ddp(replicas[pg->rank()], pg, {.reducer = ReducerKind::flat, .algorithm = Algorithm::ring});
    Batch mine = batch.rows(pg->rank() * kLocalBatch, kLocalBatch);
    Variable loss = cross_entropy(ddp(mine.x), mine.y);
    pg->reset_stats();
    pg->set_observer(&observer);
    loss.backward();
    pg->set_observer(nullptr);
    stats[pg->rank()] = pg->stats();
    auto all = gather_trace(*pg, trace.events());
    if (pg->rank() == 0) gathered = std::move(all);
  });
  for (int rank : {0, 1}) {
    int64_t sent = 0, received = 0;
    for (const auto& e : gathered) {
      if (e.rank != rank || e.category != "comm") continue;
      for (const auto& [key, value] : e.args) {
        if (key == "bytes") sent += value.as_int();
        if (key == "bytes_received") received += value.as_int();
      }
    }
    INFO("rank " << rank);
    CHECK(sent > 0);
    CHECK(sent == static_cast<int64_t>(stats[rank].bytes_sent));
    CHECK(received == static_cast<int64_t>(stats[rank].bytes_received));
  }
}

TEST_CASE("parallel.ddp.buffers_follow_rank_0_at_every_forward", "[parallel][ddp]") {
  // A model with a buffer that its forward does not change.
  struct Counted : nn::Cloneable<Counted> {
    Counted() {
      fc = register_module("fc", nn::Linear(kIn, kClasses));
      register_buffer("seen", Tensor::zeros({1}));
    }
    Variable forward(const Variable& x) override { return fc->forward(x); }
    std::shared_ptr<nn::Linear> fc;
  };
  std::vector<std::shared_ptr<Counted>> replicas = {std::make_shared<Counted>(), std::make_shared<Counted>()};
  auto batch = make_batches(1, kLocalBatch, DType::float32)[0];
  std::vector<float> seen(2);
  run_local_world(2, [&](std::shared_ptr<ProcessGroup> pg) {
    const int rank = pg->rank();
    DistributedDataParallel ddp(replicas[rank], pg);
    replicas[rank]->buffer("seen").fill_(rank == 0 ? 7.0 : -1.0);  // the ranks' buffers drift apart
    ddp(batch.x);
    seen[rank] = replicas[rank]->buffer("seen").to_vector<float>()[0];
  });
  CHECK(seen == std::vector<float>{7, 7});
}

}  // namespace rg::parallel
