// Trainer: the training loop of ringgrad-train. At its heart is chapter 01's loop (take a
// batch, forward, loss, backward, update); around it what a program needs: the learning-rate
// schedule, metrics, periodic evaluation, checkpoints and resume, a progress bar and a trace
// of the first steps. A parallel mode (parallel_run.h) changes the loop through the virtual
// hooks below; only the main rank (rank 0) prints or writes files.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/loader.h"
#include "data/named.h"
#include "models/evaluate.h"
#include "nn/checkpoint.h"
#include "nn/module.h"
#include "nn/optim.h"
#include "nn/schedule.h"
#include "parallel/fault.h"
#include "parallel/observer.h"
#include "parallel/process_group.h"
#include "report/flow_svg.h"
#include "report/metrics.h"
#include "report/stopwatch.h"
#include "report/trace.h"
#include "tools/train/options.h"

namespace rg::train {

using data::DataSplits;

// A --resume checkpoint that cannot be used with this run: a flag problem (exit code 2),
// "--resume: <problem>".
class ResumeError : public Error {
 public:
  explicit ResumeError(const std::string& problem) : Error("--resume: " + problem) {}
};

struct StepResult {
  double loss = 0;      // mean over the batch
  int64_t correct = 0;  // argmax(logits) == label
  int64_t samples = 0;
};

struct RunSummary {
  models::Evaluation test;
  double samples_per_s = 0;  // training samples ÷ seconds spent in training steps (data loading included)
  double train_time_s = 0;   // those seconds
  double time_s = 0;         // the whole run, start-up decoding excluded
  int64_t epochs = 0;        // epochs that ran steps
  int64_t steps = 0;         // global step count at the end
  std::optional<double> comm_hidden;  // of the traced steps' all-reduce time, the share inside backward
  bool flow_picture = false;          // OUT/flow.svg was written (a traced ddp run)
};

// Which worker this trainer is: rank r of world_size trains on positions r, r + world_size,
// ... of each epoch's shuffled order (a DistributedSampler; one worker sees all of it).
struct Role {
  int rank = 0;
  int world_size = 1;
};

class Trainer {
 public:
  // The model must already be on `options.device`; `data` must outlive the trainer.
  Trainer(TrainOptions options, std::shared_ptr<nn::Module> model, const DataSplits& data, Role role = {});
  virtual ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Restores model, optimizer, generators and the loop position from options.resume
  // (when set), then trains. Throws ResumeError for an unusable checkpoint.
  RunSummary run();

  std::filesystem::path metrics_path() const { return out_dir_ / "metrics.jsonl"; }
  std::filesystem::path checkpoint_path() const { return out_dir_ / "checkpoint.safetensors"; }
  // Ranks of one process should share one trace epoch (see TraceRecorder); call before run().
  void set_trace_epoch(report::TraceRecorder::Clock::time_point epoch);
  // This rank's trace events of the traced steps (empty unless options.trace_steps > 0).
  std::vector<report::TraceEvent> trace_events() const { return trace_->events(); }

 protected:
  // ---- The hooks of a parallel mode.
  // One optimisation step on one batch: for each micro-batch forward, loss and backward
  // (gradients accumulate), then one update.
  virtual StepResult step(const data::Batch& batch);
  // The model's forward; a wrapper (DDP, DataParallel) goes here.
  virtual Variable forward(const Tensor& x) { return (*model_)(x); }
  // Held during the backward of every micro-batch but the last, to defer the gradient
  // synchronisation (DDP's no_sync); nothing by default.
  virtual std::shared_ptr<void> defer_sync() { return nullptr; }
  // After the step's backward: the optimizer's step (a parameter-server worker pushes its
  // gradients instead).
  virtual void apply_update() { optimizer_->step(); }
  // Whether this trainer evaluates during training (the asynchronous modes leave it to one
  // worker and evaluate the final model themselves).
  virtual bool evaluates() const { return true; }
  // Which test images this rank evaluates (null: all of them), and how the ranks' sums add up.
  virtual std::unique_ptr<data::Sampler> make_test_sampler(int64_t) { return nullptr; }
  virtual models::Evaluation combine(const models::Evaluation& mine) { return mine; }
  // At the start of each epoch, with its number of batches on this rank.
  virtual void start_epoch(int64_t /*batches*/) {}
  // When tracing starts (an observer) and stops (null): trace the mode's own operations.
  virtual void trace_communication(parallel::Observer* /*observer*/) {}
  // Every rank's trace events, on the main rank (a collective in parallel modes).
  virtual std::vector<report::TraceEvent> gather_trace() { return trace_events(); }
  // Every rank's traffic over the run, on the main rank (a collective); none by default.
  virtual std::vector<parallel::CommStats> traffic_by_rank() { return {}; }

