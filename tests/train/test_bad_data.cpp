// Bad data files stop ringgrad-train at start-up with "error: <file>: <problem>" and exit
// code 1 — the test split included, before any training — never an abort or a crash.
#include <catch2/catch.hpp>
#include <cstdint>
#include <fstream>
#include <vector>

#include "run_tool.h"

using namespace rg::train::test;

namespace {

void put_be32(std::vector<uint8_t>& bytes, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<uint8_t>(v >> shift));
}

// An IDX images file of n 28x28 images; `truncate` drops bytes off its end.
void write_images(const std::filesystem::path& path, uint32_t n, size_t truncate = 0) {
  std::vector<uint8_t> bytes;
  for (uint32_t v : {0x803u, n, 28u, 28u}) put_be32(bytes, v);
  bytes.resize(bytes.size() + size_t{n} * 28 * 28 - truncate, 128);
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

void write_labels(const std::filesystem::path& path, uint32_t n) {
  std::vector<uint8_t> bytes;
  for (uint32_t v : {0x801u, n}) put_be32(bytes, v);
  for (uint32_t i = 0; i < n; ++i) bytes.push_back(static_cast<uint8_t>(i % 10));
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

// A fashion-mnist folder of valid tiny files, except the one named `bad`, truncated.
void make_fashion_mnist(const std::filesystem::path& root, const std::string& bad) {
  const auto dir = root / "fashion-mnist";
  std::filesystem::create_directories(dir);
  write_images(dir / "train-images-idx3-ubyte", 20, bad == "train-images-idx3-ubyte" ? 100 : 0);
  write_labels(dir / "train-labels-idx1-ubyte", 20);
  write_images(dir / "t10k-images-idx3-ubyte", 10, bad == "t10k-images-idx3-ubyte" ? 100 : 0);
  write_labels(dir / "t10k-labels-idx1-ubyte", 10);
}

}  // namespace

TEST_CASE("train.bad_data_file_exits_1", "[train]") {
  for (const std::string bad : {"train-images-idx3-ubyte", "t10k-images-idx3-ubyte"}) {
    INFO(bad);
    TempDir root("bad_data");
    make_fashion_mnist(root.path, bad);
    const ToolRun run = run_train("--data fashion-mnist --max-steps 1 --out " + (root.path / "run").string(),
                                  "RINGGRAD_DATA=" + root.path.string());
    INFO(run.output);
    CHECK(run.exit_code == 1);
    const std::string expected = "error: " + (root.path / "fashion-mnist" / bad).string() + ": truncated";
    CHECK(last_line(run.output).starts_with(expected));
    CHECK_FALSE(std::filesystem::exists(root.path / "run" / "metrics.jsonl"));  // no training started
  }
}

TEST_CASE("train.valid_tiny_data_trains", "[train]") {
  TempDir root("good_data");
  make_fashion_mnist(root.path, "");
  const ToolRun run = run_train("--data fashion-mnist --batch-size 4 --epochs 1 --threads 1 --out " +
                                    (root.path / "run").string(),
                                "RINGGRAD_DATA=" + root.path.string());
  INFO(run.output);
  CHECK(run.exit_code == 0);
  CHECK(last_line(run.output).starts_with("summary: "));
}
