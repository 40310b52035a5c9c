// ringgrad-train's parallel modes, each a Trainer whose hooks wrap the library's pieces:
// ddp (DistributedDataParallel on every rank), dp (DataParallel in one process), and the
// asynchronous async-ps (parameter server) and hogwild (threads on one shared model); plus
// the launcher that runs them on the local world (rank-threads of this process) or as this
// process's rank under mpirun.
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
#include "parallel/gather_trace.h"
#include "parallel/process_group.h"
#include "tools/train/trainer.h"

namespace rg::train {

// One rank of --parallel ddp: the model wrapped in DistributedDataParallel, the test set
// evaluated in shares whose sums are all-reduced, the step's metrics those of the global batch.
class DDPTrainer : public Trainer {
 public:
  // A collective: wrapping the model broadcasts rank 0's parameters.
  DDPTrainer(TrainOptions options, std::shared_ptr<nn::Module> model, const DataSplits& data,
             std::shared_ptr<parallel::ProcessGroup> pg);

 protected:
  StepResult step(const data::Batch& batch) override;
  Variable forward(const Tensor& x) override { return ddp_->forward(Variable(x)); }
  std::shared_ptr<void> defer_sync() override;
  std::unique_ptr<data::Sampler> make_test_sampler(int64_t dataset_size) override;
  models::Evaluation combine(const models::Evaluation& mine) override;
  void start_epoch(int64_t batches) override { ddp_->check_even_inputs(batches); }
  void trace_communication(parallel::Observer* observer) override;
  std::vector<report::TraceEvent> gather_trace() override { return parallel::gather_trace(*pg_, trace_events()); }
  std::vector<parallel::CommStats> traffic_by_rank() override;

 private:
  std::shared_ptr<parallel::ProcessGroup> pg_;
  std::unique_ptr<parallel::DistributedDataParallel> ddp_;
  std::optional<parallel::GradientFaultPlan> fault_;  // when --corrupt-grad names this rank
  parallel::GradientFaultInjector injector_;          // its comm hook wraps the all-reduce
};

// --parallel dp: each step's global batch (--batch-size) is split over the devices
// cpu:0..cpu:N-1 (cuda:0..cuda:N-1 with --device cuda), the replicas run on one thread each
// and the outputs and gradients come back to device 0. The batches are those of none.
class DPTrainer : public Trainer {
 public:
  DPTrainer(TrainOptions options, std::shared_ptr<nn::Module> model, const DataSplits& data);
  // Device 0's extra load, per step: what it received and sent, and the phase times.
  std::string traffic_report() const { return parallel::per_step_summary(dp_->stats()); }

 protected:
  Variable forward(const Tensor& x) override { return dp_->forward(Variable(x)); }
  StepResult step(const data::Batch& batch) override;

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
  AsyncTrainer(TrainOptions options, std::shared_ptr<nn::Module> model, const DataSplits& data, Role role,
               std::shared_ptr<parallel::ProcessGroup> pg);
  void finish();

 protected:
  void apply_update() override;  // --corrupt-grad, then the push or the optimizer's step
  bool evaluates() const override { return role().rank == 0; }
  // The pushes and pulls, as "comm" events: this worker's own trace (the server has none).
  void trace_communication(parallel::Observer* observer) override;

 private:
  std::shared_ptr<parallel::ProcessGroup> pg_;
  std::unique_ptr<parallel::AsyncWorker> worker_;       // async-ps only
  std::optional<parallel::GradientFaultPlan> fault_;  // when --corrupt-grad names this worker
};

// Trains `model` (built from the seed on the main thread) with options.parallel ddp,
// async-ps or hogwild: on rank-threads of this process (each with a clone of the model;
// hogwild: replicas sharing its data) or, with options.backend == "mpi", as this process's
// rank. Returns the summary to print and whether this process prints it.
struct ParallelOutcome {
  RunSummary summary = {};
  bool is_main = true;
};
ParallelOutcome train_on_workers(const TrainOptions& options, const DataSplits& data,
                                 const std::shared_ptr<nn::Module>& model, int argc, char** argv);

}  // namespace rg::train
