// Data that is not what it seems: a multi-member gzip is read whole; an empty split, a test
// split whose images or classes differ from the training split's, and a partial or broken
// data set in a data root are errors at load time naming the files, never a silent fallback
// to another root or an evaluation that divides by zero; each split says where it came from.
#include <unistd.h>

#include "helpers.h"

using namespace rg;
using Catch::Matchers::Contains;
using test::error_of;

namespace {

// <root>/fashion-mnist/ with both splits: train n x h x w images, test m images of the same size
// unless `test_h` says otherwise; `skip` is left out.
void write_fashion(const std::string& root, uint32_t n, uint32_t m, uint32_t h = 4, uint32_t test_h = 4,
                   const std::string& skip = "") {
  const std::string dir = root + "/fashion-mnist/";
  auto put = [&](const std::string& file, const test::Bytes& bytes) {
    if (file != skip) test::write_file(dir + file, bytes);
  };
  put("train-images-idx3-ubyte", test::idx_images(n, h, h));
  put("train-labels-idx1-ubyte", test::idx_labels(std::vector<uint8_t>(n, 3)));
  put("t10k-images-idx3-ubyte", test::idx_images(m, test_h, test_h));
  put("t10k-labels-idx1-ubyte", test::idx_labels(std::vector<uint8_t>(m, 1)));
}

void write_folder(const test::TempDir& dir, const std::vector<std::string>& files) {
  for (const std::string& file : files) test::write_file(dir / file, test::bmp(4, 4, 10, 20, 30));
}

}  // namespace

TEST_CASE("data.gzip_multi_member_is_read_whole", "[data]") {
  const test::Bytes whole = test::idx_images(5, 7, 3);
  // Cut anywhere, every part gzipped on its own and the members concatenated: `cat a.gz b.gz`.
  for (const std::vector<size_t>& cuts : std::vector<std::vector<size_t>>{{10}, {1, 50}, {0, 16, 16, 100}, {104}}) {
    test::Bytes members;
    size_t start = 0;
    for (size_t end : cuts) {
      const test::Bytes member = test::gzip(test::Bytes(whole.begin() + start, whole.begin() + end));
      members.insert(members.end(), member.begin(), member.end());
      start = end;
    }
    const test::Bytes last = test::gzip(test::Bytes(whole.begin() + start, whole.end()));
    members.insert(members.end(), last.begin(), last.end());
    CHECK(data::maybe_gunzip(members, "m.gz") == whole);
  }
  test::TempDir dir;
  const test::Bytes labels = test::idx_labels({1, 2, 3, 4, 5});
  test::Bytes two = test::gzip(test::Bytes(labels.begin(), labels.begin() + 9));
  const test::Bytes rest = test::gzip(test::Bytes(labels.begin() + 9, labels.end()));
  two.insert(two.end(), rest.begin(), rest.end());
  test::write_file(dir / "fashion-mnist/train-labels-idx1-ubyte.gz", two);
  test::write_file(dir / "fashion-mnist/train-images-idx3-ubyte.gz", test::gzip(test::idx_images(5, 2, 2)));
  CHECK(data::FashionMNIST({.root = dir.str()}).labels().to_vector<int64_t>() == std::vector<int64_t>{1, 2, 3, 4, 5});
  // What follows the last member must be another member.
  test::Bytes garbage = test::gzip(whole);
  garbage.insert(garbage.end(), {0x1f, 0x00, 0x07});
  CHECK_THAT(error_of([&] { data::maybe_gunzip(garbage, "g.gz"); }), Contains("g.gz: 3 trailing bytes"));
  test::Bytes truncated = test::gzip(whole), second = test::gzip(whole);
  truncated.insert(truncated.end(), second.begin(), second.end() - 5);
  CHECK_THAT(error_of([&] { data::maybe_gunzip(truncated, "t.gz"); }), Contains("t.gz: corrupt gzip data"));
  test::Bytes corrupt = test::gzip(whole), bad = test::gzip(whole);
  bad[12] ^= 0xff;  // the second member's first stored-block length
  corrupt.insert(corrupt.end(), bad.begin(), bad.end());
  CHECK_THAT(error_of([&] { data::maybe_gunzip(corrupt, "c.gz"); }), Contains("c.gz: corrupt gzip data"));
  CHECK_THAT(error_of([&] { data::maybe_gunzip(corrupt, "c.gz", whole.size() + 10); }), Contains("c.gz"));
}

