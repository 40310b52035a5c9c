// The training loop. Determinism: the model comes from the seeded default generator, the
// order of epoch e from (seed, e), and nothing else draws random numbers, so a checkpoint
// holding (model, optimizer, generators, epoch, batch position) resumes bit for bit: the
// resumed run replays epoch e's order and skips the batches already trained.
#include "tools/train/trainer.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "autograd/functions.h"
#include "data/sampler.h"
#include "nn/checkpoint.h"
#include "report/progress.h"
#include "report/table.h"
#include "report/training_charts.h"
#include "report/training_report.h"
#include "tensor/blas.h"
#include "tensor/thread_pool.h"

namespace rg::train {

namespace {

constexpr int64_t kEvalBatch = 1000;  // evaluation only: bigger batches, same result
constexpr double kWarmupStartFactor = 0.1;

// "1x28x28": one sample's channels x height x width, for config.json and the flow picture.
std::string sample_shape_text(const data::ImageShape& s) {
  return std::to_string(s.channels) + "x" + std::to_string(s.height) + "x" + std::to_string(s.width);
}

// What a checkpoint records of its run, for resuming (besides the optimizer's name, which
// save_checkpoint records itself): the model and data must match; another optimizer or
// global batch needs --resume-with-changes; another mode or worker count with the same
// global batch trains on the same batches, so it only gets a note.
std::map<std::string, std::string> run_facts(const TrainOptions& o, const optim::Optimizer& optimizer) {
  return {{"model", o.model},
          {"data", o.data},
          {"optimizer", optimizer.name()},
          {"global_batch", std::to_string(o.global_batch())},
          {"parallel", o.parallel},
          {"workers", std::to_string(o.workers)}};
}

std::string fact(const nn::SafetensorsFile& file, const std::string& key) {
  const auto found = file.metadata.find(key);
  return found == file.metadata.end() ? "(none)" : found->second;
}

}  // namespace

Trainer::Trainer(TrainOptions options, std::shared_ptr<nn::Module> model, const DataSplits& data, Role role)
    : options_(std::move(options)),
      model_(std::move(model)),
      data_(data),
      role_(role),
      is_main_(role.rank == 0),
      device_(Device::parse(options_.device)),
      out_dir_(options_.out),
      optimizer_(make_optimizer(options_, model_->parameters())),
      trace_(std::make_unique<report::TraceRecorder>(role.rank)),
      trace_observer_(trace_.get()) {
  if (auto plan = options_.straggler; plan && plan->rank == role.rank) straggler_.emplace(*plan, options_.seed);
}

Trainer::~Trainer() = default;

void Trainer::set_trace_epoch(report::TraceRecorder::Clock::time_point epoch) {
  trace_ = std::make_unique<report::TraceRecorder>(role_.rank, epoch);
  trace_observer_ = parallel::TraceObserver(trace_.get());
}

std::unique_ptr<optim::Optimizer> make_optimizer(const TrainOptions& options, const std::vector<Variable>& parameters) {
  const double lr = options.lr_in_use();
  if (options.optimizer == "adam") return std::make_unique<optim::Adam>(parameters, optim::AdamOptions{.lr = lr});
  return std::make_unique<optim::SGD>(parameters, optim::SGDOptions{.lr = lr, .momentum = options.momentum});
}

// The whole run: start (or resume), epochs, a last evaluation, the charts and the trace.
RunSummary Trainer::run() {
  const auto run_start = std::chrono::steady_clock::now();
  prepare();
  if (!options_.resume.empty()) restore(options_.resume);
  if (is_main_) {
    std::filesystem::create_directories(out_dir_);
    write_config();
    // What the interrupted run logged after its checkpoint, this run logs again.
    if (!options_.resume.empty()) report::drop_records_after(metrics_path(), static_cast<double>(step_));
    metrics_ = std::make_unique<report::MetricsWriter>(metrics_path(),
                                                       report::MetricsOptions{.append = !options_.resume.empty()});
  }
  int64_t epoch = start_epoch_;
  for (int64_t skip = start_position_; epoch < options_.epochs && !out_of_steps(); ++epoch, skip = 0) {
    if (!run_epoch(epoch, skip)) {
      ++epoch;
      break;
    }
  }
  if (last_eval_step_ != step_ && evaluates()) evaluate_and_record();
  if (is_main_) report::write_training_charts(metrics_path(), out_dir_);
  if (tracing_) {  // the run ended inside the traced steps
    tracing_ = false;
    trace_communication(nullptr);
  }
  RunSummary s;
  const std::vector<report::TraceEvent> events =
      options_.trace_steps > 0 ? gather_trace() : std::vector<report::TraceEvent>{};
  s.comm_hidden = write_trace(events);
  const std::optional<report::FlowPicture> flow = flow_picture(events);
  if (flow && is_main_) flow->save(out_dir_ / "flow.svg");
  s.flow_picture = flow && is_main_;
  const std::vector<parallel::CommStats> traffic = traffic_by_rank();
  s.test = last_eval_;
  s.train_time_s = train_clock_.seconds();
  s.samples_per_s = s.train_time_s > 0 ? static_cast<double>(samples_) / s.train_time_s : 0;
  s.time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
  s.epochs = epoch;
  s.steps = step_;
  if (is_main_) write_report(s, events, traffic, flow);
  return s;
}

void Trainer::prepare() {
  sampler_ = std::make_unique<data::DistributedSampler>(
      data_.train->size(), data::DistributedSamplerOptions{.num_replicas = role_.world_size, .rank = role_.rank,
                                                           .shuffle = true, .seed = options_.seed});
  train_loader_ = std::make_unique<data::DataLoader>(
      *data_.train, data::DataLoaderOptions{.batch_size = options_.batch_size, .sampler = sampler_.get()});
  test_sampler_ = make_test_sampler(data_.test->size());
  test_loader_ = std::make_unique<data::DataLoader>(
      *data_.test, data::DataLoaderOptions{.batch_size = kEvalBatch, .sampler = test_sampler_.get()});
  steps_per_epoch_ = train_loader_->size();
  const auto warmup_steps = static_cast<int64_t>(std::llround(options_.warmup_epochs * steps_per_epoch_));
  schedule_ = std::make_unique<optim::ConstantLR>(options_.lr_in_use());
  if (warmup_steps > 0)
    schedule_ = std::make_unique<optim::LinearWarmup>(std::move(schedule_), warmup_steps, kWarmupStartFactor);
}

// One epoch of chapter 01's loop: take a batch, then step() (forward, loss, backward,
// update); after each step the bookkeeping: metrics, the progress bar, evaluation.
bool Trainer::run_epoch(int64_t epoch, int64_t skip_batches) {
  sampler_->set_epoch(epoch);
  start_epoch(steps_per_epoch_ - skip_batches);
  const int64_t remaining = options_.max_steps > 0 ? options_.max_steps - step_ : steps_per_epoch_;
  report::ProgressBar bar({.total = std::min(steps_per_epoch_ - skip_batches, remaining),
                           .label = "epoch " + std::to_string(epoch + 1) + "/" + std::to_string(options_.epochs),
                           .enabled = is_main_});
  report::Stopwatch epoch_clock;
  int64_t batch_index = 0, epoch_samples = 0;
  double loss_sum = 0;
  train_clock_.start();
  epoch_clock.start();
  int64_t loading_since_us = trace_->now_us();
  for (auto it = train_loader_->begin(); it != train_loader_->end(); ++it, ++batch_index) {
    if (batch_index < skip_batches) continue;
    update_tracing();
    if (tracing_) trace_->record("load batch", "data", loading_since_us, trace_->now_us() - loading_since_us);
    const StepResult r = step(*it);
    ++step_;
    train_clock_.stop();
    epoch_clock.stop();
    samples_ += r.samples;
    epoch_samples += r.samples;
    loss_sum += r.loss;
    record_step(r, epoch);
    const int64_t done = batch_index + 1 - skip_batches;
    bar.update(done, {{"loss", loss_sum / static_cast<double>(done)},
                      {"samples/s", static_cast<double>(epoch_samples) / epoch_clock.seconds()}});
    if (options_.eval_every > 0 && step_ % options_.eval_every == 0 && evaluates())
      bar.update(done, {{"test_acc", evaluate_and_record().accuracy()}});
    if (out_of_steps()) {
      bar.finish();
      save_checkpoint(epoch, batch_index + 1);
      return false;
    }
    train_clock_.start();
    epoch_clock.start();
    loading_since_us = trace_->now_us();
  }
  train_clock_.stop();
  update_tracing();
  bar.finish();
  if (options_.eval_every == 0 && evaluates()) evaluate_and_record();
  if (is_main_) {
    std::cout << "epoch " << epoch + 1 << "/" << options_.epochs << ": train_loss=" << std::setprecision(4)
              << loss_sum / static_cast<double>(std::max<int64_t>(1, batch_index - skip_batches))
              << " test_loss=" << last_eval_.loss() << " test_acc=" << last_eval_.accuracy() << std::endl;
  }
  save_checkpoint(epoch + 1, 0);
  return true;
}

StepResult Trainer::step(const data::Batch& batch) {
  using report::TraceRecorder;
  if (straggler_) straggler_->maybe_sleep(trace_observer());
  optimizer_->set_lr(schedule_->lr_at(step_));
  const Tensor x = models::as_model_input(batch.x, *model_, device_);
  const Tensor y = batch.y.device() == device_ ? batch.y : batch.y.to(device_);
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
    result.correct += models::count_correct(logits.data(), yk);
    start += n;
  }
  TraceRecorder::Scope traced(trace(), "optimizer step", "optimizer");
  apply_update();
  return result;
}

