// Command line of ringgrad-train. Every value is read as text and converted here, so each
// problem is reported in our words, naming the flag and the accepted values: CLI11 2.1's
// own conversion and validation messages are cryptic and its exit codes are not ours.
#include "tools/train/options.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <filesystem>
#include <ostream>
#include <sstream>

#include "tools/train/datasets.h"
#include "tools/train/models.h"

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
  std::string data, model, image_size, epochs, batch_size, lr, momentum, optimizer, warmup_epochs, device, threads,
      seed, out, resume, eval_every, max_steps;
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
          .threads = "auto",
          .seed = text(d.seed),
          .out = d.out,
          .resume = d.resume,
          .eval_every = "epoch",
          .max_steps = "none"};
}

void add_flags(CLI::App& app, RawFlags& f) {
  auto add = [&](const char* name, std::string& value, const std::string& help, const char* type) {
    app.add_option(name, value, help)->type_name(type)->default_str(value.empty() ? "none" : value);
  };
  add("--data", f.data, "dataset: " + join(data_names()), "NAME");
  add("--model", f.model, "model, sized from the data: " + join(model_names()), "NAME");
  add("--image-size", f.image_size, "folder data: images are resized to SIZE x SIZE RGB", "SIZE");
  add("--epochs", f.epochs, "passes over the training set", "N");
  add("--batch-size", f.batch_size, "samples per step", "N");
  add("--lr", f.lr, "learning rate (> 0)", "LR");
  add("--momentum", f.momentum, "SGD momentum in [0, 1)", "M");
  add("--optimizer", f.optimizer, "sgd|adam", "NAME");
  add("--warmup-epochs", f.warmup_epochs, "linear learning-rate warm-up, in epochs (fractions allowed)", "E");
  add("--device", f.device, "cpu|cuda (cuda:N picks a GPU)", "DEV");
  add("--threads", f.threads, "CPU threads (auto: cores / processes on this node)", "N");
  add("--seed", f.seed, "seed of the model init, shuffling and synthetic data", "S");
  add("--out", f.out, "folder for metrics.jsonl, config.json, checkpoint, loss.svg, accuracy.svg", "DIR");
  add("--resume", f.resume, "continue exactly where this checkpoint left off", "CKPT");
  add("--eval-every", f.eval_every, "evaluate on the test set every N steps (default: end of each epoch)", "N");
  add("--max-steps", f.max_steps, "stop after N steps in all (final evaluation and summary still run)", "N");
}

void check_device(const std::string& device) {
  if (device != "cpu" && device != "cuda" && !device.starts_with("cuda:")) {
    throw FlagError{"--device", "unknown value '" + device + "'; accepted: cpu|cuda|cuda:N"};
  }
}

TrainOptions convert(const RawFlags& f) {
  TrainOptions o;
  o.data = f.data;
  if (!is_data_name(o.data)) {
    throw FlagError{"--data", "unknown value '" + o.data + "'; accepted: " + join(data_names())};
  }
  if (o.data.starts_with("folder:")) {
    if (const std::string path = folder_path(o.data); path.empty() || !std::filesystem::is_directory(path)) {
      throw FlagError{"--data", "folder '" + path + "' does not exist; expected folder:PATH with PATH/train and " +
                                    "PATH/test"};
    }
  }
  o.model = f.model;
  check_member("--model", o.model, model_names());
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
