// End-to-end runs of ringgrad-train on synthetic data (seconds each): the summary line,
// the files of a run, valid SVG charts, bit-for-bit determinism and exact resumption.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <fstream>
#include <regex>
#include <vector>

#include "report/metrics.h"
#include "report/xml_check.h"
#include "run_tool.h"

using namespace rg;
using namespace rg::train::test;

namespace {

// The records (train steps and evaluations) written after step `after`.
std::vector<report::Record> records_after(const std::filesystem::path& metrics, int64_t after) {
  std::vector<report::Record> kept;
  for (auto& r : report::read_jsonl(metrics)) {
    if (r.at("step").as_int() > after) kept.push_back(r);
  }
  return kept;
}

}  // namespace

TEST_CASE("train.summary_line_and_run_files", "[train]") {
  TempDir dir("summary");
  const ToolRun run = run_train(quick_flags(dir.path) + " --epochs 3");
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  const std::string last = last_line(run.output);
  const std::regex format(
      R"(summary: test_acc=[01]\.[0-9]{4} test_loss=[0-9]+\.[0-9]{4} samples_per_s=[0-9]+ epochs=3 )"
      R"(time_s=[0-9]+\.[0-9]( .*)?)");
  CHECK(std::regex_match(last, format));
  std::smatch acc;
  REQUIRE(std::regex_search(last, acc, std::regex("test_acc=([0-9.]+)")));
  CHECK(std::stod(acc[1]) > 0.5);  // ten classes: chance is 0.1
  for (const char* file : {"metrics.jsonl", "config.json", "checkpoint.safetensors", "loss.svg", "accuracy.svg"}) {
    CHECK(std::filesystem::exists(dir.path / file));
  }
  const auto records = report::read_jsonl(dir.path / "metrics.jsonl");
  CHECK(records.size() == 3 * 16 + 3);  // 16 steps per epoch, one evaluation at each epoch's end
}

TEST_CASE("train.svg_charts_are_valid", "[train]") {
  TempDir dir("svg");
  REQUIRE(run_train(quick_flags(dir.path) + " --epochs 2 --eval-every 5").exit_code == 0);
  for (const char* file : {"loss.svg", "accuracy.svg"}) {
    INFO(file);
    const std::string svg = read_text(dir.path / file);
    CHECK(report::test::xml_problem(svg).empty());
    CHECK(svg.find("<svg") != std::string::npos);
    CHECK_FALSE(std::regex_search(svg, std::regex(R"(\b(nan|inf)\b)", std::regex::icase)));
  }
}

TEST_CASE("train.determinism", "[train]") {
  TempDir a("det_a"), b("det_b"), c("det_c");
  const std::string flags = " --epochs 2 --eval-every 10 --seed 7";
  REQUIRE(run_train(quick_flags(a.path) + flags).exit_code == 0);
  REQUIRE(run_train(quick_flags(b.path) + flags).exit_code == 0);
  REQUIRE(run_train(quick_flags(c.path) + " --epochs 2 --eval-every 10 --seed 8").exit_code == 0);
  const std::string metrics_a = read_text(a.path / "metrics.jsonl");
  CHECK(!metrics_a.empty());
  CHECK(metrics_a == read_text(b.path / "metrics.jsonl"));
  CHECK(metrics_a != read_text(c.path / "metrics.jsonl"));
}

TEST_CASE("train.resume_is_exact", "[train]") {
  TempDir whole("resume_whole"), parts("resume_parts");
  // 16 steps per epoch: the run stops mid-epoch (step 20) and resumes there.
  const std::string flags = " --epochs 3 --optimizer sgd --momentum 0.9";
  REQUIRE(run_train(quick_flags(whole.path) + flags + " --max-steps 40").exit_code == 0);
  REQUIRE(run_train(quick_flags(parts.path) + flags + " --max-steps 20").exit_code == 0);
  const std::string checkpoint = (parts.path / "checkpoint.safetensors").string();
  const ToolRun resumed = run_train(quick_flags(parts.path) + flags + " --max-steps 40 --resume " + checkpoint);
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  const auto expected = records_after(whole.path / "metrics.jsonl", 20);
  const auto got = records_after(parts.path / "metrics.jsonl", 20);
  CHECK(expected.size() == 20 + 2);  // steps 21..40, evaluations at 32 and 40
  CHECK(got == expected);
}

