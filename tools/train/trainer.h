// Trainer: the training loop of ringgrad-train — epochs of batch -> step -> metrics, periodic
// evaluation, checkpoints, progress, and the run's summary. The places where a parallel mode
// changes the loop are virtual: step() (a DDP wrapper replaces forward/backward/update),
// make_sampler() (a DistributedSampler per rank) and evaluate() (sums reduced across ranks);
// only the main rank (is_main) prints or writes files.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "data/loader.h"
#include "data/named.h"
#include "nn/module.h"
#include "nn/optim.h"
#include "nn/schedule.h"
#include "report/metrics.h"
#include "parallel/fault.h"
#include "parallel/observer.h"
#include "report/trace.h"
#include "tensor/generator.h"
#include "tools/train/options.h"

namespace rg::train {

using data::DataSplits;  // the run's train and test sets, loaded by name (data/named.h)

// A --resume checkpoint that cannot be used with this run: a flag problem (exit code 2).
class ResumeError : public Error {
 public:
  using Error::Error;
};

struct StepResult {
  double loss = 0;      // mean over the batch
  int64_t correct = 0;  // argmax(logits) == label
  int64_t samples = 0;
};

struct EvalResult {
  double loss = 0;
  double accuracy = 0;
};

struct RunSummary {
  EvalResult test;
  double samples_per_s = 0;  // training samples ÷ seconds spent in training steps (data loading included)
  double train_time_s = 0;   // those seconds
  double time_s = 0;         // the whole run, start-up decoding excluded
  int64_t epochs = 0;        // epochs that ran steps
  int64_t steps = 0;         // global step count at the end
  std::optional<double> comm_hidden;  // of the traced steps' all-reduce time, the share inside backward
};

// Which worker this trainer is; rank 0 prints and writes the run's files.
struct Role {
  int rank = 0;
  int world_size = 1;
};

// Sums over (a share of) the test set.
struct EvalSums {
  double loss_sum = 0;
  int64_t correct = 0;
  int64_t samples = 0;
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
  std::filesystem::path trace_path() const { return out_dir_ / "trace.json"; }
  // Ranks of one process should share one trace epoch (see TraceRecorder); call before run().
  void set_trace_epoch(report::TraceRecorder::Clock::time_point epoch) {
    trace_ = std::make_unique<report::TraceRecorder>(role_.rank, epoch);
    trace_observer_ = parallel::TraceObserver(trace_.get());
  }
  // This rank's trace events of the traced steps (empty unless options.trace_steps > 0).
  std::vector<report::TraceEvent> trace_events() const { return trace_->events(); }

 protected:
  // One optimisation step on one batch: for each micro-batch forward, loss, backward
  // (gradients accumulate), then one update.
  virtual StepResult step(const data::Batch& batch);
  // The update after a step's backward: the optimizer's step by default (a parameter
  // server worker pushes its gradients instead).
  virtual void apply_update() { optimizer_->step(); }
  // Whether this trainer evaluates on the test set (the asynchronous modes leave it to
  // one worker during training, and evaluate the final model themselves).
  virtual bool evaluates() const { return true; }
  // The model's forward; a parallel mode puts its wrapper here.
  virtual Variable forward(const Tensor& x) { return (*model_)(x); }
  // Held during the backward of every micro-batch but the last, to defer the gradient
  // synchronisation (DDP's no_sync); nothing by default.
  virtual std::shared_ptr<void> defer_sync() { return nullptr; }
  // The training order; the default reshuffles every epoch from (seed, epoch).
  virtual std::unique_ptr<data::Sampler> make_sampler(int64_t dataset_size);
  // Which test images this rank evaluates (null: all, in order), and how the ranks' sums
  // combine (the default: this rank's are the whole).
  virtual std::unique_ptr<data::Sampler> make_test_sampler(int64_t) { return nullptr; }
  virtual EvalSums combine(const EvalSums& mine) { return mine; }
  // Called at the start of each epoch with its number of batches on this rank.
  virtual void start_epoch(int64_t /*batches*/) {}
  // Called when tracing starts (on) and stops (off), to trace the parallel mode's own ops.
  virtual void trace_communication(parallel::Observer* /*observer*/) {}
  // Every rank's trace events, on the main rank (a collective in parallel modes).
  virtual std::vector<report::TraceEvent> gather_trace() { return trace_events(); }

