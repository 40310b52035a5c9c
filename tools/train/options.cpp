// Command line of ringgrad-train. Every value is read as text and converted here, so each
// problem is reported in our words, naming the flag and what it accepts: CLI11 2.1's own
// conversion and validation messages are cryptic and its exit codes are not ours. A number
// must be finite, and a flag that the chosen mode would ignore is refused, not dropped.
#include "tools/train/options.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <ostream>
#include <sstream>

#include "data/named.h"
#include "models/named.h"
#include "parallel/launch.h"

namespace rg::train {

namespace {

// A flag's problem, reported as "error: <flag>: <problem>" with exit code 2.
struct FlagError {
  std::string flag, problem;
};

std::string join(const std::vector<std::string>& names, const std::string& separator = "|") {
  std::string text;
  for (const auto& name : names) text += (text.empty() ? "" : separator) + name;
  return text;
}

// The command line as text: each flag's value (given, or its default) and whether it was given.
class FlagText {
 public:
  explicit FlagText(CLI::App& app) : app_(app) {}

  void add(const char* name, std::string value, const std::string& help, const char* type) {
    std::string& slot = values_[name];  // map nodes do not move: CLI11 keeps a pointer to slot
    slot = std::move(value);
    app_.add_option(name, slot, help)->type_name(type)->default_str(slot.empty() ? "none" : slot);
  }
  void add_switch(const char* name, const std::string& help) { app_.add_flag(name, help); }
  const std::string& text(const std::string& flag) const { return values_.at(flag); }
  bool given(const std::string& flag) const { return app_.count(flag) > 0; }

  template <class T>
  T parse(const std::string& flag, const char* kind) const {
    const std::string& s = text(flag);
    T value{};
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size()) throw FlagError{flag, "'" + s + "' is not " + kind};
    return value;
  }
  int64_t integer(const std::string& flag, int64_t min) const {
    const auto value = parse<int64_t>(flag, "an integer");
    if (value < min) throw FlagError{flag, "must be at least " + std::to_string(min) + ", got " + text(flag)};
    return value;
  }
  // A finite number that `ok` accepts (inf and nan never are); `rule` says which, e.g. "> 0".
  double number(const std::string& flag, bool (*ok)(double), const char* rule) const {
    const auto value = parse<double>(flag, "a number");
    if (!std::isfinite(value) || !ok(value))
      throw FlagError{flag, std::string("must be a finite number ") + rule + ", got " + text(flag)};
    return value;
  }
  std::string member(const std::string& flag, const std::vector<std::string>& accepted) const {
    const std::string& value = text(flag);
    if (std::find(accepted.begin(), accepted.end(), value) == accepted.end())
      throw FlagError{flag, "unknown value '" + value + "'; accepted: " + join(accepted)};
    return value;
  }

