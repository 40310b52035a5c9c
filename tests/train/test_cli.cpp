// The command line of ringgrad-train: --help, and every bad flag answered by one line
// naming the flag, exit code 2 and no stack trace or abort.
#include <catch2/catch.hpp>
#include <sstream>

#include "run_tool.h"
#include "tools/train/options.h"

using namespace rg::train;
using namespace rg::train::test;

TEST_CASE("train.help_exits_zero", "[train]") {
  const ToolRun run = run_train("--help");
  CHECK(run.exit_code == 0);
  for (const char* flag : {"--data", "--model", "--epochs", "--batch-size", "--lr", "--resume", "--max-steps"}) {
    CHECK(run.output.find(flag) != std::string::npos);
  }
}

TEST_CASE("train.bad_flags_exit_2_naming_the_flag", "[train]") {
  const std::pair<std::string, std::string> cases[] = {
      {"--model transformer", "--model"},
      {"--data imagenet", "--data"},
      {"--data folder:/nonexistent/ringgrad", "--data"},
      {"--batch-size 0", "--batch-size"},
      {"--lr 0", "--lr"},
      {"--lr -0.1", "--lr"},
      {"--epochs ten", "--epochs"},
      {"--optimizer rmsprop", "--optimizer"},
      {"--resume /nonexistent/ckpt.safetensors", "--resume"},
      {"--no-such-flag", "--no-such-flag"},
      // Non-finite numbers are bad values wherever a finite one is meant.
      {"--lr inf", "--lr"},
      {"--lr nan", "--lr"},
      {"--momentum -inf", "--momentum"},
      {"--warmup-epochs inf", "--warmup-epochs"},
      {"--device cuda:-1", "--device"},
      {"--device cuda:x", "--device"},
  };
  for (const auto& [args, flag] : cases) {
    INFO(args);
    const ToolRun run = run_with_bad_flag(args);
    INFO(run.output);
    CHECK(run.output.find(flag) != std::string::npos);
  }
}

TEST_CASE("train.cli_converts_flags", "[train]") {
  const char* argv[] = {"ringgrad-train", "--model", "cnn", "--lr", "0.01", "--batch-size", "64", "--max-steps", "5"};
  std::ostringstream out, err;
  const CliOutcome cli = parse_cli(9, argv, out, err);
  REQUIRE(cli.options);
  CHECK(cli.options->model == "cnn");
  CHECK(cli.options->lr == 0.01);
  CHECK(cli.options->batch_size == 64);
  CHECK(cli.options->max_steps == 5);
  CHECK(cli.options->eval_every == 0);
  CHECK(err.str().empty());
}