  nn::Module& model() { return *model_; }
  optim::Optimizer& optimizer() { return *optimizer_; }
  Tensor to_device(const Tensor& t) const;
  const TrainOptions& options() const { return options_; }
  const Role& role() const { return role_; }
  int64_t current_step() const { return step_; }  // steps done before this one
  // The recorder while the current step is traced, else null.
  report::TraceRecorder* trace() { return tracing_ ? trace_.get() : nullptr; }
  // The same recorder as an observer of the parallel module, or null.
  parallel::Observer* trace_observer() { return tracing_ ? &trace_observer_ : nullptr; }
  // Test loss and accuracy over the whole test set.
  EvalResult evaluate();

 private:
  class Stopwatch;
  void prepare();  // sampler, loaders and LR schedule (calls the virtual make_sampler)
  void restore(const std::string& path);
  void write_config() const;
  // Runs the steps of `epoch` from batch `skip_batches` on; false when max_steps stopped it.
  bool run_epoch(int64_t epoch, int64_t skip_batches, Stopwatch& train_clock);
  void record_step(const StepResult& result, int64_t epoch);
  EvalResult evaluate_and_record();
  void save_checkpoint(int64_t epoch, int64_t position) const;
  bool out_of_steps() const { return options_.max_steps > 0 && step_ >= options_.max_steps; }
  void update_tracing();  // traces steps 1 .. trace_steps (step 0 warms up)
  std::optional<double> write_trace(const std::vector<report::TraceEvent>& events) const;
  void delay_if_straggler();

  TrainOptions options_;
  std::shared_ptr<nn::Module> model_;
  const DataSplits& data_;
  Role role_;
  bool is_main_;
  Device device_;
  std::filesystem::path out_dir_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  std::unique_ptr<optim::Schedule> schedule_;
  std::unique_ptr<data::Sampler> sampler_;
  std::unique_ptr<data::DataLoader> train_loader_, test_loader_;
  std::unique_ptr<report::MetricsWriter> metrics_;
  int64_t steps_per_epoch_ = 0;
  int64_t step_ = 0;  // global, across resumes
  int64_t start_epoch_ = 0, start_position_ = 0;
  int64_t samples_ = 0;  // trained in this process
  int64_t last_eval_step_ = -1;
  EvalResult last_eval_;
  std::unique_ptr<data::Sampler> test_sampler_;
  std::unique_ptr<report::TraceRecorder> trace_;
  parallel::TraceObserver trace_observer_;
  bool tracing_ = false;
  std::optional<parallel::StragglerDelay> straggler_;  // when this rank is the straggler
};

// x on `device`, in the dtype of the model's parameters when x is floating.
Tensor as_model_input(const Tensor& x, const nn::Module& model, const Device& device);
// The optimizer ringgrad-train's flags ask for, over `parameters`.
std::unique_ptr<optim::Optimizer> make_optimizer(const TrainOptions& options, const std::vector<Variable>& parameters);
// Sums over what `loader` yields, and their loss and accuracy; the model in eval mode meanwhile.
EvalSums evaluate_sums(nn::Module& model, data::DataLoader& loader, const Device& device);
EvalResult to_result(const EvalSums& sums);
EvalResult evaluate_model(nn::Module& model, const data::Dataset& test, const Device& device);

// The human-readable lines and, last, the machine-readable `summary: ...` line.
void print_summary(std::ostream& out, const RunSummary& summary, const std::filesystem::path& out_dir);

}  // namespace rg::train
