// The training loop. Determinism: the model comes from the seeded default generator, the
// order of epoch e from (seed, e), and nothing else draws random numbers, so a checkpoint
// holding (model, optimizer, generators, epoch, batch position) resumes bit for bit: the
// resumed run replays epoch e's order and skips the batches already trained.
#include "tools/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <thread>

#include "autograd/functions.h"
#include "nn/checkpoint.h"
#include "report/progress.h"
#include "tensor/blas.h"
#include "tensor/thread_pool.h"
#include "report/training_charts.h"

namespace rg::train {

namespace {

constexpr int64_t kEvalBatch = 1000;  // evaluation only: bigger batches, same result
constexpr double kWarmupStartFactor = 0.1;

int64_t count_correct(const Tensor& logits, const Tensor& labels) {
  // eq gives uint8 0/1; sum counts integers in int64, so it cannot overflow.
  return static_cast<int64_t>(sum(eq(argmax(logits, 1), labels)).item());
}

std::map<std::string, std::string> run_identity(const TrainOptions& o) {
  return {{"model", o.model}, {"data", o.data}, {"batch_size", std::to_string(o.batch_size)}};
}

}  // namespace

// Accumulates the seconds between start() and stop() calls.
class Trainer::Stopwatch {
 public:
  void start() { started_ = Clock::now(); }
  void stop() { total_ += std::chrono::duration<double>(Clock::now() - started_).count(); }
  double seconds() const { return total_; }

