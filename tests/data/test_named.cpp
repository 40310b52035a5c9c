// Data sets by name: the names and folder:PATH, synthetic splits drawn from one seeded set,
// image folders resized to image_size, both splits read together (a bad test split fails the
// load), and each data set's ImageShape.
#include "helpers.h"

using namespace rg;
using Catch::Matchers::Contains;
using test::error_of;

TEST_CASE("data.named_dataset_names", "[data]") {
  for (const std::string& name : data::dataset_names()) CHECK(data::is_dataset_name(name));
  CHECK(data::is_dataset_name("folder:/some/where"));
  CHECK_FALSE(data::is_dataset_name("imagenet"));
  CHECK(data::folder_path("folder:/some/where") == "/some/where");
  CHECK(data::folder_path("folder:") == "");
  CHECK(data::folder_path("mnist") == "");
  CHECK_THAT(error_of([] { data::load_named({.name = "imagenet"}); }), Contains("unknown dataset 'imagenet'"));
}

TEST_CASE("data.named_synthetic_splits_one_seeded_set", "[data]") {
  const data::DataSplits a = data::load_named({.name = "synthetic", .seed = 3});
  REQUIRE(a.train->size() == 1024);
  REQUIRE(a.test->size() == 256);
  const data::ImageShape shape = a.shape();
  CHECK((shape.channels == 1 && shape.height == 8 && shape.width == 8 && shape.num_classes == 10));
  // train and test are the two parts of one generated set of 1280 images.
  const data::SynthDataset all({.size = 1280, .num_classes = 10, .channels = 1, .height = 8, .width = 8,
                                .noise = 0.25, .seed = 3});
  const auto& train = dynamic_cast<const data::InMemoryDataset&>(*a.train);
  const auto& test = dynamic_cast<const data::InMemoryDataset&>(*a.test);
  auto pixels = [](const Tensor& images) { return images.to_vector<int>(); };
  CHECK(pixels(train.images()) == pixels(all.images().narrow(0, 0, 1024)));
  CHECK(pixels(test.images()) == pixels(all.images().narrow(0, 1024, 256)));
  CHECK(test.labels().to_vector<int64_t>() == all.labels().narrow(0, 1024, 256).to_vector<int64_t>());
  const data::DataSplits b = data::load_named({.name = "synthetic", .seed = 4});
  CHECK(pixels(dynamic_cast<const data::InMemoryDataset&>(*b.train).images()) != pixels(train.images()));
}

TEST_CASE("data.named_folder_reads_train_and_test", "[data]") {
  test::TempDir dir;
  for (const char* file : {"train/cats/a.bmp", "train/dogs/b.bmp", "test/cats/c.bmp", "test/dogs/d.bmp",
                           "test/dogs/e.bmp"}) {
    test::write_file(dir / file, test::bmp(6, 9, 10, 20, 30));
  }
  const data::DataSplits splits = data::load_named({.name = "folder:" + dir.str(), .image_size = 5});
  CHECK(splits.train->size() == 2);
  CHECK(splits.test->size() == 3);
  const data::ImageShape shape = data::image_shape(*splits.test);
  CHECK((shape.channels == 3 && shape.height == 5 && shape.width == 5 && shape.num_classes == 2));
  std::filesystem::remove_all(dir / "test");
  CHECK_THAT(error_of([&] { data::load_named({.name = "folder:" + dir.str()}); }), Contains(dir / "test"));
}

TEST_CASE("data.named_reads_both_splits_before_returning", "[data]") {
  test::TempDir dir;
  test::write_file(dir / "fashion-mnist/train-images-idx3-ubyte", test::idx_images(4, 28, 28));
  test::write_file(dir / "fashion-mnist/train-labels-idx1-ubyte", test::idx_labels({0, 1, 2, 3}));
  test::write_file(dir / "fashion-mnist/t10k-labels-idx1-ubyte", test::idx_labels({5, 9}));
  test::Bytes test_images = test::idx_images(2, 28, 28);
  test_images.pop_back();
  test::write_file(dir / "fashion-mnist/t10k-images-idx3-ubyte", test_images);
  const test::DataRootsOverride roots(dir.str());
  // A good train split and a truncated test split: the load fails, naming the test file.
  CHECK_THAT(error_of([] { data::load_named({.name = "fashion-mnist"}); }),
             Contains(dir / "fashion-mnist/t10k-images-idx3-ubyte") && Contains("truncated"));
  test::write_file(dir / "fashion-mnist/t10k-images-idx3-ubyte", test::idx_images(2, 28, 28));
  const data::DataSplits splits = data::load_named({.name = "fashion-mnist"});
  CHECK(splits.train->size() == 4);
  CHECK(splits.test->size() == 2);
  CHECK(splits.train->name() == "FashionMNIST");
}
