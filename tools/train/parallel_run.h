// ringgrad-train's data-parallel modes: DDPTrainer (one Trainer per rank, its model wrapped
// in DistributedDataParallel) and the launcher that runs it on the `local` world (ranks
// on threads of this process) or as this process's rank under mpirun.
//
// Same global batches as one process: rank r of N trains on positions r, r+N, ... of the
// epoch's shuffled order (DistributedSampler), so its k-th batch of b samples and the
// others' k-th batches together are exactly batch k of `--parallel none --batch-size N·b`
// (positions k·N·b .. (k+1)·N·b - 1). DDP averages the ranks' mean gradients, which is
// the mean over the global batch: only the order of floating-point sums differs.
#pragma once
#include <memory>

#include "nn/module.h"
#include "parallel/async.h"
#include "parallel/data_parallel.h"
#include "parallel/ddp.h"
#include "parallel/process_group.h"
#include "tools/train/trainer.h"

namespace rg::train {

class DDPTrainer : public Trainer {
 public:
  // A collective: wrapping the model broadcasts rank 0's parameters.
  DDPTrainer(TrainOptions options, std::shared_ptr<nn::Module> model, const DataSplits& data,
             std::shared_ptr<parallel::ProcessGroup> pg);

 protected:
  StepResult step(const data::Batch& batch) override;
  Variable forward(const Tensor& x) override { return ddp_->forward(Variable(x)); }
  std::shared_ptr<void> defer_sync() override;
  std::unique_ptr<data::Sampler> make_sampler(int64_t dataset_size) override;
  std::unique_ptr<data::Sampler> make_test_sampler(int64_t dataset_size) override;
  EvalSums combine(const EvalSums& mine) override;
  void start_epoch(int64_t batches) override { ddp_->check_even_inputs(batches); }
  void trace_communication(parallel::Observer* observer) override;
  std::vector<report::TraceEvent> gather_trace() override;

 private:
  std::shared_ptr<parallel::ProcessGroup> pg_;
  std::unique_ptr<parallel::DistributedDataParallel> ddp_;
  std::optional<parallel::GradientFaultPlan> fault_;  // when --corrupt-grad names this rank
  parallel::GradientFaultInjector injector_;          // its comm hook wraps the all-reduce
};

// DataParallel in one process: each step's global batch (--batch-size) is split over the
// devices cpu:0..cpu:N-1 (cuda:0..cuda:N-1 with --device cuda), the replicas run on one
// thread each and the outputs and gradients come back to device 0. The sampler, and so
// the batches, are those of --parallel none.
class DPTrainer : public Trainer {
 public:
  DPTrainer(TrainOptions options, std::shared_ptr<nn::Module> model, const DataSplits& data);
  // Device 0's extra load, per step: what it received and sent, and the phase times.
  std::string traffic_report() const;

 protected:
  Variable forward(const Tensor& x) override { return dp_->forward(Variable(x)); }
  StepResult step(const data::Batch& batch) override;

 private:
  std::unique_ptr<parallel::DataParallel> dp_;
  std::optional<parallel::GradientFaultPlan> fault_;  // RANK is a device
  parallel::ReplicaFaultInjector injector_;
};

// A worker of the parameter server (--parallel async-ps): trains on its shard of each
// epoch (DistributedSampler over the workers) and, instead of stepping an optimizer,
// pushes its gradients and loads the server's fresh parameters. Worker 0 (process rank
// 1) writes the run's metrics and evaluates during training; the server evaluates the
// final model.
class AsyncPSWorkerTrainer : public Trainer {
 public:
  AsyncPSWorkerTrainer(TrainOptions options, std::shared_ptr<nn::Module> model, const DataSplits& data,
                       std::shared_ptr<parallel::ProcessGroup> pg);
  void finish() { worker_.finish(); }

 protected:
  void apply_update() override;  // --corrupt-grad, then push
  bool evaluates() const override { return role().rank == 0; }
  std::unique_ptr<data::Sampler> make_sampler(int64_t dataset_size) override;
  // The pushes and pulls, as "comm" events; this worker's own trace (the server has none).
  void trace_communication(parallel::Observer* observer) override { pg_->set_observer(observer); }

 private:
  std::shared_ptr<parallel::ProcessGroup> pg_;
  parallel::AsyncWorker worker_;
  std::optional<parallel::GradientFaultPlan> fault_;  // when --corrupt-grad names this worker
};

// A Hogwild thread (--parallel hogwild): its replica shares the parameters' data with
// the model, so its own optimizer updates the shared model, with no lock.
class HogwildTrainer : public Trainer {
 public:
  HogwildTrainer(TrainOptions options, std::shared_ptr<nn::Module> replica, const DataSplits& data, Role role);

 protected:
  void apply_update() override;  // --corrupt-grad, then the optimizer's step
  bool evaluates() const override { return role().rank == 0; }
  std::unique_ptr<data::Sampler> make_sampler(int64_t dataset_size) override;

 private:
  std::optional<parallel::GradientFaultPlan> fault_;  // when --corrupt-grad names this thread
};

// Trains `model` (built from the seed on the main thread) with options.parallel ddp,
// async-ps or hogwild: on rank-threads (each with a clone of the model; hogwild: replicas
// sharing its data) or, with options.backend == "mpi", as this process's rank. Returns
// the summary to print and whether this process prints it.
struct ParallelOutcome {
  RunSummary summary;
  bool is_main = true;
};
ParallelOutcome run_data_parallel(const TrainOptions& options, const DataSplits& data,
                                  const std::shared_ptr<nn::Module>& model, int argc, char** argv);

}  // namespace rg::train