TEST_CASE("data.empty_split_is_an_error_naming_the_file", "[data]") {
  test::TempDir dir;
  write_fashion(dir.str(), 4, 0);
  const test::DataRootsOverride roots(dir.str());
  CHECK_THAT(error_of([] { data::load_named({.name = "fashion-mnist"}); }),
             Contains(dir / "fashion-mnist/t10k-images-idx3-ubyte") && Contains("no examples: an empty data set"));
  CHECK_THAT(error_of([] { data::SynthDataset({.size = 0}); }), Contains("no examples"));
  CHECK_THAT(error_of([] {
               data::InMemoryDataset(Tensor::zeros({0, 1, 2, 2}, DType::uint8), Tensor::zeros({0}, DType::int64),
                                     {.name = "Mine", .num_classes = 2});
             }),
             Contains("Mine: no examples"));
  test::write_file(dir / "cifar10/test_batch.bin", {});
  CHECK_THAT(
      error_of([&] { data::CIFAR10({.split = data::Split::Test, .root = dir.str(), .official_counts = false}); }),
      Contains(dir / "cifar10/test_batch.bin: empty file"));
}

TEST_CASE("data.named_splits_must_agree", "[data]") {
  SECTION("a test set of another image size, found at start-up") {
    test::TempDir dir;
    write_fashion(dir.str(), 4, 2, 28, 20);
    const test::DataRootsOverride roots(dir.str());
    CHECK_THAT(error_of([] { data::load_named({.name = "fashion-mnist"}); }),
               Contains("the test split " + (dir / "fashion-mnist/t10k-images-idx3-ubyte") + " holds 1x20x20 images") &&
                   Contains("training split " + (dir / "fashion-mnist/train-images-idx3-ubyte") + " holds 1x28x28"));
  }
  SECTION("image folders whose class names differ") {
    test::TempDir dir;
    write_folder(dir, {"train/cats/a.bmp", "train/dogs/b.bmp", "test/cats/c.bmp", "test/dots/d.bmp"});
    CHECK_THAT(error_of([&] { data::load_named({.name = "folder:" + dir.str(), .image_size = 4}); }),
               Contains("the classes of the test split " + (dir / "test")) && Contains((dir / "train")) &&
                   Contains("only in training: dogs; only in test: dots"));
  }
  SECTION("an image-folder test split that lacks a class: its labels would shift") {
    test::TempDir dir;
    write_folder(dir,
                 {"train/ants/a.bmp", "train/bees/b.bmp", "train/cats/c.bmp", "test/bees/d.bmp", "test/cats/e.bmp"});
    CHECK_THAT(error_of([&] { data::load_named({.name = "folder:" + dir.str(), .image_size = 4}); }),
               Contains("only in training: ants; only in test: (none)"));
  }
  SECTION("an image-folder test split with an extra class") {
    test::TempDir dir;
    write_folder(dir, {"train/a/1.bmp", "test/a/2.bmp", "test/b/3.bmp", "test/c/4.bmp"});
    CHECK_THAT(error_of([&] { data::load_named({.name = "folder:" + dir.str(), .image_size = 4}); }),
               Contains("only in training: (none); only in test: b, c"));
  }
  SECTION("agreeing splits load, and say where they came from") {
    test::TempDir dir;
    write_folder(dir, {"train/a/1.bmp", "train/b/2.bmp", "test/a/3.bmp", "test/b/4.bmp"});
    const data::DataSplits splits = data::load_named({.name = "folder:" + dir.str(), .image_size = 4});
    CHECK(splits.train->source() == dir / "train");
    CHECK(splits.test->source() == dir / "test");
    CHECK(data::load_named({.name = "synthetic", .seed = 5}).test->source() == "synthetic, seed 5");
  }
}