void Trainer::restore(const std::string& path) {
  nn::SafetensorsFile file;
  try {
    file = nn::read_safetensors(path);
  } catch (const Error& e) {
    throw ResumeError(e.message());
  }
  const auto mine = run_facts(options_, *optimizer_);
  auto written_with = [&](const std::string& key) {
    return "checkpoint " + path + " was written with " + key + " '" + fact(file, key) + "', this run has '" +
           mine.at(key) + "'";
  };
  for (const char* key : {"model", "data"})
    if (fact(file, key) != mine.at(key)) throw ResumeError(written_with(key));
  const bool new_optimizer = fact(file, "optimizer") != mine.at("optimizer");
  const bool new_batch = fact(file, "global_batch") != mine.at("global_batch");
  if ((new_optimizer || new_batch) && !options_.resume_with_changes)
    throw ResumeError(written_with(new_optimizer ? "optimizer" : "global_batch") +
                      (new_optimizer ? ": its optimizer state does not carry over"
                                     : ": its position in the epoch counts batches of another size") +
                      "; pass --resume-with-changes to resume anyway");
  nn::Checkpoint info{.generators = {{"default", &default_generator()}}};
  try {
    nn::load_checkpoint(path, *model_, new_optimizer ? nullptr : optimizer_.get(), info);
  } catch (const Error& e) {
    throw ResumeError("checkpoint " + path + " does not fit this model: " + e.message());
  }
  step_ = info.step;
  start_epoch_ = info.sampler_epoch;
  start_position_ = info.sampler_position;
  if (new_batch) {  // the same samples done, counted in this run's batches
    start_position_ = start_position_ * std::stoll(fact(file, "global_batch")) / options_.global_batch();
  }
  if (start_position_ > steps_per_epoch_)
    throw ResumeError(detail::concat("checkpoint ", path, " is at batch ", start_position_, " of its epoch, but an ",
                                     "epoch of this run has ", steps_per_epoch_, " batches"));
  if (start_position_ == steps_per_epoch_) {  // saved at the very end of an epoch
    ++start_epoch_;
    start_position_ = 0;
  }
  if (is_main_) describe_resume(file, new_optimizer, new_batch);
}