 private:
  CLI::App& app_;
  std::map<std::string, std::string> values_;
};

template <class T>
std::string text_of(T v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

void add_flags(FlagText& f, const TrainOptions& d) {
  f.add("--data", d.data, "dataset: " + join(data::dataset_names()), "NAME");
  f.add("--model", d.model, "model, sized from the data: " + join(models::model_names()), "NAME");
  f.add("--image-size", text_of(d.image_size), "folder data: images are resized to SIZE x SIZE RGB", "SIZE");
  f.add("--epochs", text_of(d.epochs), "passes over the training set", "N");
  f.add("--batch-size", text_of(d.batch_size), "samples per step (per worker with ddp)", "N");
  f.add("--lr", text_of(d.lr), "learning rate (> 0)", "LR");
  f.add("--momentum", text_of(d.momentum), "SGD momentum in [0, 1)", "M");
  f.add("--optimizer", d.optimizer, "sgd|adam", "NAME");
  f.add("--warmup-epochs", text_of(d.warmup_epochs), "linear learning-rate warm-up, in epochs (fractions allowed)", "E");
  f.add("--device", d.device, "cpu|cuda (under nccl: the local rank's GPU; cuda:N picks one)", "DEV");
  f.add("--dtype", d.dtype, "float32|float64: the model's parameters and arithmetic", "TYPE");
  f.add("--threads", "auto", "CPU threads (auto: cores / processes on this node)", "N");
  f.add("--seed", text_of(d.seed), "seed of the model init, shuffling and synthetic data", "S");
  f.add("--out", d.out, "folder for metrics.jsonl, config.json, checkpoint, loss.svg, accuracy.svg", "DIR");
  f.add("--resume", d.resume, "continue exactly where this checkpoint left off", "CKPT");
  f.add_switch("--resume-with-changes", "resume a checkpoint of another optimizer (fresh state) or global batch");
  f.add("--eval-every", "epoch", "evaluate on the test set every N steps (default: end of each epoch)", "N");
  f.add("--max-steps", "none", "stop after N steps in all (final evaluation and summary still run)", "N");
  f.add("--parallel", d.parallel,
        "none|dp (DataParallel)|ddp (DistributedDataParallel)|async-ps (parameter server)|hogwild (threads)", "MODE");
  f.add("--workers", "auto", "ranks or dp devices (auto: the mpirun world size, else 2)", "N");
  f.add("--backend", "auto",
        "local (threads of one process) | mpi | nccl (auto: under mpirun, nccl for ddp on cuda, else mpi)", "NAME");
  f.add("--allreduce", d.allreduce,
        "ddp: library|ring|pipelined_ring|relay|star|library_blocking (naive_ring: relay)", "ALGO");
  f.add("--reducer", d.reducer, "ddp: per_parameter|flat (after backward)|bucketed (overlapped)", "NAME");
  f.add("--global-batch-size", "none", "samples per step over all workers (instead of --batch-size)", "N");
  f.add("--accumulation", text_of(d.accumulation), "micro-batches per step, accumulated without communication", "K");
  f.add("--lr-scaling", d.lr_scaling, "none | linear: lr x global batch / micro-batch", "RULE");
  f.add("--bucket-cap-mb", text_of(d.bucket_cap_mb), "ddp: gradient bucket size (the first: 1 MB, or this if less)", "MB");
  f.add("--check-every", "never", "ddp: check the replicas are identical every N steps", "N");
  f.add("--straggler", "", "slow a rank down: RANK:MS[:PROB] sleeps MS ms before a step (with PROB)", "SPEC");
  f.add("--corrupt-grad", "", "a worker's gradient goes wrong in its step STEP (from 1): RANK:STEP[:corrupt|drop]",
        "SPEC");
  f.add("--max-staleness", "none", "async-ps: a worker may be at most S gradients ahead (SSP; 0: synchronous)", "S");
  f.add("--trace-steps", text_of(d.trace_steps), "steps traced after the first into OUT/trace.json, OUT/timeline.svg",
        "N");
}

// The modes that use a flag, where not all do: given with another mode, it is refused
// rather than silently ignored.
const std::map<std::string, std::vector<std::string>>& modes_of_flag() {
  static const std::vector<std::string> several = {"dp", "ddp", "async-ps", "hogwild"};
  static const std::map<std::string, std::vector<std::string>> modes = {
      {"--workers", several},         {"--straggler", several},   {"--corrupt-grad", several},
      {"--allreduce", {"ddp"}},       {"--reducer", {"ddp"}},     {"--bucket-cap-mb", {"ddp"}},
      {"--check-every", {"ddp"}},     {"--max-staleness", {"async-ps"}}};
  return modes;
}

void check_flags_apply(const FlagText& f, const std::string& mode) {
  for (const auto& [flag, modes] : modes_of_flag())
    if (f.given(flag) && std::find(modes.begin(), modes.end(), mode) == modes.end())
      throw FlagError{flag, "needs --parallel " + join(modes, " or ") + " (this run is --parallel " + mode + ")"};
  if (f.given("--batch-size") && f.given("--global-batch-size"))
    throw FlagError{"--global-batch-size", "give either --batch-size or --global-batch-size, not both"};
  const bool asynchronous = mode == "async-ps" || mode == "hogwild";
  if (asynchronous && !f.text("--resume").empty()) throw FlagError{"--resume", "is not available with " + mode};
  if (asynchronous && f.given("--warmup-epochs")) throw FlagError{"--warmup-epochs", "is not available with " + mode};
}

int workers_or(const FlagText& f, int automatic) {
  return f.text("--workers") == "auto" ? automatic : static_cast<int>(f.integer("--workers", 1));
}

// The backend follows the device: NCCL for DDP on GPUs (one process per GPU), MPI for CPU
// processes, local threads otherwise; an explicit --backend must fit the device and mode.
std::string backend_flag(const FlagText& f, const TrainOptions& o, bool under_mpirun) {
  const bool on_gpus = o.device != "cpu";
  const std::string backend =
      f.text("--backend") != "auto" ? f.member("--backend", {"local", "mpi", "nccl"})
      : under_mpirun                ? (on_gpus && o.parallel == "ddp" ? "nccl" : "mpi")
                                    : "local";
  if (backend != "local" && !under_mpirun)
    throw FlagError{"--backend", backend + " needs the program to run under mpirun"};
  if (backend == "nccl" && !on_gpus) throw FlagError{"--backend", "nccl moves CUDA tensors: add --device cuda"};
  if (backend == "nccl" && o.parallel != "ddp")
    throw FlagError{"--backend", "nccl runs --parallel ddp (the parameter server receives from any rank, which NCCL "
                                 "cannot)"};
  if (on_gpus && o.parallel == "ddp" && backend != "nccl")
    throw FlagError{"--backend", backend + " moves CPU tensors; DDP on GPUs runs under mpirun with the nccl backend, "
                                           "one process per GPU (mpirun -n GPUS ringgrad-train --device cuda ...)"};
  return backend;
}

void convert_world(const FlagText& f, TrainOptions& o) {
  // Under mpirun every process sees its world size here, before MPI is initialised.
  const auto mpirun = parallel::mpirun_placement();
  o.backend = backend_flag(f, o, mpirun.has_value());
  if (o.parallel == "none") {
    o.workers = 1;
  } else if (o.parallel == "dp" || o.parallel == "hogwild") {  // one process
    if (f.text("--backend") == "mpi")
      throw FlagError{"--backend", o.parallel + " runs in one process; use --parallel ddp under mpirun"};
    o.backend = "local";
    o.workers = workers_or(f, 2);
  } else if (o.backend != "local") {
    const int server = o.parallel == "async-ps" ? 1 : 0;  // async-ps: rank 0 serves, the others work
    const int processes = mpirun->world_size;
    if (processes <= server) throw FlagError{"--parallel", "async-ps needs at least 2 processes (a server and a worker)"};
    o.workers = workers_or(f, processes - server);
    if (o.workers + server != processes)
      throw FlagError{"--workers", "is " + f.text("--workers") + " but mpirun started " + std::to_string(processes) +
                                       " processes; with --backend mpi each process is one worker" +
                                       (server ? " (and rank 0 the server)" : "")};
  } else {
    o.workers = workers_or(f, 2);
  }
}

// --batch-size or --global-batch-size, split over workers and micro-batches exactly.
void convert_batch(const FlagText& f, TrainOptions& o) {
  o.batch_size = f.integer("--batch-size", 1);
  o.accumulation = f.integer("--accumulation", 1);
  if (f.given("--global-batch-size")) {
    o.global_batch_size = f.integer("--global-batch-size", 1);
    const int64_t workers = o.parallel == "none" || o.parallel == "dp" ? 1 : o.workers;
    if (o.global_batch_size % workers != 0)
      throw FlagError{"--global-batch-size", f.text("--global-batch-size") + " does not split evenly over " +
                                                 std::to_string(workers) + " workers"};
    o.batch_size = o.global_batch_size / workers;
  }
  if (o.batch_size % o.accumulation != 0)
    throw FlagError{"--accumulation", "the per-worker batch " + std::to_string(o.batch_size) +
                                          " does not split into " + f.text("--accumulation") + " equal micro-batches"};
}

// --straggler and --corrupt-grad: the library parses the specs.
void convert_injection(const FlagText& f, TrainOptions& o) {
  auto parse = [&](const char* flag, auto parser) {
    try {
      return parser(f.text(flag), o.workers);
    } catch (const Error& e) {
      throw FlagError{flag, e.message()};
    }
  };
  if (f.given("--straggler")) o.straggler = parse("--straggler", parallel::parse_straggler);
  if (f.given("--corrupt-grad")) o.corrupt_grad = parse("--corrupt-grad", parallel::parse_gradient_fault);
}

void convert_parallel(const FlagText& f, TrainOptions& o) {
  o.parallel = f.member("--parallel", {"none", "dp", "ddp", "async-ps", "hogwild"});
  check_flags_apply(f, o.parallel);
  convert_world(f, o);
  o.allreduce =
      f.member("--allreduce", {"library", "library_blocking", "ring", "pipelined_ring", "relay", "star", "naive_ring"});
  o.reducer = f.member("--reducer", {"per_parameter", "flat", "bucketed"});
  convert_batch(f, o);
  o.lr_scaling = f.member("--lr-scaling", {"none", "linear"});
  o.bucket_cap_mb = f.number("--bucket-cap-mb", [](double v) { return v > 0; }, "> 0");
  o.check_every = f.text("--check-every") == "never" ? 0 : f.integer("--check-every", 1);
  o.trace_steps = f.integer("--trace-steps", 0);
  if (f.given("--max-staleness")) o.max_staleness = f.integer("--max-staleness", 0);
  convert_injection(f, o);
}

std::string data_flag(const FlagText& f) {
  const std::string& data = f.text("--data");
  if (!data::is_dataset_name(data))
    throw FlagError{"--data", "unknown value '" + data + "'; accepted: " + join(data::dataset_names())};
  const std::string path = data::folder_path(data);
  if (data.starts_with("folder:") && (path.empty() || !std::filesystem::is_directory(path)))
    throw FlagError{"--data", "folder '" + path + "' does not exist; expected folder:PATH with PATH/train and PATH/test"};
  return data;
}

// cpu, cuda or cuda:N with N a device index.
std::string device_flag(const FlagText& f) {
  const std::string& device = f.text("--device");
  const std::string index = device.starts_with("cuda:") ? device.substr(5) : "";
  const bool numbered = !index.empty() && index.size() < 4 && std::all_of(index.begin(), index.end(), ::isdigit);
  if (device != "cpu" && device != "cuda" && !numbered)
    throw FlagError{"--device", "unknown value '" + device + "'; accepted: cpu|cuda|cuda:N (N = 0, 1, ...)"};
  return device;
}

TrainOptions convert(const FlagText& f) {
  TrainOptions o;
  o.data = data_flag(f);
  o.model = f.member("--model", models::model_names());
  o.image_size = f.integer("--image-size", 4);
  o.epochs = f.integer("--epochs", 1);
  o.lr = f.number("--lr", [](double v) { return v > 0; }, "> 0");
  o.momentum = f.number("--momentum", [](double v) { return v >= 0 && v < 1; }, "in [0, 1)");
  o.optimizer = f.member("--optimizer", {"sgd", "adam"});
  o.warmup_epochs = f.number("--warmup-epochs", [](double v) { return v >= 0; }, ">= 0");
  o.device = device_flag(f);
  o.dtype = f.member("--dtype", {"float32", "float64"});
  o.threads = f.text("--threads") == "auto" ? 0 : static_cast<int>(f.integer("--threads", 1));
  o.seed = f.parse<uint64_t>("--seed", "a non-negative integer");
  o.out = f.text("--out");
  if (o.out.empty()) throw FlagError{"--out", "must name a folder"};
  o.resume = f.text("--resume");
  if (!o.resume.empty() && !std::filesystem::is_regular_file(o.resume))
    throw FlagError{"--resume", "checkpoint '" + o.resume + "' does not exist"};
  o.resume_with_changes = f.given("--resume-with-changes");
  if (o.resume_with_changes && o.resume.empty()) throw FlagError{"--resume-with-changes", "needs --resume"};
  o.eval_every = f.text("--eval-every") == "epoch" ? 0 : f.integer("--eval-every", 1);
  o.max_steps = f.text("--max-steps") == "none" ? 0 : f.integer("--max-steps", 1);
  convert_parallel(f, o);
  return o;
}

// CLI11's parse errors, reworded: what went wrong, then where to look.
std::string describe(const CLI::ParseError& e) {
  const std::string what = e.what();
  if (dynamic_cast<const CLI::ExtrasError*>(&e)) {
    const size_t colon = what.find(": ");
    return "unknown argument(s) " + (colon == std::string::npos ? what : what.substr(colon + 2)) +
           " (see --help for the accepted flags)";
  }
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e)) return what + " (every flag takes one value; see --help)";
  return what + " (see --help)";
}

}  // namespace

