// Command line of ringgrad-train. Every value is read as text and converted here, so each
// problem is reported in our words, naming the flag and the accepted values: CLI11 2.1's
// own conversion and validation messages are cryptic and its exit codes are not ours.
#include "tools/train/options.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <ostream>
#include <sstream>

#include "data/named.h"
#include "models/named.h"

namespace rg::train {

namespace {

// A flag's problem, reported as "error: <flag>: <problem>" with exit code 2.
struct FlagError {
  std::string flag, problem;
};

std::string join(const std::vector<std::string>& names) {
  std::string text;
  for (const auto& name : names) text += (text.empty() ? "" : "|") + name;
  return text;
}

template <class T>
T parse_number(const std::string& flag, const std::string& text, const char* kind) {
  T value{};
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) throw FlagError{flag, "'" + text + "' is not " + kind};
  return value;
}

int64_t parse_int(const std::string& flag, const std::string& text, int64_t min) {
  const auto value = parse_number<int64_t>(flag, text, "an integer");
  if (value < min) throw FlagError{flag, "must be at least " + std::to_string(min) + ", got " + text};
  return value;
}

double parse_double(const std::string& flag, const std::string& text) {
  return parse_number<double>(flag, text, "a number");
}

void check_member(const std::string& flag, const std::string& value, const std::vector<std::string>& accepted) {
  if (std::find(accepted.begin(), accepted.end(), value) == accepted.end()) {
    throw FlagError{flag, "unknown value '" + value + "'; accepted: " + join(accepted)};
  }
}

// The flags' text, before conversion; defaults come from TrainOptions.
struct RawFlags {
  std::string data, model, image_size, epochs, batch_size, lr, momentum, optimizer, warmup_epochs, device, dtype, threads,
      seed, out, resume, eval_every, max_steps, parallel, workers, backend, allreduce, reducer, global_batch_size,
      accumulation, lr_scaling, bucket_cap_mb, check_every, straggler, corrupt_grad, trace_steps, max_staleness;
};

RawFlags raw_defaults(const TrainOptions& d) {
  auto text = [](auto v) {
    std::ostringstream s;
    s << v;
    return s.str();
  };
  return {.data = d.data,
          .model = d.model,
          .image_size = text(d.image_size),
          .epochs = text(d.epochs),
          .batch_size = text(d.batch_size),
          .lr = text(d.lr),
          .momentum = text(d.momentum),
          .optimizer = d.optimizer,
          .warmup_epochs = text(d.warmup_epochs),
          .device = d.device,
          .dtype = d.dtype,
          .threads = "auto",
          .seed = text(d.seed),
          .out = d.out,
          .resume = d.resume,
          .eval_every = "epoch",
          .max_steps = "none",
          .parallel = d.parallel,
          .workers = "auto",
          .backend = "auto",
          .allreduce = d.allreduce,
          .reducer = d.reducer,
          .global_batch_size = "none",
          .accumulation = text(d.accumulation),
          .lr_scaling = d.lr_scaling,
          .bucket_cap_mb = text(d.bucket_cap_mb),
          .check_every = "never",
          .straggler = {},
          .corrupt_grad = {},
          .trace_steps = text(d.trace_steps),
          .max_staleness = "none"};
}

// Under mpirun every process sees its world size here, before MPI is initialised.
std::optional<int> mpirun_world_size() {
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  return size ? std::optional<int>(std::atoi(size)) : std::nullopt;
}

void add_flags(CLI::App& app, RawFlags& f) {
  auto add = [&](const char* name, std::string& value, const std::string& help, const char* type) {
    app.add_option(name, value, help)->type_name(type)->default_str(value.empty() ? "none" : value);
  };
  add("--data", f.data, "dataset: " + join(data::dataset_names()), "NAME");
  add("--model", f.model, "model, sized from the data: " + join(models::model_names()), "NAME");
  add("--image-size", f.image_size, "folder data: images are resized to SIZE x SIZE RGB", "SIZE");
  add("--epochs", f.epochs, "passes over the training set", "N");
  add("--batch-size", f.batch_size, "samples per step", "N");
  add("--lr", f.lr, "learning rate (> 0)", "LR");
  add("--momentum", f.momentum, "SGD momentum in [0, 1)", "M");
  add("--optimizer", f.optimizer, "sgd|adam", "NAME");
  add("--warmup-epochs", f.warmup_epochs, "linear learning-rate warm-up, in epochs (fractions allowed)", "E");
  add("--device", f.device, "cpu|cuda (cuda:N picks a GPU)", "DEV");
  add("--dtype", f.dtype, "float32|float64: the model's parameters and arithmetic", "TYPE");
  add("--threads", f.threads, "CPU threads (auto: cores / processes on this node)", "N");
  add("--seed", f.seed, "seed of the model init, shuffling and synthetic data", "S");
  add("--out", f.out, "folder for metrics.jsonl, config.json, checkpoint, loss.svg, accuracy.svg", "DIR");
  add("--resume", f.resume, "continue exactly where this checkpoint left off", "CKPT");
  add("--eval-every", f.eval_every, "evaluate on the test set every N steps (default: end of each epoch)", "N");
  add("--max-steps", f.max_steps, "stop after N steps in all (final evaluation and summary still run)", "N");
  add("--parallel", f.parallel,
      "none|dp (DataParallel)|ddp (DistributedDataParallel)|async-ps (parameter server)|hogwild (threads)", "MODE");
  add("--workers", f.workers, "ranks or dp devices (auto: the mpirun world size, else 2)", "N");
  add("--backend", f.backend, "local (threads of one process) | mpi (auto: mpi under mpirun)", "NAME");
  add("--allreduce", f.allreduce, "library|ring|pipelined_ring|relay|star (naive_ring: relay)", "ALGO");
  add("--reducer", f.reducer, "DDP's gradient averaging: per_parameter|flat (after backward)|bucketed (overlapped)",
      "NAME");
  add("--global-batch-size", f.global_batch_size, "samples per step over all workers (instead of --batch-size)", "N");
  add("--accumulation", f.accumulation, "micro-batches per step, accumulated without communication", "K");
  add("--lr-scaling", f.lr_scaling, "none | linear: lr x global batch / micro-batch", "RULE");
  add("--bucket-cap-mb", f.bucket_cap_mb, "DDP gradient bucket size", "MB");
  add("--check-every", f.check_every, "DDP: check the replicas are identical every N steps", "N");
  add("--straggler", f.straggler, "slow a rank down: RANK:MS[:PROB] sleeps MS ms before a step (with PROB)", "SPEC");
  add("--corrupt-grad", f.corrupt_grad, "a worker's gradient goes wrong in its step STEP (from 1): RANK:STEP[:corrupt|drop]", "SPEC");
  add("--max-staleness", f.max_staleness, "async-ps: a worker may be at most S gradients ahead (SSP; 0: synchronous)",
      "S");
  add("--trace-steps", f.trace_steps, "steps traced after the first into OUT/trace.json, OUT/timeline.svg", "N");
}

void check_device(const std::string& device) {
  if (device != "cpu" && device != "cuda" && !device.starts_with("cuda:")) {
    throw FlagError{"--device", "unknown value '" + device + "'; accepted: cpu|cuda|cuda:N"};
  }
}

void convert_world(const RawFlags& f, TrainOptions& o) {
  const std::optional<int> mpi_size = mpirun_world_size();
  o.backend = f.backend == "auto" ? (mpi_size ? "mpi" : "local") : f.backend;
  check_member("--backend", o.backend, {"local", "mpi"});
  if (o.backend == "mpi" && !mpi_size) throw FlagError{"--backend", "mpi needs the program to run under mpirun"};
  if (o.parallel == "none") {
    if (f.workers != "auto" && f.workers != "1") throw FlagError{"--workers", "needs --parallel ddp"};
    o.workers = 1;
  } else if (o.parallel == "dp") {  // one process, one thread per device
    if (f.backend == "mpi") throw FlagError{"--backend", "dp runs in one process; use ddp under mpirun"};
    o.backend = "local";
    o.workers = f.workers == "auto" ? 2 : static_cast<int>(parse_int("--workers", f.workers, 1));
  } else if (o.backend == "mpi") {
    // async-ps: rank 0 is the server, every other process a worker.
    const int server = o.parallel == "async-ps" ? 1 : 0;
    if (o.parallel == "hogwild") throw FlagError{"--backend", "hogwild runs threads of one process; use local"};
    if (*mpi_size <= server) throw FlagError{"--parallel", "async-ps needs at least 2 processes (a server and a worker)"};
    o.workers = f.workers == "auto" ? *mpi_size - server : static_cast<int>(parse_int("--workers", f.workers, 1));
    if (o.workers + server != *mpi_size) {
      throw FlagError{"--workers", "is " + f.workers + " but mpirun started " + std::to_string(*mpi_size) +
                                       " processes; with --backend mpi each process is one worker" +
                                       (server ? " (and rank 0 the server)" : "")};
    }
  } else {
    o.workers = f.workers == "auto" ? 2 : static_cast<int>(parse_int("--workers", f.workers, 1));
  }
}

// --batch-size or --global-batch-size, split over workers and micro-batches exactly.
void convert_batch(const RawFlags& f, TrainOptions& o) {
  o.accumulation = parse_int("--accumulation", f.accumulation, 1);
  if (f.global_batch_size != "none") {
    o.global_batch_size = parse_int("--global-batch-size", f.global_batch_size, 1);
    const int64_t workers = o.parallel == "none" || o.parallel == "dp" ? 1 : o.workers;
    if (o.global_batch_size % workers != 0) {
      throw FlagError{"--global-batch-size", f.global_batch_size + " does not split evenly over " +
                                                 std::to_string(workers) + " workers"};
    }
    o.batch_size = o.global_batch_size / workers;
  }
  if (o.batch_size % o.accumulation != 0) {
    throw FlagError{"--accumulation", "the per-worker batch " + std::to_string(o.batch_size) +
                                          " does not split into " + f.accumulation + " equal micro-batches"};
  }
}

// --straggler and --corrupt-grad: the library parses the specs.
void convert_injection(const RawFlags& f, TrainOptions& o) {
  auto parse = [&](const char* flag, auto parser, const std::string& spec) {
    try {
      return parser(spec, o.workers);
    } catch (const Error& e) {
      throw FlagError{flag, e.message()};
    }
  };
  if (!f.straggler.empty()) o.straggler = parse("--straggler", parallel::parse_straggler, f.straggler);
  if (!f.corrupt_grad.empty()) {
    if (o.parallel == "none") {
      throw FlagError{"--corrupt-grad", "needs several workers: --parallel dp, ddp, async-ps or hogwild"};
    }
    o.corrupt_grad = parse("--corrupt-grad", parallel::parse_gradient_fault, f.corrupt_grad);
  }
}

void convert_parallel(const RawFlags& f, TrainOptions& o) {
  o.parallel = f.parallel;
  check_member("--parallel", o.parallel, {"none", "dp", "ddp", "async-ps", "hogwild"});
  convert_world(f, o);
  o.allreduce = f.allreduce;
  check_member("--allreduce", o.allreduce, {"library", "ring", "pipelined_ring", "relay", "star", "naive_ring"});
  o.reducer = f.reducer;
  check_member("--reducer", o.reducer, {"per_parameter", "flat", "bucketed"});
  convert_batch(f, o);
  o.lr_scaling = f.lr_scaling;
  check_member("--lr-scaling", o.lr_scaling, {"none", "linear"});
  o.bucket_cap_mb = parse_double("--bucket-cap-mb", f.bucket_cap_mb);
  if (!(o.bucket_cap_mb > 0)) throw FlagError{"--bucket-cap-mb", "must be > 0, got " + f.bucket_cap_mb};
  o.check_every = f.check_every == "never" ? 0 : parse_int("--check-every", f.check_every, 1);
  o.trace_steps = parse_int("--trace-steps", f.trace_steps, 0);
  if (f.max_staleness != "none") {
    if (o.parallel != "async-ps") throw FlagError{"--max-staleness", "needs --parallel async-ps"};
    o.max_staleness = parse_int("--max-staleness", f.max_staleness, 0);
  }
  const bool asynchronous = o.parallel == "async-ps" || o.parallel == "hogwild";
  if (asynchronous && !o.resume.empty()) throw FlagError{"--resume", "is not available with " + o.parallel};
  if (asynchronous && o.warmup_epochs > 0) throw FlagError{"--warmup-epochs", "is not available with " + o.parallel};
  convert_injection(f, o);
}

TrainOptions convert(const RawFlags& f) {
  TrainOptions o;
  o.data = f.data;
  if (!data::is_dataset_name(o.data)) {
    throw FlagError{"--data", "unknown value '" + o.data + "'; accepted: " + join(data::dataset_names())};
  }
  if (o.data.starts_with("folder:")) {
    if (const std::string path = data::folder_path(o.data); path.empty() || !std::filesystem::is_directory(path)) {
      throw FlagError{"--data", "folder '" + path + "' does not exist; expected folder:PATH with PATH/train and " +
                                    "PATH/test"};
    }
  }
  o.model = f.model;
  check_member("--model", o.model, models::model_names());
  o.image_size = parse_int("--image-size", f.image_size, 4);
  o.epochs = parse_int("--epochs", f.epochs, 1);
  o.batch_size = parse_int("--batch-size", f.batch_size, 1);
  o.lr = parse_double("--lr", f.lr);
  if (!(o.lr > 0)) throw FlagError{"--lr", "must be > 0, got " + f.lr};
  o.momentum = parse_double("--momentum", f.momentum);
  if (!(o.momentum >= 0 && o.momentum < 1)) throw FlagError{"--momentum", "must be in [0, 1), got " + f.momentum};
  o.optimizer = f.optimizer;
  check_member("--optimizer", o.optimizer, {"sgd", "adam"});
  o.warmup_epochs = parse_double("--warmup-epochs", f.warmup_epochs);
  if (!(o.warmup_epochs >= 0)) throw FlagError{"--warmup-epochs", "must be >= 0, got " + f.warmup_epochs};
  o.device = f.device;
  check_device(o.device);
  o.dtype = f.dtype;
  check_member("--dtype", o.dtype, {"float32", "float64"});
  o.threads = f.threads == "auto" ? 0 : static_cast<int>(parse_int("--threads", f.threads, 1));
  o.seed = parse_number<uint64_t>("--seed", f.seed, "a non-negative integer");
  o.out = f.out;
  if (o.out.empty()) throw FlagError{"--out", "must name a folder"};
  o.resume = f.resume;
  if (!o.resume.empty() && !std::filesystem::is_regular_file(o.resume)) {
    throw FlagError{"--resume", "checkpoint '" + o.resume + "' does not exist"};
  }
  o.eval_every = f.eval_every == "epoch" ? 0 : parse_int("--eval-every", f.eval_every, 1);
  o.max_steps = f.max_steps == "none" ? 0 : parse_int("--max-steps", f.max_steps, 1);
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
  const TrainOptions defaults;
  RawFlags flags = raw_defaults(defaults);
  add_flags(app, flags);
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