TEST_CASE("data.roots_refuse_partial_data_sets", "[data]") {
  test::TempDir first, second;
  write_fashion(second.str(), 3, 2);  // a complete copy behind the broken one
  const test::DataRootsOverride roots(first.str() + ":" + second.str());
  const std::string dir = first / "fashion-mnist";
  SECTION("no copy in the first root: the second is used, and named") {
    const data::DataSplits splits = data::load_named({.name = "fashion-mnist"});
    CHECK(splits.train->source() == second / "fashion-mnist/train-images-idx3-ubyte");
    CHECK(splits.test->source() == second / "fashion-mnist/t10k-images-idx3-ubyte");
  }
  for (const char* file : {"t10k-images-idx3-ubyte", "train-labels-idx1-ubyte"}) {
    SECTION(std::string("a copy without ") + file) {
      write_fashion(first.str(), 3, 2, 4, 4, file);
      CHECK_THAT(error_of([] { data::load_named({.name = "fashion-mnist"}); }),
                 Contains("the data set in " + dir + " is incomplete") && Contains(dir + "/" + file + "[.gz]") &&
                     Contains("the other data roots are not searched"));
    }
  }
  SECTION("an empty folder") {
    std::filesystem::create_directories(dir);
    CHECK_THAT(error_of([] { data::FashionMNIST({.split = data::Split::Train}); }), Contains(dir + " is incomplete"));
  }
  SECTION("a file that is a folder, or a dangling link") {
    write_fashion(first.str(), 3, 2, 4, 4, "train-images-idx3-ubyte");
    std::filesystem::create_directories(dir + "/train-images-idx3-ubyte");
    CHECK_THAT(error_of([] { data::load_named({.name = "fashion-mnist"}); }),
               Contains(dir + "/train-images-idx3-ubyte[.gz]") && Contains("not regular files"));
    std::filesystem::remove_all(dir + "/train-images-idx3-ubyte");
    std::filesystem::create_symlink(first / "nowhere", dir + "/train-images-idx3-ubyte.gz");
    CHECK_THAT(error_of([] { data::load_named({.name = "fashion-mnist"}); }), Contains(dir + " is incomplete"));
  }
  SECTION("a corrupt file is an error about that file, not a fallback") {
    write_fashion(first.str(), 3, 2, 4, 4);
    test::write_file(dir + "/t10k-labels-idx1-ubyte", {0, 0, 8, 1, 0, 0});
    CHECK_THAT(error_of([] { data::load_named({.name = "fashion-mnist"}); }),
               Contains(dir + "/t10k-labels-idx1-ubyte"));
  }
  SECTION("CIFAR-10 with a batch missing") {
    for (int b = 1; b <= 5; ++b)
      if (b != 3)
        test::write_file(first / ("cifar10/data_batch_" + std::to_string(b) + ".bin"), test::cifar_records({{1}}));
    for (int b = 1; b <= 5; ++b)
      test::write_file(second / ("cifar10/data_batch_" + std::to_string(b) + ".bin"), test::cifar_records({{1}}));
    CHECK_THAT(error_of([] { data::CIFAR10({.official_counts = false}); }),
               Contains(first / "cifar10/data_batch_3.bin") && Contains("incomplete"));
    std::filesystem::remove_all(first / "cifar10");
    CHECK(data::CIFAR10({.official_counts = false}).source() ==
          second / "cifar10/{data_batch_1.bin .. data_batch_5.bin}");
  }
}
