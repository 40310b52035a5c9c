// IDX reader tests: raw and gzip files round-trip, and each kind of bad file (missing,
// wrong magic, truncated, trailing bytes, count mismatch, label out of range, corrupt
// gzip) is an rg::Error that names the file and the problem.
#include "helpers.h"

using namespace rg;
using Catch::Matchers::Contains;
using test::error_of;

namespace {

// Writes <dir>/fashion-mnist/train-{images,labels} (gzip when asked) and returns the root.
std::string write_fashion(const test::TempDir& dir, const test::Bytes& images, const test::Bytes& labels,
                          bool gz = true) {
  const std::string sub = dir / "fashion-mnist";
  test::write_file(sub + "/train-images-idx3-ubyte" + (gz ? ".gz" : ""), gz ? test::gzip(images) : images);
  test::write_file(sub + "/train-labels-idx1-ubyte" + (gz ? ".gz" : ""), gz ? test::gzip(labels) : labels);
  return dir.str();
}

}  // namespace

TEST_CASE("data.idx_reads_raw_and_gzip", "[data]") {
  for (bool gz : {false, true}) {
    test::TempDir dir;
    const std::string root = write_fashion(dir, test::idx_images(3, 4, 5), test::idx_labels({9, 0, 4}), gz);
    data::FashionMNIST ds({.split = data::Split::Train, .root = root});
    REQUIRE(ds.size() == 3);
    CHECK(ds.channels() == 1);
    CHECK(ds.height() == 4);
    CHECK(ds.width() == 5);
    CHECK(ds.num_classes() == 10);
    CHECK(ds.images().shape() == Shape{3, 1, 4, 5});
    CHECK(ds.labels().to_vector<int64_t>() == std::vector<int64_t>{9, 0, 4});
    data::Example ex = ds.get(2);
    CHECK(ex.label == 4);
    CHECK(ex.image.dtype() == DType::uint8);
    CHECK(ex.image.to_vector<int>()[7] == test::idx_pixel(2, 7));
    CHECK(ds.class_names()[9] == "Ankle boot");
  }
}

TEST_CASE("data.idx_missing_file_names_path_and_remedy", "[data]") {
  test::TempDir dir;
  const std::string msg = error_of([&] { data::FashionMNIST({.split = data::Split::Test, .root = dir.str()}); });
  CHECK_THAT(msg, Contains(dir / "fashion-mnist/t10k-"));
  CHECK_THAT(msg, Contains("apt install dataset-fashion-mnist"));
  CHECK_THAT(msg, Contains("download-data.sh"));
}

TEST_CASE("data.idx_found_through_RINGGRAD_DATA", "[data]") {
  test::TempDir dir;
  write_fashion(dir, test::idx_images(2, 2, 2), test::idx_labels({1, 2}));
  const char* old = std::getenv("RINGGRAD_DATA");
  const std::string saved = old ? old : "";
  setenv("RINGGRAD_DATA", ("/nonexistent:" + dir.str()).c_str(), 1);
  CHECK(data::data_roots().at(1) == dir.str());
  CHECK(data::FashionMNIST().size() == 2);
  if (old) setenv("RINGGRAD_DATA", saved.c_str(), 1); else unsetenv("RINGGRAD_DATA");
}

TEST_CASE("data.idx_wrong_magic", "[data]") {
  test::TempDir dir;
  // A labels file where the images file belongs.
  const std::string root = write_fashion(dir, test::idx_labels({1, 2}), test::idx_labels({1, 2}));
  const std::string msg = error_of([&] { data::FashionMNIST({.root = root}); });
  CHECK_THAT(msg, Contains("train-images-idx3-ubyte.gz"));
  CHECK_THAT(msg, Contains("wrong IDX magic 0x801, expected 0x00000803"));
}

TEST_CASE("data.idx_truncated", "[data]") {
  test::TempDir dir;
  test::Bytes images = test::idx_images(3, 4, 4);
  images.resize(images.size() - 1);
  const std::string msg = error_of([&] { data::FashionMNIST({.root = write_fashion(dir, images, test::idx_labels({1, 2, 3}))}); });
  CHECK_THAT(msg, Contains("train-images-idx3-ubyte.gz: truncated: 63 bytes, the header promises 64"));
  CHECK_THAT(error_of([] { data::parse_idx_labels(test::Bytes{0, 0, 8}, "x.idx"); }), Contains("x.idx: truncated IDX header"));
}

TEST_CASE("data.idx_trailing_bytes", "[data]") {
  test::TempDir dir;
  test::Bytes labels = test::idx_labels({1, 2});
  labels.push_back(0);
  const std::string msg = error_of([&] { data::FashionMNIST({.root = write_fashion(dir, test::idx_images(2, 3, 3), labels, false)}); });
  CHECK_THAT(msg, Contains("train-labels-idx1-ubyte: 1 trailing bytes"));
}

TEST_CASE("data.idx_count_mismatch", "[data]") {
  test::TempDir dir;
  const std::string msg =
      error_of([&] { data::FashionMNIST({.root = write_fashion(dir, test::idx_images(3, 2, 2), test::idx_labels({1, 2}))}); });
  CHECK_THAT(msg, Contains("holds 3 images but"));
  CHECK_THAT(msg, Contains("holds 2 labels"));
}

TEST_CASE("data.idx_label_out_of_range", "[data]") {
  test::TempDir dir;
  const std::string msg =
      error_of([&] { data::FashionMNIST({.root = write_fashion(dir, test::idx_images(2, 2, 2), test::idx_labels({3, 10}))}); });
  CHECK_THAT(msg, Contains("train-labels-idx1-ubyte.gz: label 10 of item 1 is out of range [0, 10)"));
}

TEST_CASE("data.idx_corrupt_gzip", "[data]") {
  test::TempDir dir;
  const test::Bytes good = test::gzip(test::idx_labels({1, 2}));
  const std::string path = dir / "labels.gz";
  SECTION("bad checksum") {
    test::Bytes bad = good;
    bad[bad.size() - 6] ^= 0xff;  // a CRC byte
    test::write_file(path, bad);
    CHECK_THAT(error_of([&] { data::read_maybe_gzipped(path); }), Contains(path + ": corrupt gzip data (incorrect data check)"));
  }
  SECTION("truncated stream") {
    test::write_file(path, test::Bytes(good.begin(), good.end() - 5));
    CHECK_THAT(error_of([&] { data::read_maybe_gzipped(path); }), Contains(path + ": corrupt gzip data (truncated)"));
  }
  SECTION("bytes after the stream") {
    test::Bytes bad = good;
    bad.push_back(7);
    test::write_file(path, bad);
    CHECK_THAT(error_of([&] { data::read_maybe_gzipped(path); }), Contains(path + ": 1 trailing bytes after the gzip stream"));
  }
  SECTION("inflates past the cap") {
    CHECK_THAT(error_of([&] { data::maybe_gunzip(test::gzip(test::Bytes(5000, 0)), path, 4096); }),
               Contains("inflates to more than 4096 bytes"));
  }
}