std::string describe_batch_and_lr(const TrainOptions& o) {
  std::ostringstream out;
  const bool one_process = o.parallel == "none" || o.parallel == "dp";
  out << o.micro_batch() << " per micro-batch x " << (one_process ? 1 : o.workers) << " worker(s) x "
      << o.accumulation << " accumulation step(s) = global batch " << o.global_batch();
  if (o.parallel == "dp") out << ", each micro-batch split over " << o.workers << " devices";
  if (o.parallel == "async-ps") out << " per server update (it steps after every " << o.workers << " gradients)";
  if (o.parallel == "hogwild") out << " (each worker updates the shared model after its own micro-batches)";
  out << "; ";
  if (o.lr_scaling == "linear") {
    out << "lr " << o.lr_in_use() << " (linear scaling: " << o.lr << " x " << o.global_batch() << " / "
        << o.micro_batch() << ")";
  } else {
    out << "lr " << o.lr << " as given (no scaling with the global batch)";
  }
  return out.str();
}

CliOutcome parse_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app(
      "ringgrad-train: trains a model on an image dataset and reports test accuracy.\n"
      "Writes OUT/metrics.jsonl, OUT/config.json, OUT/checkpoint.safetensors, OUT/loss.svg, OUT/accuracy.svg;\n"
      "the last line printed is 'summary: test_acc=... test_loss=... samples_per_s=... epochs=... time_s=...'.",
      "ringgrad-train");
  app.get_formatter()->column_width(34);
  app.footer(
      "Examples:\n"
      "  ringgrad-train --data fashion-mnist --model mlp --epochs 3\n"
      "  ringgrad-train --data fashion-mnist --model cnn --batch-size 64 --lr 0.01 --epochs 3\n"
      "  ringgrad-train --data synthetic --max-steps 50 --out /tmp/run\n"
      "  ringgrad-train --parallel ddp --workers 2 --batch-size 64       (two ranks on threads)\n"
      "  mpirun -n 4 ringgrad-train --parallel ddp --allreduce ring       (four processes)\n"
      "Data is searched in $RINGGRAD_DATA, ~/.cache/ringgrad/data and /usr/share/datasets.");
  FlagText flags(app);
  add_flags(flags, TrainOptions{});
  try {
    app.parse(argc, argv);
    return {convert(flags), 0};
  } catch (const CLI::CallForHelp&) {
    out << app.help();
    return {std::nullopt, 0};
  } catch (const CLI::ParseError& e) {
    err << "error: " << describe(e) << "\n";
  } catch (const FlagError& e) {
    err << "error: " << e.flag << ": " << e.problem << "\n";
  }
  return {std::nullopt, 2};
}

}  // namespace rg::train