// One line for what changed since the checkpoint and how the run goes on.
void Trainer::describe_resume(const nn::SafetensorsFile& file, bool new_optimizer, bool new_batch) const {
  const auto mine = run_facts(options_, *optimizer_);
  std::ostringstream out;
  out << "resuming at step " << step_ << " (epoch " << start_epoch_ + 1 << ", batch " << start_position_ << ")";
  if (fact(file, "parallel") != mine.at("parallel") || fact(file, "workers") != mine.at("workers"))
    out << "; written by --parallel " << fact(file, "parallel") << " with " << fact(file, "workers")
        << " worker(s), now " << mine.at("parallel") << " with " << mine.at("workers")
        << (new_batch ? "" : ": the same global batch, so the same batches");
  if (new_optimizer) out << "; optimizer " << fact(file, "optimizer") << " -> " << mine.at("optimizer") << " (fresh state)";
  if (new_batch)
    out << "; global batch " << fact(file, "global_batch") << " -> " << mine.at("global_batch")
        << " (the position in the epoch mapped by samples)";
  std::cout << out.str() << std::endl;
}

void Trainer::save_checkpoint(int64_t epoch, int64_t position) const {
  if (!is_main_) return;
  nn::Checkpoint info{.step = step_, .epoch = epoch, .sampler_epoch = epoch, .sampler_position = position,
                      .generators = {{"default", &default_generator()}}, .extra = run_facts(options_, *optimizer_)};
  info.extra.erase("optimizer");  // save_checkpoint writes it
  nn::save_checkpoint(checkpoint_path().string(), *model_, optimizer_.get(), info);
}

