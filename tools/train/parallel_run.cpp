// The parallel modes' trainers and the launcher (see parallel_run.h).
#include "tools/train/parallel_run.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>

#include "data/sampler.h"
#include "nn/checkpoint.h"
#include "parallel/async.h"
#include "parallel/data_parallel.h"
#include "parallel/ddp.h"
#include "parallel/gather_trace.h"
#include "parallel/launch.h"
#include "parallel/process_group.h"

namespace rg::train {

using parallel::DistributedDataParallel;
using parallel::ProcessGroup;

namespace {

// A --bucket-cap-mb below the first bucket's 1 MB caps that one too: the buckets are then
// the size asked for (the MLP's and the CNN's gradients fit in 1 MB, so it would never split
// them otherwise).
parallel::DDPOptions ddp_options(const TrainOptions& o) {
  return {.reducer = parallel::parse_reducer(o.reducer),
          .bucket_cap_mb = o.bucket_cap_mb,
          .first_bucket_mb = std::min(parallel::DDPOptions{}.first_bucket_mb, o.bucket_cap_mb),
          .algorithm = parallel::parse_algorithm(o.allreduce),
          .check_every = o.check_every * o.accumulation};  // DDP counts forwards: one per micro-batch
}

// One rank of --parallel ddp: the model wrapped in DistributedDataParallel, the test set
// evaluated in shares whose sums are all-reduced, the step's metrics those of the global batch.
class DDPTrainer : public Trainer {
 public:
  // A collective: wrapping the model broadcasts rank 0's parameters.
  DDPTrainer(const TrainOptions& options, std::shared_ptr<nn::Module> model, const DataSplits& data,
             std::shared_ptr<ProcessGroup> pg)
      : Trainer(options, model, data, {pg->rank(), pg->size()}),
        pg_(std::move(pg)),
        ddp_(std::make_unique<DistributedDataParallel>(model, pg_, ddp_options(options))),
        fault_(parallel::plan_for(options.corrupt_grad, pg_->rank())) {
    ddp_->register_comm_hook(injector_.wrap(ddp_->comm_hook()));
  }

 protected:
  // The metrics of a step are the global batch's: the ranks' sums, all-reduced.
  StepResult step(const data::Batch& batch) override {
    if (fault_ && fault_->step == current_step() + 1) injector_.arm(fault_->kind);
    const StepResult mine = Trainer::step(batch);
    // Bookkeeping, not training: kept out of the trace, whose overlap figure is about gradients.
    pg_->set_observer(nullptr);
    const auto all = parallel::sum_over_ranks(*pg_, {mine.loss * static_cast<double>(mine.samples),
                                                     static_cast<double>(mine.correct),
                                                     static_cast<double>(mine.samples)});
    pg_->set_observer(trace_observer());
    return {all[0] / all[2], static_cast<int64_t>(all[1]), static_cast<int64_t>(all[2])};
  }
  Variable forward(const Tensor& x) override { return ddp_->forward(Variable(x)); }
  std::shared_ptr<void> defer_sync() override { return std::make_shared<DistributedDataParallel::NoSync>(*ddp_); }
  std::unique_ptr<data::Sampler> make_test_sampler(int64_t dataset_size) override {
    return std::make_unique<data::ShardSampler>(dataset_size, role().rank, role().world_size);
  }
  models::Evaluation combine(const models::Evaluation& mine) override {
    const auto all = parallel::sum_over_ranks(*pg_, {mine.loss_sum, static_cast<double>(mine.correct),
                                                     static_cast<double>(mine.samples)});
    return {all[0], static_cast<int64_t>(all[1]), static_cast<int64_t>(all[2])};
  }
  void start_epoch(int64_t batches) override { ddp_->check_even_inputs(batches); }
  void trace_communication(parallel::Observer* observer) override {
    pg_->set_observer(observer);
    ddp_->set_observer(observer);
  }
  std::vector<report::TraceEvent> gather_trace() override { return parallel::gather_trace(*pg_, trace_events()); }
  std::vector<parallel::CommStats> traffic_by_rank() override { return parallel::all_gather_stats(*pg_); }

