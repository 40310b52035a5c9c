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
  void trace_communication(report::TraceRecorder* trace) override;
  std::vector<report::TraceEvent> gather_trace() override;

 private:
  std::shared_ptr<parallel::ProcessGroup> pg_;
  std::unique_ptr<parallel::DistributedDataParallel> ddp_;
  std::optional<std::pair<int64_t, parallel::GradientFault>> fault_;  // (step, kind) on this rank
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

 private:
  std::unique_ptr<parallel::DataParallel> dp_;
};

// Trains `model` (built from the seed on the main thread) with options.parallel ddp:
// on options.workers rank-threads (each with a clone of the model) or, with
// options.backend == "mpi", as this process's rank. Returns rank 0's summary (other MPI
// ranks return theirs) and whether this process is rank 0.
struct ParallelOutcome {
  RunSummary summary;
  bool is_main = true;
};
ParallelOutcome run_data_parallel(const TrainOptions& options, const DataSplits& data,
                                  const std::shared_ptr<nn::Module>& model, int argc, char** argv);

}  // namespace rg::train