report::Fields Trainer::config_fields() const {
  const auto& o = options_;
  return {{"data", o.data}, {"dataset", data_.train->name()}, {"train_size", data_.train->size()},
          {"test_size", data_.test->size()},
          {"image", sample_shape_text(data_.shape())}, {"classes", data_.shape().num_classes}, {"model", o.model},
          {"parameters", model_->parameter_count()}, {"epochs", o.epochs},
          {"batch_size", o.batch_size}, {"steps_per_epoch", steps_per_epoch_}, {"optimizer", o.optimizer},
          {"lr", o.lr}, {"momentum", o.momentum}, {"warmup_epochs", o.warmup_epochs}, {"device", o.device},
          {"dtype", o.dtype}, {"threads", get_num_threads()}, {"blas_kernels", blas_info().kernels},
          {"sgemm", sgemm_kernel_name(sgemm_kernel())},
          {"seed", static_cast<int64_t>(o.seed)}, {"eval_every", o.eval_every}, {"max_steps", o.max_steps},
          {"resume", o.resume}, {"parallel", o.parallel}, {"workers", o.workers}, {"backend", o.backend},
          {"allreduce", o.allreduce}, {"reducer", o.reducer}};
}

void Trainer::write_config() const { report::write_json_file(out_dir_ / "config.json", config_fields()); }

void Trainer::record_step(const StepResult& r, int64_t epoch) {
  if (!metrics_) return;
  metrics_->write("train", {{"step", step_},
                            {"epoch", epoch + 1},
                            {"epoch_progress", static_cast<double>(step_) / static_cast<double>(steps_per_epoch_)},
                            {"loss", r.loss},
                            {"acc", static_cast<double>(r.correct) / static_cast<double>(r.samples)},
                            {"lr", optimizer_->lr()}});
}

models::Evaluation Trainer::evaluate_and_record() {
  last_eval_ = combine(models::evaluate(*model_, *test_loader_, device_));
  last_eval_step_ = step_;
  if (metrics_) {
    metrics_->write("eval", {{"step", step_},
                             {"epoch_progress", static_cast<double>(step_) / static_cast<double>(steps_per_epoch_)},
                             {"test_loss", last_eval_.loss()},
                             {"test_acc", last_eval_.accuracy()}});
  }
  return last_eval_;
}

void Trainer::update_tracing() {
  const bool on = options_.trace_steps > 0 && step_ >= 1 && step_ <= options_.trace_steps;
  if (on == tracing_) return;
  tracing_ = on;
  trace_communication(trace_observer());
}

// OUT/trace.json and OUT/timeline.svg; returns the fraction of communication hidden
// behind backward, when there was communication.
std::optional<double> Trainer::write_trace(const std::vector<report::TraceEvent>& events) const {
  if (!is_main_ || events.empty()) return std::nullopt;
  report::write_chrome_trace(out_dir_ / "trace.json", events);
  report::to_timeline(events, {.title = "Steps 1-" + std::to_string(options_.trace_steps) +
                                        ": one lane per rank (open trace.json in ui.perfetto.dev for detail)",
                               .x_label = "time (ms)"})
      .save(out_dir_ / "timeline.svg");
  const bool communicated = std::any_of(events.begin(), events.end(), [](auto& e) { return e.category == "comm"; });
  if (!communicated) return std::nullopt;
  return report::overlap_fraction(events, "comm", "backward", std::nullopt, "wait");
}