 private:
  std::shared_ptr<ProcessGroup> pg_;
  std::unique_ptr<DistributedDataParallel> ddp_;
  std::optional<parallel::GradientFaultPlan> fault_;  // when --corrupt-grad names this rank
  parallel::GradientFaultInjector injector_;          // its comm hook wraps the all-reduce
};

std::vector<Device> data_parallel_devices(const TrainOptions& options) {
  const bool cuda = Device::parse(options.device).is_cuda();
  std::vector<Device> devices;
  for (int i = 0; i < options.workers; ++i) devices.push_back(cuda ? Device::cuda(i) : Device::cpu(i));
  return devices;
}

// For dp the straggler is a device, whose replica sleeps inside DataParallel's forward
// while the others wait at the gather: the Trainer must not delay the whole step too.
TrainOptions without_straggler(TrainOptions options) {
  options.straggler.reset();
  return options;
}

// --parallel dp (parallel_run.h): DataParallel in the forward hook.
class DPTrainer : public Trainer {
 public:
  DPTrainer(const TrainOptions& options, std::shared_ptr<nn::Module> model, const DataSplits& data)
      : Trainer(without_straggler(options), model, data),
        dp_(std::make_unique<parallel::DataParallel>(model, data_parallel_devices(options))),
        fault_(options.corrupt_grad),
        injector_(dp_->devices().size()) {
    dp_->set_output_gradient_hook(injector_.hook());
    if (!options.straggler) return;
    const size_t slow_replica = static_cast<size_t>(options.straggler->rank);
    auto delay = std::make_shared<parallel::StragglerDelay>(*options.straggler, options.seed);
    dp_->set_before_replica_forward([this, slow_replica, delay](size_t replica) {
      if (replica == slow_replica) delay->maybe_sleep(trace_observer());
    });
  }
  // Device 0's extra load, per step: what it received and sent, and the phase times.
  std::string traffic_report() const { return parallel::per_step_summary(dp_->stats()); }

 protected:
  Variable forward(const Tensor& x) override { return dp_->forward(Variable(x)); }
  StepResult step(const data::Batch& batch) override {
    if (fault_ && fault_->step == current_step() + 1) injector_.arm(static_cast<size_t>(fault_->rank), fault_->kind);
    return Trainer::step(batch);
  }

 private:
  std::unique_ptr<parallel::DataParallel> dp_;
  std::optional<parallel::GradientFaultPlan> fault_;  // RANK is a device
  parallel::ReplicaFaultInjector injector_;
};

// A worker of an asynchronous mode, on its shard of each epoch. With a parameter server
// (async-ps) it pushes its gradients and loads the server's fresh parameters instead of
// stepping an optimizer; under hogwild its replica shares the model's parameters, so its
// own optimizer updates the shared model, with no lock. Worker 0 writes the run's metrics
// and evaluates during training; the final model is evaluated once all are done.
class AsyncTrainer : public Trainer {
 public:
  // pg: the parameter server's group (this rank is worker pg->rank() - 1); null for hogwild.
  AsyncTrainer(const TrainOptions& options, std::shared_ptr<nn::Module> model, const DataSplits& data, Role role,
               std::shared_ptr<ProcessGroup> pg)
      : Trainer(options, model, data, role),
        pg_(std::move(pg)),
        worker_(pg_ ? std::make_unique<parallel::AsyncWorker>(model, pg_) : nullptr),
        fault_(parallel::plan_for(options.corrupt_grad, role.rank)) {}
  void finish() {
    if (worker_) worker_->finish();
  }

 protected:
  // --corrupt-grad, then the push or the optimizer's step.
  void apply_update() override {
    if (fault_ && fault_->step == current_step() + 1) parallel::damage_gradients(fault_->kind, model());
    if (worker_)
      worker_->push();
    else
      Trainer::apply_update();
  }
  bool evaluates() const override { return role().rank == 0; }
  // The pushes and pulls, as "comm" events: this worker's own trace (the server has none).
  void trace_communication(parallel::Observer* observer) override {
    if (pg_) pg_->set_observer(observer);
  }