  nn::Module& model() { return *model_; }
  const TrainOptions& options() const { return options_; }
  const Role& role() const { return role_; }
  int64_t current_step() const { return step_; }  // steps done before this one
  // While the current step is traced: the recorder, and the same as an observer of the
  // parallel module; else null.
  report::TraceRecorder* trace() { return tracing_ ? trace_.get() : nullptr; }
  parallel::Observer* trace_observer() { return tracing_ ? &trace_observer_ : nullptr; }

 private:
  void prepare();  // sampler, loaders, LR schedule, and the position to start from
  void restore(const std::string& path);
  void describe_resume(const nn::SafetensorsFile& file, bool new_optimizer, bool new_batch) const;
  report::Fields config_fields() const;
  void write_config() const;
  void write_report(const RunSummary& summary, const std::vector<report::TraceEvent>& events,
                    const std::vector<parallel::CommStats>& traffic,
                    const std::optional<report::FlowPicture>& flow) const;
  // Runs the steps of `epoch` from batch `skip_batches` on; false when max_steps stopped it.
  bool run_epoch(int64_t epoch, int64_t skip_batches);
  void record_step(const StepResult& result, int64_t epoch);
  models::Evaluation evaluate_and_record();
  void save_checkpoint(int64_t epoch, int64_t position) const;
  bool out_of_steps() const { return options_.max_steps > 0 && step_ >= options_.max_steps; }
  void update_tracing();  // traces steps 1 .. trace_steps (step 0 warms up)
  std::optional<double> write_trace(const std::vector<report::TraceEvent>& events) const;
  // The lecture's picture of one step, measured from the traced steps (ddp runs only).
  std::optional<report::FlowPicture> flow_picture(const std::vector<report::TraceEvent>& events) const;

  TrainOptions options_;
  std::shared_ptr<nn::Module> model_;
  const DataSplits& data_;
  Role role_;
  bool is_main_;
  Device device_;
  std::filesystem::path out_dir_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  std::unique_ptr<optim::Schedule> schedule_;
  std::unique_ptr<data::Sampler> sampler_, test_sampler_;
  std::unique_ptr<data::DataLoader> train_loader_, test_loader_;
  std::unique_ptr<report::MetricsWriter> metrics_;
  int64_t steps_per_epoch_ = 0;
  int64_t step_ = 0;  // global, across resumes
  int64_t start_epoch_ = 0, start_position_ = 0;
  int64_t samples_ = 0;  // trained in this process
  report::Stopwatch train_clock_;  // the steps, data loading included; not evaluation or checkpoints
  int64_t last_eval_step_ = -1;
  models::Evaluation last_eval_;
  std::unique_ptr<report::TraceRecorder> trace_;
  parallel::TraceObserver trace_observer_;
  bool tracing_ = false;
  std::optional<parallel::StragglerDelay> straggler_;  // when this rank is the straggler
};

// The optimizer ringgrad-train's flags ask for, over `parameters`.
std::unique_ptr<optim::Optimizer> make_optimizer(const TrainOptions& options, const std::vector<Variable>& parameters);

// The human-readable lines and, last, the machine-readable `summary: ...` line.
void print_summary(std::ostream& out, const RunSummary& summary, const std::filesystem::path& out_dir);

}  // namespace rg::train