TEST_CASE("train.resume_from_another_model_exits_2", "[train]") {
  TempDir dir("resume_model");
  REQUIRE(run_train(quick_flags(dir.path) + " --max-steps 2").exit_code == 0);
  const ToolRun run = run_train("--data synthetic --model cnn --batch-size 64 --threads 1 --out " +
                                (dir.path / "cnn").string() + " --resume " +
                                (dir.path / "checkpoint.safetensors").string());
  INFO(run.output);
  CHECK(run.exit_code == 2);
  CHECK(last_line(run.output).starts_with("error: --resume: "));
  CHECK(run.output.find("mlp") != std::string::npos);
}

TEST_CASE("train.resume_from_a_corrupt_file_exits_2", "[train]") {
  TempDir dir("resume_corrupt");
  const auto bad = dir.path / "bad.safetensors";
  std::ofstream(bad) << "not a checkpoint";
  const ToolRun run = run_train(quick_flags(dir.path) + " --resume " + bad.string());
  INFO(run.output);
  CHECK(run.exit_code == 2);
  CHECK(last_line(run.output).starts_with("error: --resume: "));
}

// Resume rules: another mode or worker count with the same global batch trains on the same
// batches (a note says so); another optimizer or global batch is refused unless
// --resume-with-changes asks for it.
TEST_CASE("train.resume_across_modes_and_changes", "[train]") {
  TempDir dir("resume_changes");
  const std::string data = "--data synthetic --model mlp --threads 1 --epochs 2 ";
  const std::string ckpt = (dir.path / "ddp" / "checkpoint.safetensors").string();
  REQUIRE(run_train(data + "--parallel ddp --workers 2 --batch-size 32 --max-steps 5 --out " +
                    (dir.path / "ddp").string()).exit_code == 0);
  const ToolRun same = run_train(data + "--batch-size 64 --max-steps 8 --resume " + ckpt + " --out " +
                                 (dir.path / "none").string());
  INFO(same.output);
  CHECK(same.exit_code == 0);
  CHECK(same.output.find("resuming at step 5 (epoch 1, batch 5); written by --parallel ddp with 2 worker(s), now "
                         "none with 1: the same global batch") != std::string::npos);

  const ToolRun adam = run_train(data + "--batch-size 64 --optimizer adam --resume " + ckpt + " --out " +
                                 (dir.path / "adam").string());
  CHECK(adam.exit_code == 2);
  CHECK_THAT(last_line(adam.output), Catch::Contains("error: --resume: ") &&
                                         Catch::Contains("optimizer 'SGD', this run has 'Adam'") &&
                                         Catch::Contains("--resume-with-changes"));
  const ToolRun adam_anyway = run_train(data + "--batch-size 64 --optimizer adam --max-steps 8 --resume-with-changes "
                                        "--resume " + ckpt + " --out " + (dir.path / "adam").string());
  CHECK(adam_anyway.exit_code == 0);
  CHECK(adam_anyway.output.find("optimizer SGD -> Adam (fresh state)") != std::string::npos);

  const ToolRun bigger = run_train(data + "--batch-size 32 --resume " + ckpt + " --out " + (dir.path / "b").string());
  CHECK(bigger.exit_code == 2);
  CHECK_THAT(last_line(bigger.output), Catch::Contains("global_batch '64', this run has '32'"));
  const ToolRun mapped = run_train(data + "--batch-size 32 --max-steps 12 --resume-with-changes --resume " + ckpt +
                                   " --out " + (dir.path / "b").string());
  INFO(mapped.output);
  CHECK(mapped.exit_code == 0);  // 5 batches of 64 = 10 batches of 32
  CHECK(mapped.output.find("resuming at step 5 (epoch 1, batch 10)") != std::string::npos);
}