 private:
  std::shared_ptr<ProcessGroup> pg_;
  std::unique_ptr<parallel::AsyncWorker> worker_;     // async-ps only
  std::optional<parallel::GradientFaultPlan> fault_;  // when --corrupt-grad names this worker
};

// Rank 0 of an async-ps world: serves until every worker finished, then evaluates and
// saves the final model. The summary's test metrics are the final model's.
RunSummary serve(const TrainOptions& options, const DataSplits& data, const std::shared_ptr<nn::Module>& model,
                 const std::shared_ptr<ProcessGroup>& pg) {
  auto optimizer = make_optimizer(options, model->parameters());
  const auto start = std::chrono::steady_clock::now();
  const parallel::AsyncPSStats stats =
      run_parameter_server(model, *optimizer, pg, {.max_staleness = options.max_staleness});
  RunSummary summary;
  summary.time_s = summary.train_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  summary.samples_per_s = static_cast<double>(stats.gradients * options.worker_batch()) / summary.train_time_s;
  summary.steps = stats.updates;
  summary.epochs = options.epochs;
  summary.test = models::evaluate(*model, *data.test, Device::parse(options.device));
  nn::save_checkpoint((std::filesystem::path(options.out) / "checkpoint.safetensors").string(), *model,
                      optimizer.get(), {.step = summary.steps, .epoch = options.epochs});
  std::cout << stats.summary() << std::endl;
  return summary;
}

RunSummary work_for_server(const TrainOptions& options, const DataSplits& data,
                           const std::shared_ptr<nn::Module>& model, const std::shared_ptr<ProcessGroup>& pg) {
  AsyncTrainer trainer(options, model, data, {pg->rank() - 1, pg->size() - 1}, pg);
  RunSummary summary = trainer.run();
  trainer.finish();
  return summary;
}

// Hogwild threads on replicas of `model`; the summary is thread 0's, with the test
// metrics of the shared model once every thread is done.
RunSummary run_hogwild_threads(const TrainOptions& options, const DataSplits& data,
                               const std::shared_ptr<nn::Module>& model) {
  RunSummary summary;
  parallel::run_hogwild(model, options.workers, [&](nn::Module& replica, int thread) {
    // The Trainer wants shared ownership; run_hogwild owns the replica for this call.
    std::shared_ptr<nn::Module> borrowed(&replica, [](nn::Module*) {});
    AsyncTrainer trainer(options, borrowed, data, {thread, options.workers}, nullptr);
    RunSummary mine = trainer.run();
    if (thread == 0) summary = mine;
  });
  summary.test = models::evaluate(*model, *data.test, Device::parse(options.device));
  return summary;
}

RunSummary train_ddp_rank(const TrainOptions& options, const DataSplits& data,
                          const std::shared_ptr<nn::Module>& model, const std::shared_ptr<ProcessGroup>& pg) {
  DDPTrainer trainer(options, model, data, pg);
  pg->barrier();  // the ranks' trace clocks start together (to a few microseconds)
  trainer.set_trace_epoch(report::TraceRecorder::Clock::now());
  return trainer.run();
}

}  // namespace

RunSummary train_data_parallel(const TrainOptions& options, const DataSplits& data,
                               const std::shared_ptr<nn::Module>& model) {
  DPTrainer trainer(options, model, data);
  const RunSummary summary = trainer.run();
  std::cout << trainer.traffic_report() << std::endl;
  return summary;
}

// Rank-threads train clones of the model (the server of a local async-ps world, rank 0,
// serves the model itself); a process under mpirun trains its own copy. A --resume problem
// under mpirun ends the job as it would end one process: with exit code 2.
ParallelOutcome train_on_workers(const TrainOptions& options, const DataSplits& data,
                                 const std::shared_ptr<nn::Module>& model, int argc, char** argv) {
  if (options.parallel == "hogwild") return {run_hogwild_threads(options, data, model), true};
  const bool local = options.backend == "local", async_ps = options.parallel == "async-ps";
  ParallelOutcome outcome{.is_main = local};
  const parallel::WorldLaunch launch{
      .group = {.backend = options.backend, .algorithm = parallel::parse_algorithm(options.allreduce)},
      .local_world_size = options.workers + (async_ps ? 1 : 0),
      .exit_code = [](const std::exception& e) { return dynamic_cast<const ResumeError*>(&e) ? 2 : 1; }};
  parallel::run_world(launch, argc, argv, [&](std::shared_ptr<ProcessGroup> pg) {
    const bool server = async_ps && pg->rank() == 0;
    const auto replica = local && !server ? model->clone() : model;
    RunSummary summary = server     ? serve(options, data, replica, pg)
                         : async_ps ? work_for_server(options, data, replica, pg)
                                    : train_ddp_rank(options, data, replica, pg);
    if (pg->rank() == 0) outcome = {summary, true};
  });
  return outcome;
}

}  // namespace rg::train
