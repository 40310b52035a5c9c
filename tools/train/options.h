// The options of ringgrad-train and their command line (CLI11). Parsing never throws and
// never exits: it returns the options, or the exit code with the message already printed
// (0 after --help, 2 for a bad flag, with one line naming the flag and what it accepts).
#pragma once
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>

#include "nn/schedule.h"
#include "parallel/fault.h"

namespace rg::train {

struct TrainOptions {
  std::string data = "fashion-mnist";
  std::string model = "mlp";
  int64_t image_size = 32;
  int64_t epochs = 10;
  int64_t batch_size = 128;
  double lr = 0.05;
  double momentum = 0.9;
  std::string optimizer = "sgd";
  double warmup_epochs = 0;
  std::string device = "cpu";
  std::string dtype = "float32";  // of the model (and its inputs): float32|float64
  int threads = 0;  // 0: cores ÷ processes on this node
  uint64_t seed = 0;
  std::string out = "runs/train";
  std::string resume = {};
  bool resume_with_changes = false;  // accept a checkpoint of another optimizer or global batch
  int64_t eval_every = 0;  // steps; 0: at the end of each epoch
  int64_t max_steps = 0;   // 0: no limit

  // Data parallelism (tools/train/parallel_run.h). batch_size is the batch of one worker's
  // step, all its micro-batches together: per worker for ddp, async-ps and hogwild (as in
  // PyTorch DDP scripts), the global batch for none and dp (as with PyTorch's DataParallel).
  // --global-batch-size fixes the global batch instead, and batch_size is derived from it.
  std::string parallel = "none";  // none|dp|ddp|async-ps|hogwild
  int workers = 1;                // ranks; under mpirun, the world size
  std::string backend = "local";  // local (threads of this process) | mpi (under mpirun)
  std::string allreduce = "library";
  std::string reducer = "bucketed";  // DDP's: per_parameter|flat|bucketed
  int64_t global_batch_size = 0;  // as given; 0: not given (the global batch is global_batch())
  int64_t accumulation = 1;       // micro-batches per step (DDP's no_sync on all but the last)
  std::string lr_scaling = "none";  // none | linear: lr × global batch ÷ (batch_size ÷ accumulation)
  double bucket_cap_mb = 25;
  int64_t check_every = 0;        // DDP consistency check every N steps; 0: never
  std::optional<parallel::StragglerPlan> straggler;         // --straggler RANK:MS[:PROB]
  std::optional<parallel::GradientFaultPlan> corrupt_grad;  // --corrupt-grad RANK:STEP[:corrupt|drop]
  int64_t trace_steps = 10;       // steps traced after the first; 0: no trace
  int64_t max_staleness = -1;     // async-ps: the SSP bound s; < 0: unbounded

  // The per-worker batch of one step (all its micro-batches) and the global batch.
  int64_t worker_batch() const { return batch_size; }
  int64_t global_batch() const { return batch_size * (parallel == "none" || parallel == "dp" ? 1 : workers); }
  int64_t micro_batch() const { return batch_size / accumulation; }
  // lr, or with linear scaling lr × global batch ÷ micro-batch: lr is tuned for one
  // worker's micro-batch and grows with the batch each update averages over.
  double lr_in_use() const {
    return lr_scaling == "linear" ? optim::linear_scaled_lr(lr, global_batch(), micro_batch()) : lr;
  }
};

// "32 per micro-batch × 2 workers × 2 accumulation steps = global batch 128; lr 0.05 as
// given (no scaling)": what ringgrad-train prints at start.
std::string describe_batch_and_lr(const TrainOptions& options);

struct CliOutcome {
  std::optional<TrainOptions> options;  // set when training should run
  int exit_code = 0;
};

// Help goes to `out`, errors to `err` as "error: ...".
CliOutcome parse_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace rg::train