// Records an interrupted run wrote after its checkpoint (and a line torn by the kill) are
// dropped on resume, so metrics.jsonl has every step once.
TEST_CASE("train.resume_does_not_duplicate_metrics", "[train]") {
  TempDir dir("resume_metrics");
  REQUIRE(run_train(quick_flags(dir.path) + " --epochs 2 --max-steps 6").exit_code == 0);
  {
    std::ofstream metrics(dir.path / "metrics.jsonl", std::ios::app);
    metrics << "{\"kind\":\"train\",\"step\":7,\"loss\":1}\n{\"kind\":\"train\",\"step\":8,\"lo";
  }
  REQUIRE(run_train(quick_flags(dir.path) + " --epochs 2 --max-steps 10 --resume " +
                    (dir.path / "checkpoint.safetensors").string()).exit_code == 0);
  std::vector<int64_t> steps;
  for (const auto& r : report::read_jsonl(dir.path / "metrics.jsonl"))
    if (r.at("kind").as_string() == "train") steps.push_back(static_cast<int64_t>(r.at("step").as_number()));
  CHECK(steps == std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
}

namespace {

// A small CIFAR-10 in the official binary format: five train batches and a test batch of
// `per_file` records each (a label byte, then 3072 pixel bytes, R then G then B planes),
// the class's colour in one plane over a noisy background so a few steps can learn it.
void write_small_cifar10(const std::filesystem::path& root, int per_file) {
  const auto dir = root / "cifar10";
  std::filesystem::create_directories(dir);
  uint32_t noise = 12345;
  auto write_batch = [&](const std::string& name) {
    std::vector<char> bytes;
    for (int n = 0; n < per_file; ++n) {
      const int label = n % 10;
      bytes.push_back(static_cast<char>(label));
      for (int i = 0; i < 3072; ++i) {
        noise = noise * 1664525u + 1013904223u;  // Numerical Recipes' LCG
        const bool lit = i / 1024 == label % 3 && (i % 1024) / 32 < 8 + 2 * label;
        bytes.push_back(static_cast<char>(lit ? 230 : (noise >> 24) % 64));
      }
    }
    std::ofstream(dir / name, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  };
  for (int b = 1; b <= 5; ++b) write_batch("data_batch_" + std::to_string(b) + ".bin");
  write_batch("test_batch.bin");
}

}  // namespace

// CIFAR-10 end to end on the CPU: read from its binary batches, ResNet-small, two DDP
// workers, evaluated, with every output written.
TEST_CASE("train.cifar10_resnet_small_end_to_end", "[train]") {
  TempDir dir("cifar10");
  write_small_cifar10(dir.path / "data", 20);
  const ToolRun run = run_train("--data cifar10 --model resnet-small --parallel ddp --workers 2 --batch-size 10 "
                                "--max-steps 6 --threads 1 --out " + (dir.path / "out").string(),
                                "RINGGRAD_DATA=" + (dir.path / "data").string());
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  CHECK(run.output.find("resnet-small on CIFAR10 (100 train / 20 test images)") != std::string::npos);
  CHECK(run.output.find("cifar10/{data_batch_1.bin .. data_batch_5.bin}") != std::string::npos);
  CHECK(last_line(run.output).starts_with("summary: test_acc="));
  const auto config = nlohmann::json::parse(std::ifstream(dir.path / "out/config.json"));
  CHECK(config["dataset"] == "CIFAR10");
  CHECK(config["image"] == "3x32x32");
  CHECK(config["classes"] == 10);
  for (const char* file : {"metrics.jsonl", "checkpoint.safetensors", "loss.svg", "report.html"})
    CHECK(std::filesystem::exists(dir.path / "out" / file));
}
