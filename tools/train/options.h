// The options of ringgrad-train and their command line (CLI11). Parsing never throws and
// never exits: it returns the options, or the exit code with the message already printed
// (0 after --help, 2 for a bad flag, with one line naming the flag and what it accepts).
#pragma once
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>

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
  int threads = 0;  // 0: cores ÷ processes on this node
  uint64_t seed = 0;
  std::string out = "runs/train";
  std::string resume = {};
  int64_t eval_every = 0;  // steps; 0: at the end of each epoch
  int64_t max_steps = 0;   // 0: no limit
};

struct CliOutcome {
  std::optional<TrainOptions> options;  // set when training should run
  int exit_code = 0;
};

// Help goes to `out`, errors to `err` as "error: ...".
CliOutcome parse_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace rg::train
