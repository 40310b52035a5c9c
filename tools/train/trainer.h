// Trainer: the training loop of ringgrad-train — epochs of batch -> step -> metrics, periodic
// evaluation, checkpoints, progress, and the run's summary. The places where a parallel mode
// changes the loop are virtual: step() (a DDP wrapper replaces forward/backward/update),
// make_sampler() (a DistributedSampler per rank) and evaluate() (sums reduced across ranks);
// only the main rank (is_main) prints or writes files.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "data/loader.h"
#include "nn/module.h"
#include "nn/optim.h"
#include "nn/schedule.h"
#include "report/metrics.h"
#include "tools/train/datasets.h"
#include "tools/train/options.h"

namespace rg::train {

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
};

class Trainer {
 public:
  // The model must already be on `options.device`; `data` must outlive the trainer.
  Trainer(TrainOptions options, std::shared_ptr<nn::Module> model, const DataSplits& data, bool is_main = true);
  virtual ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Restores model, optimizer, generators and the loop position from options.resume
  // (when set), then trains. Throws ResumeError for an unusable checkpoint.
  RunSummary run();

  std::filesystem::path metrics_path() const { return out_dir_ / "metrics.jsonl"; }
  std::filesystem::path checkpoint_path() const { return out_dir_ / "checkpoint.safetensors"; }

 protected:
  // One optimisation step on one batch: forward, loss, backward, update.
  virtual StepResult step(const data::Batch& batch);
  // The training order; the default reshuffles every epoch from (seed, epoch).
  virtual std::unique_ptr<data::Sampler> make_sampler(int64_t dataset_size);
  // Test loss and accuracy over the whole test set.
  virtual EvalResult evaluate();

  nn::Module& model() { return *model_; }
  optim::Optimizer& optimizer() { return *optimizer_; }
  Tensor to_device(const Tensor& t) const;

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

  TrainOptions options_;
  std::shared_ptr<nn::Module> model_;
  const DataSplits& data_;
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
};

// The human-readable lines and, last, the machine-readable `summary: ...` line.
void print_summary(std::ostream& out, const RunSummary& summary, const std::filesystem::path& out_dir);

}  // namespace rg::train
