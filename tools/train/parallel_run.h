// ringgrad-train's parallel modes, each a Trainer whose hooks wrap the library's pieces
// (parallel_run.cpp): ddp (DistributedDataParallel on every rank), dp (DataParallel in one
// process), and the asynchronous async-ps (parameter server) and hogwild (threads on one
// shared model); plus the launcher that runs them on the local world (rank-threads of this
// process) or as this process's rank under mpirun.
//
// Same global batches as one process: rank r of N trains on positions r, r+N, ... of the
// epoch's shuffled order (DistributedSampler), so its k-th batch of b samples and the
// others' k-th batches together are exactly batch k of `--parallel none --batch-size N·b`
// (positions k·N·b .. (k+1)·N·b - 1). DDP averages the ranks' mean gradients, which is
// the mean over the global batch: only the order of floating-point sums differs.
#pragma once
#include <memory>

#include "nn/module.h"
#include "tools/train/trainer.h"

namespace rg::train {

// --parallel dp: each step's global batch (--batch-size) is split over the devices
// cpu:0..cpu:N-1 (cuda:0..cuda:N-1 with --device cuda), the replicas run on one thread each
// and the outputs and gradients come back to device 0. The batches are those of none.
// Prints device 0's extra load per step (what it received and sent, the phase times).
RunSummary train_data_parallel(const TrainOptions& options, const DataSplits& data,
                               const std::shared_ptr<nn::Module>& model);

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