 private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point started_;
  double total_ = 0;
};

Trainer::Trainer(TrainOptions options, std::shared_ptr<nn::Module> model, const DataSplits& data, Role role)
    : options_(std::move(options)),
      model_(std::move(model)),
      data_(data),
      role_(role),
      is_main_(role.rank == 0),
      device_(Device::parse(options_.device)),
      out_dir_(options_.out),
      trace_(std::make_unique<report::TraceRecorder>(role.rank)),
      trace_observer_(trace_.get()),
      straggler_(options_.straggler && options_.straggler->rank == role.rank
                     ? std::optional<parallel::StragglerDelay>(std::in_place, *options_.straggler, options_.seed)
                     : std::nullopt) {
  optimizer_ = make_optimizer(options_, model_->parameters());
}

std::unique_ptr<optim::Optimizer> make_optimizer(const TrainOptions& options, const std::vector<Variable>& parameters) {
  const double lr = options.lr_in_use();
  if (options.optimizer == "adam") return std::make_unique<optim::Adam>(parameters, optim::AdamOptions{.lr = lr});
  return std::make_unique<optim::SGD>(parameters, optim::SGDOptions{.lr = lr, .momentum = options.momentum});
}

EvalSums evaluate_sums(nn::Module& model, data::DataLoader& loader, const Device& device) {
  NoGradGuard no_grad;
  model.eval();
  EvalSums sums;
  for (auto& [x, y] : loader) {
    const Tensor yd = y.device() == device ? y : y.to(device);
    Variable logits = model(as_model_input(x, model, device));
    sums.loss_sum += cross_entropy(logits, yd, Reduction::sum).item();
    sums.correct += count_correct(logits.data(), yd);
    sums.samples += y.size(0);
  }
  model.train();
  return sums;
}

EvalResult to_result(const EvalSums& sums) {
  const auto seen = static_cast<double>(sums.samples);
  return {sums.loss_sum / seen, static_cast<double>(sums.correct) / seen};
}

EvalResult evaluate_model(nn::Module& model, const data::Dataset& test, const Device& device) {
  data::DataLoader loader(test, data::DataLoaderOptions{.batch_size = kEvalBatch});
  return to_result(evaluate_sums(model, loader, device));
}

Trainer::~Trainer() = default;

void Trainer::prepare() {
  sampler_ = make_sampler(data_.train->size());
  train_loader_ = std::make_unique<data::DataLoader>(
      *data_.train, data::DataLoaderOptions{.batch_size = options_.batch_size, .sampler = sampler_.get()});
  test_sampler_ = make_test_sampler(data_.test->size());
  test_loader_ = std::make_unique<data::DataLoader>(
      *data_.test, data::DataLoaderOptions{.batch_size = kEvalBatch, .sampler = test_sampler_.get()});
  steps_per_epoch_ = train_loader_->size();
  const auto warmup_steps = static_cast<int64_t>(std::llround(options_.warmup_epochs * steps_per_epoch_));
  schedule_ = std::make_unique<optim::ConstantLR>(options_.lr_in_use());
  if (warmup_steps > 0) {
    schedule_ = std::make_unique<optim::LinearWarmup>(std::move(schedule_), warmup_steps, kWarmupStartFactor);
  }
}

std::unique_ptr<data::Sampler> Trainer::make_sampler(int64_t dataset_size) {
  return std::make_unique<data::RandomSampler>(dataset_size, options_.seed);
}

Tensor Trainer::to_device(const Tensor& t) const { return t.device() == device_ ? t : t.to(device_); }

// Images come as float32; a float64 model (--dtype float64) gets them in float64.
Tensor as_model_input(const Tensor& x, const nn::Module& model, const Device& device) {
  const Tensor on_device = x.device() == device ? x : x.to(device);
  const auto parameters = model.parameters();
  if (parameters.empty() || !is_floating(x.dtype()) || parameters.front().dtype() == x.dtype()) return on_device;
  return on_device.to(parameters.front().dtype());
}

StepResult Trainer::step(const data::Batch& batch) {
  using report::TraceRecorder;
  delay_if_straggler();
  optimizer_->set_lr(schedule_->lr_at(step_));
  const Tensor x = as_model_input(batch.x, *model_, device_), y = to_device(batch.y);
  const int64_t rows = y.size(0), micro = options_.accumulation;
  optimizer_->zero_grad();
  StepResult result{0, 0, rows};
  for (int64_t k = 0, start = 0; k < micro; ++k) {
    // As even as possible: the last batch of an epoch may not split exactly. The extra
    // rows go to the last micro-batches, so the one that synchronises is never empty.
    const int64_t n = rows / micro + (k >= micro - rows % micro ? 1 : 0);
    if (n == 0) continue;
    const Tensor yk = y.narrow(0, start, n);
    Variable logits, loss;
    {
      TraceRecorder::Scope traced(trace(), "forward", "forward");
      logits = forward(x.narrow(0, start, n));
      // Each micro-batch's mean, weighted by its share, sums to the mean over the batch.
      loss = cross_entropy(logits, yk) * (static_cast<double>(n) / static_cast<double>(rows));
    }
    {
      const auto deferred = k + 1 < micro ? defer_sync() : nullptr;
      TraceRecorder::Scope traced(trace(), "backward", "backward");
      loss.backward();
    }
    result.loss += loss.item();
    result.correct += count_correct(logits.data(), yk);
    start += n;
  }
  TraceRecorder::Scope traced(trace(), "optimizer step", "optimizer");
  apply_update();
  return result;
}

void Trainer::delay_if_straggler() {
  if (straggler_) straggler_->maybe_sleep(trace_observer());
}

EvalResult Trainer::evaluate() { return to_result(combine(evaluate_sums(*model_, *test_loader_, device_))); }

void Trainer::restore(const std::string& path) {
  nn::SafetensorsFile file;
  try {
    file = nn::read_safetensors(path);
  } catch (const Error& e) {
    throw ResumeError(e.what());
  }
  for (const auto& [key, value] : run_identity(options_)) {
    const auto found = file.metadata.find(key);
    const std::string got = found == file.metadata.end() ? "(none)" : found->second;
    if (got != value) {
      throw ResumeError("checkpoint " + path + " was written with " + key + " '" + got + "', this run has '" +
                        value + "'");
    }
  }
  nn::Checkpoint info{.generators = {{"default", &default_generator()}}};
  try {
    nn::load_checkpoint(path, *model_, optimizer_.get(), info);
  } catch (const Error& e) {
    throw ResumeError("checkpoint " + path + " does not fit this model: " + e.what());
  }
  step_ = info.step;
  start_epoch_ = info.sampler_epoch;
  start_position_ = info.sampler_position;
  if (start_position_ >= steps_per_epoch_) {  // saved at the very end of an epoch
    ++start_epoch_;
    start_position_ = 0;
  }
}

void Trainer::save_checkpoint(int64_t epoch, int64_t position) const {
  if (!is_main_) return;
  nn::Checkpoint info{.step = step_, .epoch = epoch, .sampler_epoch = epoch, .sampler_position = position,
                      .generators = {{"default", &default_generator()}}, .extra = run_identity(options_)};
  nn::save_checkpoint(checkpoint_path().string(), *model_, optimizer_.get(), info);
}

void Trainer::write_config() const {
  const data::ImageShape s = data_.shape();
  int64_t parameters = 0;
  for (const auto& p : model_->parameters()) parameters += p.numel();
  report::write_json_file(out_dir_ / "config.json",
                          report::Fields{{"data", options_.data},
                                         {"dataset", data_.train->name()},
                                         {"train_size", data_.train->size()},
                                         {"test_size", data_.test->size()},
                                         {"image", std::to_string(s.channels) + "x" + std::to_string(s.height) +
                                                       "x" + std::to_string(s.width)},
                                         {"classes", s.num_classes},
                                         {"model", options_.model},
                                         {"parameters", parameters},
                                         {"epochs", options_.epochs},
                                         {"batch_size", options_.batch_size},
                                         {"steps_per_epoch", steps_per_epoch_},
                                         {"optimizer", options_.optimizer},
                                         {"lr", options_.lr},
                                         {"momentum", options_.momentum},
                                         {"warmup_epochs", options_.warmup_epochs},
                                         {"device", options_.device},
                                         {"dtype", options_.dtype},
                                         {"threads", get_num_threads()},
                                         {"blas_kernels", blas_info().kernels},
                                         {"seed", static_cast<int64_t>(options_.seed)},
                                         {"eval_every", options_.eval_every},
                                         {"max_steps", options_.max_steps},
                                         {"resume", options_.resume}});
}

void Trainer::record_step(const StepResult& r, int64_t epoch) {
  if (!metrics_) return;
  metrics_->write("train", {{"step", step_},
                            {"epoch", epoch + 1},
                            {"epoch_progress", static_cast<double>(step_) / static_cast<double>(steps_per_epoch_)},
                            {"loss", r.loss},
                            {"acc", static_cast<double>(r.correct) / static_cast<double>(r.samples)},
                            {"lr", optimizer_->lr()}});
}

EvalResult Trainer::evaluate_and_record() {
  last_eval_ = evaluate();
  last_eval_step_ = step_;
  if (metrics_) {
    metrics_->write("eval", {{"step", step_},
                             {"epoch_progress", static_cast<double>(step_) / static_cast<double>(steps_per_epoch_)},
                             {"test_loss", last_eval_.loss},
                             {"test_acc", last_eval_.accuracy}});
  }
  return last_eval_;
}

void Trainer::update_tracing() {
  const bool on = options_.trace_steps > 0 && step_ >= 1 && step_ <= options_.trace_steps;
  if (on == tracing_) return;
  tracing_ = on;
  trace_communication(trace_observer());
}

bool Trainer::run_epoch(int64_t epoch, int64_t skip_batches, Stopwatch& train_clock) {
  sampler_->set_epoch(epoch);
  start_epoch(steps_per_epoch_ - skip_batches);
  const int64_t remaining = options_.max_steps > 0 ? options_.max_steps - step_ : steps_per_epoch_;
  report::ProgressBar bar({.total = std::min(steps_per_epoch_ - skip_batches, remaining),
                           .label = "epoch " + std::to_string(epoch + 1) + "/" + std::to_string(options_.epochs),
                           .enabled = is_main_});
  Stopwatch epoch_clock;
  int64_t batch_index = 0, epoch_samples = 0;
  double loss_sum = 0;
  train_clock.start();
  epoch_clock.start();
  int64_t data_start_us = trace_->now_us();
  for (auto it = train_loader_->begin(); it != train_loader_->end(); ++it, ++batch_index) {
    if (batch_index < skip_batches) continue;
    update_tracing();
    if (tracing_) trace_->record("load batch", "data", data_start_us, trace_->now_us() - data_start_us);
    const StepResult r = step(*it);
    ++step_;
    samples_ += r.samples;
    epoch_samples += r.samples;
    loss_sum += r.loss;
    record_step(r, epoch);
    const int64_t done = batch_index + 1 - skip_batches;
    train_clock.stop();
    epoch_clock.stop();
    bar.update(done, {{"loss", loss_sum / static_cast<double>(done)},
                      {"samples/s", static_cast<double>(epoch_samples) / epoch_clock.seconds()}});
    if (options_.eval_every > 0 && step_ % options_.eval_every == 0 && evaluates()) {
      bar.update(done, {{"test_acc", evaluate_and_record().accuracy}});
    }
    if (out_of_steps()) {
      bar.finish();
      save_checkpoint(epoch, batch_index + 1);
      return false;
    }
    train_clock.start();
    epoch_clock.start();
    data_start_us = trace_->now_us();
  }
  train_clock.stop();
  update_tracing();
  bar.finish();
  if (options_.eval_every == 0 && evaluates()) evaluate_and_record();
  if (is_main_) {
    std::cout << "epoch " << epoch + 1 << "/" << options_.epochs << ": train_loss=" << std::setprecision(4)
              << loss_sum / static_cast<double>(std::max<int64_t>(1, batch_index - skip_batches))
              << " test_loss=" << last_eval_.loss << " test_acc=" << last_eval_.accuracy << std::endl;
  }
  save_checkpoint(epoch + 1, 0);
  return true;
}

RunSummary Trainer::run() {
  const auto run_start = std::chrono::steady_clock::now();
  prepare();
  if (!options_.resume.empty()) restore(options_.resume);
  if (is_main_) {
    std::filesystem::create_directories(out_dir_);
    write_config();
    metrics_ = std::make_unique<report::MetricsWriter>(metrics_path(),
                                                       report::MetricsOptions{.append = !options_.resume.empty()});
  }
  Stopwatch train_clock;
  int64_t epoch = start_epoch_;
  for (int64_t skip = start_position_; epoch < options_.epochs && !out_of_steps(); ++epoch, skip = 0) {
    if (!run_epoch(epoch, skip, train_clock)) {
      ++epoch;
      break;
    }
  }
  if (last_eval_step_ != step_ && evaluates()) evaluate_and_record();
  if (is_main_) report::write_training_charts(metrics_path(), out_dir_);
  RunSummary s;
  if (tracing_) {  // the run ended inside the traced steps
    tracing_ = false;
    trace_communication(nullptr);
  }
  if (options_.trace_steps > 0) s.comm_hidden = write_trace(gather_trace());
  s.test = last_eval_;
  s.train_time_s = train_clock.seconds();
  s.samples_per_s = s.train_time_s > 0 ? static_cast<double>(samples_) / s.train_time_s : 0;
  s.time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
  s.epochs = epoch;
  s.steps = step_;
  return s;
}

// OUT/trace.json and OUT/timeline.svg; returns the fraction of communication hidden
// behind backward, when there was communication.
std::optional<double> Trainer::write_trace(const std::vector<report::TraceEvent>& events) const {
  if (!is_main_ || events.empty()) return std::nullopt;
  report::write_chrome_trace(trace_path(), events);
  report::to_timeline(events, {.title = "Steps 1-" + std::to_string(options_.trace_steps) +
                                        ": one lane per rank (open trace.json in ui.perfetto.dev for detail)",
                               .x_label = "time (ms)"})
      .save(out_dir_ / "timeline.svg");
  const bool communicated = std::any_of(events.begin(), events.end(), [](auto& e) { return e.category == "comm"; });
  if (!communicated) return std::nullopt;
  return report::overlap_fraction(events, "comm", "backward", std::nullopt, "wait");
}

void print_summary(std::ostream& out, const RunSummary& s, const std::filesystem::path& out_dir) {
  std::ostringstream text;  // formatting flags stay local to this function
  text << std::fixed << std::setprecision(2) << "test accuracy " << 100 * s.test.accuracy << "% (test loss "
       << std::setprecision(4) << s.test.loss << ") after " << s.steps << " steps; " << std::setprecision(1)
       << s.train_time_s << " s training, " << std::setprecision(0) << s.samples_per_s << " samples/s, "
       << std::setprecision(1) << s.time_s << " s in all\n";
  if (s.comm_hidden) {
    text << std::setprecision(0) << "communication hidden behind backward: " << 100 * *s.comm_hidden
         << "% of all-reduce time (timeline: " << (out_dir / "timeline.svg").string() << ", trace: "
         << (out_dir / "trace.json").string() << ")\n";
  }
  text << "plots: " << (out_dir / "loss.svg").string() << " " << (out_dir / "accuracy.svg").string()
       << "; metrics: " << (out_dir / "metrics.jsonl").string() << "; checkpoint: "
       << (out_dir / "checkpoint.safetensors").string() << "\n";
  text << std::setprecision(4) << "summary: test_acc=" << s.test.accuracy << " test_loss=" << s.test.loss
       << std::setprecision(0) << " samples_per_s=" << s.samples_per_s << " epochs=" << s.epochs
       << std::setprecision(1) << " time_s=" << s.time_s << " train_s=" << s.train_time_s << " steps=" << s.steps
       << "\n";
  out << text.str() << std::flush;
}

}  // namespace rg::train
