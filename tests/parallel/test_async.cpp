// parallel.async.*: the asynchronous family on the local world. recv_any takes messages in
// arrival order; the parameter server with staleness bound 0 trains exactly like one
// process on the whole batch (the oracle of test_ddp.cpp); with a straggler it still
// converges, records stale gradients and keeps them within the SSP bound; a silent worker
// fails the server naming it; server and workers report their spans to observers; Hogwild!
// threads converge on one shared model.
// The parallel.async.hogwild_* tests race on purpose (lock-free updates are the algorithm):
// scripts/sanitize-check.sh leaves them out of ThreadSanitizer runs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <thread>

#include "async_training.h"

namespace rg::parallel {
namespace {

using namespace test;

constexpr int kSteps = 20;

// A separable problem: Gaussian blobs around kClasses well-spread centres.
struct Blobs {
  Tensor centres;
  Batch sample(int64_t n, Generator& gen) const {
    Tensor y = randint(0, kClasses, {n}, gen);
    return {index_select(centres, 0, y) + randn({n, kIn}, gen), y};
  }
};

Blobs make_blobs() {
  Generator gen(3);
  return {randn({kClasses, kIn}, gen, 0.0, 3.0)};
}

double loss_on(nn::Module& model, const Batch& data) {
  NoGradGuard no_grad;
  return cross_entropy(model(data.x), data.y).item();
}

constexpr int kBlobWorkers = 3;
constexpr int kBlobSteps = 30;  // per worker

struct BlobRun {
  double loss_before, loss_after;  // of the server's model on held-out blobs
  AsyncPSStats stats;
};

// kBlobWorkers train on fresh blob batches, kBlobSteps each; the last worker, a
// straggler, sleeps 5 ms before every push.
BlobRun train_on_blobs(const AsyncPSOptions& options) {
  Blobs blobs = make_blobs();
  Generator gen(1);
  Batch eval = blobs.sample(512, gen);
  auto server_model = make_sequential(DType::float32, 7);
  std::vector<std::shared_ptr<nn::Sequential>> worker_models;
  for (int w = 0; w < kBlobWorkers; ++w) worker_models.push_back(make_sequential(DType::float32, 7));
  BlobRun run{loss_on(*server_model, eval), 0, {}};
  auto steps = [&](int rank, nn::Module& model, AsyncWorker& worker) {
    Generator mine(100 + rank);
    for (int s = 0; s < kBlobSteps; ++s) {
      Batch batch = blobs.sample(16, mine);
      cross_entropy(model(batch.x), batch.y).backward();
      if (rank == kBlobWorkers) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      worker.push();
    }
  };
  run.stats = train_async(server_model, worker_models, options, 0.5, steps);
  run.loss_after = loss_on(*server_model, eval);
  return run;
}

int64_t total(const std::vector<int64_t>& counts) { return std::accumulate(counts.begin(), counts.end(), int64_t{0}); }

}  // namespace

TEST_CASE("parallel.async.recv_any_serves_in_arrival_order", "[parallel][async]") {
  // Rank 1 sends only after rank 0 has taken rank 2's message, so rank 2's comes first.
  std::vector<int> sources;
  std::vector<double> payloads;
  run_local_world(3, [&](std::shared_ptr<ProcessGroup> pg) {
    Tensor t = Tensor::full({3}, pg->rank());
    if (pg->rank() == 0) {
      for (int i = 0; i < 2; ++i) {
        sources.push_back(pg->recv_any(t, 5));
        payloads.push_back(t.to_vector<double>()[2]);
        if (i == 0) pg->send(t, 1, 6);
      }
    } else if (pg->rank() == 1) {
      pg->recv(Tensor::zeros({3}), 0, 6);
      pg->send(t, 0, 5);
    } else {
      pg->send(t, 0, 5);
    }
  });
  CHECK(sources == std::vector<int>{2, 1});
  CHECK(payloads == std::vector<double>{2, 1});
}

TEST_CASE("parallel.async.recv_any_matches_only_its_tag", "[parallel][async]") {
  int source = -1, async_source = -1;
  bool completed = false;
  std::vector<double> payload;
  run_local_world(3, [&](std::shared_ptr<ProcessGroup> pg) {
    Tensor t = Tensor::full({2}, pg->rank());
    if (pg->rank() == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // rank 1's tag-3 message is waiting
      source = pg->recv_any(t, 4);
      auto work = pg->recv_any_async(t, 3);
      async_source = work->source();
      completed = work->is_completed();
      payload = t.to_vector<double>();
    } else {
      pg->send(t, 0, pg->rank() == 1 ? 3 : 4);
    }
  });
  CHECK(source == 2);
  CHECK(async_source == 1);
  CHECK(completed);
  CHECK(payload == std::vector<double>{1, 1});
}

TEST_CASE("parallel.async.recv_any_errors_name_sender_and_timeout", "[parallel][async]") {
  CHECK_THAT(error_from([] {
               run_local_world(2, [](std::shared_ptr<ProcessGroup> pg) {
                 if (pg->rank() == 0) pg->recv_any(Tensor::zeros({2}), 1);
                 if (pg->rank() == 1) pg->send(Tensor::zeros({4}), 0, 1);
               });
             }),
             Catch::Contains("rank 1 sent 16 bytes but the receive buffer holds 8"));
  CHECK_THAT(error_from([] {
               run_local_world(
                   2, [](std::shared_ptr<ProcessGroup> pg) { if (pg->rank() == 0) pg->recv_any(Tensor::zeros({2}), 1); },
                   {.timeout_s = 0.5});
             }),
             Catch::Contains("rank 0: recv from any rank #0 timed out after 0.5 s waiting for a message from any rank"));
}

TEST_CASE("parallel.async.ps_staleness_0_matches_single_process_big_batch", "[parallel][async]") {
  for (DType dtype : {DType::float64, DType::float32})
    for (int workers : {2, 4}) {
      INFO(dtype_name(dtype) << ", " << workers << " workers");
      auto initial = make_sequential(dtype, 7);
      auto batches = make_batches(kSteps, workers * kLocalBatch, dtype);
      auto reference = clone_of(*initial);
      train_single(*reference, batches);
      // Workers start from other weights: the first pull must replace them.
      auto server_model = clone_of(*initial);
      std::vector<std::shared_ptr<nn::Sequential>> worker_models;
      for (int w = 0; w < workers; ++w) worker_models.push_back(make_sequential(dtype, 20 + w));
      std::vector<int64_t> versions(workers + 1, 0);
      auto stats = train_async(server_model, worker_models, {.max_staleness = 0}, 0.9,
                               [&](int rank, nn::Module& model, AsyncWorker& worker) {
                                 for (const Batch& batch : batches) {
                                   Batch mine = batch.rows((rank - 1) * kLocalBatch, kLocalBatch);
                                   cross_entropy(model(mine.x), mine.y).backward();
                                   worker.push();
                                 }
                                 versions[rank] = worker.version();
                               });
      const double tolerance = dtype == DType::float64 ? 1e-10 : 1e-5;
      CHECK(relative_error(*server_model, *reference) < tolerance);
      for (auto& model : worker_models) CHECK(relative_error(*model, *reference) < tolerance);
      CHECK(stats.updates == kSteps);
      CHECK(std::count(versions.begin() + 1, versions.end(), kSteps) == workers);
      CHECK(stats.staleness_histogram == std::vector<int64_t>{kSteps * workers});
      CHECK(stats.discarded == 0);
      std::vector<int64_t> per_worker(workers + 1, kSteps);
      per_worker[0] = 0;
      CHECK(stats.gradients_from == per_worker);
    }
}

TEST_CASE("parallel.async.ps_converges_with_a_straggler_and_stale_gradients", "[parallel][async]") {
  BlobRun run = train_on_blobs({});
  INFO("loss " << run.loss_before << " -> " << run.loss_after << ", max staleness " << run.stats.max_staleness());
  CHECK(run.loss_after < 0.25 * run.loss_before);
  CHECK(run.stats.gradients == kBlobWorkers * kBlobSteps);
  CHECK(total(run.stats.staleness_histogram) == kBlobWorkers * kBlobSteps);
  CHECK(run.stats.max_staleness() > 0);
  CHECK(run.stats.delayed_replies == 0);
  CHECK(run.stats.updates == kBlobSteps);
}

TEST_CASE("parallel.async.ps_staleness_bound_holds", "[parallel][async]") {
  // With k = W and equal pushes per worker, s = 1 keeps every staleness <= 2s = 2 (async.h).
  const int64_t s = 1;
  BlobRun run = train_on_blobs({.max_staleness = s});
  INFO("max staleness " << run.stats.max_staleness() << ", delayed replies " << run.stats.delayed_replies);
  CHECK(run.stats.max_staleness() <= 2 * s);
  CHECK(run.stats.delayed_replies > 0);  // the straggler held the others back
  CHECK(total(run.stats.staleness_histogram) == kBlobWorkers * kBlobSteps);
  CHECK(run.loss_after < 0.25 * run.loss_before);
}

TEST_CASE("parallel.async.ps_silent_worker_is_a_timeout_naming_it", "[parallel][async]") {
  auto server_model = make_sequential(DType::float32, 7);
  auto worker_model = make_sequential(DType::float32, 7);
  std::string error = error_from([&] {
    run_local_world(
        3,
        [&](std::shared_ptr<ProcessGroup> pg) {
          if (pg->rank() == 0) {
            auto opt = make_sgd(*server_model);
            run_parameter_server(server_model, opt, pg);
          } else if (pg->rank() == 1) {
            AsyncWorker worker(worker_model, pg);
            Batch batch = make_batches(1, kLocalBatch, DType::float32)[0];
            cross_entropy((*worker_model)(batch.x), batch.y).backward();
            worker.push();
            worker.finish();
          }  // rank 2 never says a word
        },
        {.timeout_s = 2});
  });
  CHECK_THAT(error, Catch::Contains("waiting for a request from worker rank 2 (0 gradients pushed)"));
  CHECK_THAT(error, Catch::Contains("timed out after 2 s"));
}

// Worker 1 pushes once and falls silent while worker 2 keeps the server busy: the server
// names worker 1 once it has been silent for the timeout, not when worker 2 is done.
TEST_CASE("parallel.async.ps_names_a_worker_gone_silent_while_others_go_on", "[parallel][async]") {
  auto server_model = make_sequential(DType::float32, 7);
  std::vector<std::shared_ptr<nn::Sequential>> workers = {make_sequential(DType::float32, 7),
                                                          make_sequential(DType::float32, 7)};
  const auto start = std::chrono::steady_clock::now();
  double noticed_after_s = -1;
  std::string error = error_from([&] {
    run_local_world(
        3,
        [&](std::shared_ptr<ProcessGroup> pg) {
          if (pg->rank() == 0) {
            auto opt = make_sgd(*server_model);
            try {
              run_parameter_server(server_model, opt, pg);
            } catch (const Error&) {
              noticed_after_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
              throw;
            }
            return;
          }
          auto& model = workers[pg->rank() - 1];
          AsyncWorker worker(model, pg);
          Batch batch = make_batches(1, kLocalBatch, DType::float32)[0];
          const int pushes = pg->rank() == 1 ? 1 : 400;  // worker 2: about 4 s of pushes
          for (int s = 0; s < pushes; ++s) {
            cross_entropy((*model)(batch.x), batch.y).backward();
            worker.push();
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
          }
          if (pg->rank() == 1) std::this_thread::sleep_for(std::chrono::seconds(3));  // silent, alive
          worker.finish();
        },
        {.timeout_s = 1});
  });
  CHECK_THAT(error, Catch::Contains("worker rank 1 (1 gradients pushed) has sent nothing for") &&
                        Catch::Contains("more than the timeout of 1 s, while the others kept going"));
  CHECK(noticed_after_s > 1);
  CHECK(noticed_after_s < 2.5);  // the timeout and one of worker 2's steps, not worker 2's whole run
}

TEST_CASE("parallel.async.ps_rejects_a_different_model", "[parallel][async]") {
  auto server_model = make_sequential(DType::float32, 7);
  auto other = std::make_shared<nn::Sequential>(nn::Linear(kIn, kClasses));
  std::string error = error_from([&] {
    run_local_world(2, [&](std::shared_ptr<ProcessGroup> pg) {
      if (pg->rank() == 0) {
        auto opt = make_sgd(*server_model);
        run_parameter_server(server_model, opt, pg);
      } else {
        AsyncWorker worker(other, pg);
      }
    });
  });
  CHECK_THAT(error,
             Catch::Contains("worker rank 1's model has different parameters (dtypes or shapes) than the server's"));
}

namespace {

// The spans one rank was told of, in the order they ended.
struct SpanLog : Observer {
  struct Span {
    std::string name, category;
    Clock::time_point start, end;
  };
  std::vector<Span> spans;
  void span(const std::string& name, const std::string& category, Clock::time_point start,
            Clock::time_point end) override {
    spans.push_back({name, category, start, end});
  }
  std::vector<std::string> names(const std::string& category) const {
    std::vector<std::string> out;
    for (const Span& s : spans)
      if (s.category == category) out.push_back(s.name);
    return out;
  }
};

}  // namespace

TEST_CASE("parallel.async.ps_reports_its_spans_to_observers", "[parallel][async]") {
  // 2 workers, 3 pushes each, one update per 2 gradients: the server takes in 6 gradients,
  // makes 3 updates and sends 8 replies (each worker's first pull and its 3 pushes).
  constexpr int kWorkers = 2, kPushes = 3;
  std::vector<SpanLog> logs(kWorkers + 1);
  auto server_model = make_sequential(DType::float32, 7);
  auto batch = make_batches(1, kLocalBatch, DType::float32)[0];
  run_local_world(kWorkers + 1, [&](std::shared_ptr<ProcessGroup> pg) {
    SpanLog& log = logs[pg->rank()];
    if (pg->rank() == 0) {
      auto opt = make_sgd(*server_model);
      run_parameter_server(server_model, opt, pg, {.observer = &log});
      return;
    }
    auto model = make_sequential(DType::float32, 7);
    AsyncWorker worker(model, pg, &log);
    for (int p = 0; p < kPushes; ++p) {
      cross_entropy((*model)(batch.x), batch.y).backward();
      worker.push();
    }
    worker.finish();
  });
  const SpanLog& server = logs[0];
  std::vector<std::string> gradients = server.names("push");
  CHECK(std::count(gradients.begin(), gradients.end(), "gradient from rank 1") == kPushes);
  CHECK(std::count(gradients.begin(), gradients.end(), "gradient from rank 2") == kPushes);
  CHECK(gradients.size() == kWorkers * kPushes);
  CHECK(server.names("optimizer") ==
        std::vector<std::string>{"update to version 1", "update to version 2", "update to version 3"});
  std::vector<std::string> replies = server.names("pull");
  CHECK(std::count(replies.begin(), replies.end(), "parameters to rank 1") == kPushes + 1);
  CHECK(std::count(replies.begin(), replies.end(), "parameters to rank 2") == kPushes + 1);
  for (int rank = 1; rank <= kWorkers; ++rank) {
    INFO("worker rank " << rank);
    // A worker pulls, then pushes and pulls again, one after the other.
    std::vector<std::string> sequence;
    for (const SpanLog::Span& s : logs[rank].spans) sequence.push_back(s.category);
    CHECK(sequence == std::vector<std::string>{"pull", "push", "pull", "push", "pull", "push", "pull"});
    for (size_t i = 0; i < logs[rank].spans.size(); ++i) {
      CHECK(logs[rank].spans[i].start <= logs[rank].spans[i].end);
      if (i > 0) CHECK(logs[rank].spans[i - 1].end <= logs[rank].spans[i].start);
    }
  }
}

TEST_CASE("parallel.async.shared_replica_shares_data_not_gradients", "[parallel][async]") {
  auto model = make_sequential(DType::float32, 7);
  auto replica = shared_replica(*model);
  auto mine = model->parameters();
  auto theirs = replica->parameters();
  REQUIRE(mine.size() == theirs.size());
  for (size_t i = 0; i < mine.size(); ++i) CHECK(theirs[i].data().same_data(mine[i].data()));
  Batch batch = make_batches(1, kLocalBatch, DType::float32)[0];
  cross_entropy((*replica)(batch.x), batch.y).backward();
  Tensor before = mine[0].data().clone();
  auto opt = make_sgd(*replica, 0);
  opt.step();
  CHECK_FALSE(mine[0].grad().defined());
  CHECK(max_abs_diff(mine[0].data(), before) > 0);
}

TEST_CASE("parallel.async.hogwild_threads_converge_on_one_model", "[parallel][async]") {
  Blobs blobs = make_blobs();
  Generator gen(1);
  Batch eval = blobs.sample(512, gen);
  for (int threads : {2, 4}) {
    INFO(threads << " threads");
    auto model = make_sequential(DType::float32, 7);
    const double before = loss_on(*model, eval);
    run_hogwild(model, threads, [&](nn::Module& replica, int thread) {
      Generator mine(200 + thread);
      auto opt = make_sgd(replica, 0);
      for (int step = 0; step < 40; ++step) {
        Batch batch = blobs.sample(16, mine);
        opt.zero_grad();
        cross_entropy(replica(batch.x), batch.y).backward();
        opt.step();
      }
    });
    const double after = loss_on(*model, eval);
    INFO("loss " << before << " -> " << after);
    CHECK(after < 0.25 * before);
  }
}

TEST_CASE("parallel.async.hogwild_rethrows_naming_the_thread", "[parallel][async]") {
  auto model = make_sequential(DType::float32, 7);
  CHECK_THAT(error_from([&] {
               run_hogwild(model, 3, [](nn::Module&, int thread) {
                 if (thread == 1) throw Error("injected");
               });
             }),
             Catch::Contains("run_hogwild: thread 1 failed: injected"));
}

}  // namespace rg::parallel