std::optional<report::FlowPicture> Trainer::flow_picture(const std::vector<report::TraceEvent>& events) const {
  const auto steps = std::count_if(events.begin(), events.end(),
                                   [](auto& e) { return e.rank == 0 && e.category == "optimizer"; });
  if (options_.parallel != "ddp" || steps == 0) return std::nullopt;
  return report::FlowPicture(
      {.title = "One step of steps 1-" + std::to_string(steps) + " (means), as the lecture draws it",
       .global_batch = options_.global_batch(),
       .sample_shape = sample_shape_text(data_.shape()),
       .parameters = model_->parameter_count(),
       .all_reduce = options_.allreduce + " all-reduce",
       .update_note = "the same averaged gradient on every rank: the same update" +
                      (options_.check_every > 0
                           ? "; replicas checked identical every " + std::to_string(options_.check_every) + " steps"
                           : std::string()),
       .ranks = report::flow_ranks(events, steps, std::vector<int64_t>(role_.world_size, options_.worker_batch()))});
}

// OUT/report.html: the configuration, the batch arithmetic, the curves, the result and,
// for a traced parallel run, the per-rank timeline, traffic and overlap, on one page.
void Trainer::write_report(const RunSummary& s, const std::vector<report::TraceEvent>& events,
                           const std::vector<parallel::CommStats>& traffic,
                           const std::optional<report::FlowPicture>& flow) const {
  std::ostringstream result;
  result << std::fixed << std::setprecision(2) << 100 * s.test.accuracy() << "% (test loss " << std::setprecision(4)
         << s.test.loss() << ")";
  std::vector<report::RankTraffic> bytes;
  for (const parallel::CommStats& rank : traffic) bytes.push_back({rank.bytes_sent, rank.bytes_received});
  report::write_training_report(
      out_dir_ / "report.html",
      {.title = "ringgrad-train: " + options_.model + " on " + data_.train->name(),
       .result = {{"test accuracy", result.str()},
                  {"steps", s.steps},
                  {"epochs", s.epochs},
                  {"samples/s (training)", static_cast<int64_t>(s.samples_per_s)},
                  {"time", report::Table::number(s.time_s, 1) + " s"}},
       .batch_arithmetic = describe_batch_and_lr(options_),
       .metrics = metrics_path(),
       .flow = flow,
       .events = events,
       .traced_steps = "1-" + std::to_string(options_.trace_steps),
       .comm_hidden = s.comm_hidden,
       .traffic = bytes,
       .config = config_fields()});
}

void print_summary(std::ostream& out, const RunSummary& s, const std::filesystem::path& out_dir) {
  std::ostringstream text;  // formatting flags stay local to this function
  text << std::fixed << std::setprecision(2) << "test accuracy " << 100 * s.test.accuracy() << "% (test loss "
       << std::setprecision(4) << s.test.loss() << ") after " << s.steps << " steps; " << std::setprecision(1)
       << s.train_time_s << " s training, " << std::setprecision(0) << s.samples_per_s << " samples/s, "
       << std::setprecision(1) << s.time_s << " s in all\n";
  if (s.comm_hidden) {
    text << std::setprecision(0) << "communication hidden behind backward: " << 100 * *s.comm_hidden
         << "% of all-reduce time (timeline: " << (out_dir / "timeline.svg").string() << ", trace: "
         << (out_dir / "trace.json").string() << ")\n";
  }
  text << "report: " << (out_dir / "report.html").string() << "; plots: " << (out_dir / "loss.svg").string() << " "
       << (out_dir / "accuracy.svg").string();
  if (s.flow_picture) text << "; flow: " << (out_dir / "flow.svg").string();
  text << "; metrics: " << (out_dir / "metrics.jsonl").string() << "; checkpoint: "
       << (out_dir / "checkpoint.safetensors").string() << "\n";
  text << std::setprecision(4) << "summary: test_acc=" << s.test.accuracy() << " test_loss=" << s.test.loss()
       << std::setprecision(0) << " samples_per_s=" << s.samples_per_s << " epochs=" << s.epochs
       << std::setprecision(1) << " time_s=" << s.time_s << " train_s=" << s.train_time_s << " steps=" << s.steps
       << "\n";
  out << text.str() << std::flush;
}

}  // namespace rg::train
