// CIFAR binary reader tests: records land in CHW order with their labels; truncated,
// oversized, out-of-range and missing files are rg::Errors naming the file.
#include "helpers.h"

using namespace rg;
using Catch::Matchers::Contains;
using test::error_of;

namespace {

// Five train batches of two records each, labels (batch, 9 - batch), and a test batch.
std::string write_cifar10(const test::TempDir& dir) {
  for (int b = 1; b <= 5; ++b)
    test::write_file(dir / ("cifar10/data_batch_" + std::to_string(b) + ".bin"),
                     test::cifar_records({{static_cast<uint8_t>(b)}, {static_cast<uint8_t>(9 - b)}}));
  test::write_file(dir / "cifar10/test_batch.bin", test::cifar_records({{7}}));
  return dir.str();
}

}  // namespace

TEST_CASE("data.cifar10_reads_records_in_chw", "[data]") {
  test::TempDir dir;
  data::CIFAR10 train({.split = data::Split::Train, .root = write_cifar10(dir), .official_counts = false});
  REQUIRE(train.size() == 10);
  CHECK(train.images().shape() == Shape{10, 3, 32, 32});
  CHECK(train.labels().to_vector<int64_t>() == std::vector<int64_t>{1, 8, 2, 7, 3, 6, 4, 5, 5, 4});
  // Record 1 of a batch: pixel i = (1 + i) % 256; channel 1 (green) starts at i = 1024.
  data::Example ex = train.get(3);
  CHECK(ex.image.select(0, 1).to_vector<int>()[0] == (1 + 1024) % 256);
  CHECK(train.normalization().mean.size() == 3);
  data::CIFAR10 test({.split = data::Split::Test, .root = dir.str(), .official_counts = false});
  CHECK_THAT(error_of([&] { data::CIFAR10({.root = dir.str()}); }),
             Contains(dir / "cifar10/data_batch_1.bin: holds 2 records, the official file has 10000"));
  CHECK(test.size() == 1);
  CHECK(test.class_names()[7] == "horse");
}

TEST_CASE("data.cifar10_truncated_or_trailing_bytes", "[data]") {
  test::Bytes bytes = test::cifar_records({{1}, {2}});
  bytes.pop_back();
  CHECK_THAT(error_of([&] { data::parse_cifar(bytes, data::CifarKind::Cifar10, "b.bin"); }),
             Contains("b.bin: size 6145 is not a multiple of the 3073-byte CIFAR record"));
  bytes.push_back(0);
  bytes.push_back(0);
  CHECK_THAT(error_of([&] { data::parse_cifar(bytes, data::CifarKind::Cifar10, "b.bin"); }), Contains("trailing bytes"));
  CHECK_THAT(error_of([&] { data::parse_cifar(test::Bytes{}, data::CifarKind::Cifar10, "e.bin"); }),
             Contains("e.bin: empty file"));
}

TEST_CASE("data.cifar10_label_out_of_range", "[data]") {
  const test::Bytes bytes = test::cifar_records({{1}, {10}});
  CHECK_THAT(error_of([&] { data::parse_cifar(bytes, data::CifarKind::Cifar10, "b.bin"); }),
             Contains("b.bin: record 1 has label 10, out of range [0, 10)"));
}

TEST_CASE("data.cifar10_missing_file", "[data]") {
  test::TempDir dir;
  write_cifar10(dir);
  std::filesystem::remove(dir / "cifar10/data_batch_4.bin");
  const std::string msg = error_of([&] { data::CIFAR10({.root = dir.str()}); });
  CHECK_THAT(msg, Contains(dir / "cifar10/data_batch_4.bin"));
  CHECK_THAT(msg, Contains("scripts/download-data.sh cifar10"));
}

TEST_CASE("data.cifar100_fine_and_coarse_labels", "[data]") {
  test::TempDir dir;
  test::write_file(dir / "cifar100/train.bin", test::cifar_records({{3, 99}, {19, 0}}));
  CHECK(data::CIFAR100({.root = dir.str(), .official_counts = false}).labels().to_vector<int64_t>() ==
        std::vector<int64_t>{99, 0});
  CHECK(data::CIFAR100({.root = dir.str(), .coarse = true, .official_counts = false}).labels().to_vector<int64_t>() ==
        std::vector<int64_t>{3, 19});
  CHECK_THAT(error_of([] { data::parse_cifar(test::cifar_records({{20, 5}}), data::CifarKind::Cifar100Coarse, "c.bin"); }),
             Contains("label 20, out of range [0, 20)"));
}
