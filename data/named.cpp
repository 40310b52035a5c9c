// Data sets by name (see named.h). Every reader in data/ validates its files fully (magic,
// sizes, label ranges, no empty split), and the two splits are checked against each other
// here, so loading both is the start-up check.
#include "data/named.h"

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <string_view>

#include "data/cifar.h"
#include "data/idx.h"
#include "data/image_folder.h"
#include "data/synthetic.h"

namespace rg::data {

namespace {

constexpr std::string_view kFolderPrefix = "folder:";
// Synthetic data: small enough that a test run takes a blink, with train and test drawn
// around the same class prototypes (one generated set, split in two).
constexpr int64_t kSynthTrain = 1024, kSynthTest = 256;

DataSplits load_synthetic(uint64_t seed) {
  SynthDataset all({.size = kSynthTrain + kSynthTest, .num_classes = 10, .channels = 1, .height = 8, .width = 8,
                    .noise = 0.25, .seed = seed});
  const DatasetInfo info{
      all.name(), all.num_classes(), all.normalization(), {}, "synthetic, seed " + std::to_string(seed)};
  auto part = [&](int64_t start, int64_t length) {
    return std::make_unique<InMemoryDataset>(all.images().narrow(0, start, length),
                                             all.labels().narrow(0, start, length), info);
  };
  return {part(0, kSynthTrain), part(kSynthTrain, kSynthTest)};
}

DataSplits load_folder(const std::string& root, int64_t image_size) {
  auto split = [&](const char* name) {
    return std::make_unique<ImageFolder>(ImageFolderOptions{
        .root = (std::filesystem::path(root) / name).string(),
        .size = {.channels = 3, .height = image_size, .width = image_size},
        .name = "ImageFolder"});
  };
  return {split("train"), split("test")};
}

// "a, b, c", or "(none)".
std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "(none)" : out;
}

// A test split evaluated against a model sized for the training split must hold the same
// kind of images and the same classes, in the same order (an image folder numbers its
// classes by name: a class missing from one split shifts every label after it).
void check_splits_agree(const std::string& name, const DataSplits& splits) {
  const Dataset &train = *splits.train, &test = *splits.test;
  const ImageShape a = image_shape(train), b = image_shape(test);
  auto where = [](const Dataset& d) { return d.source().empty() ? d.name() : d.source(); };
  RG_CHECK(a.channels == b.channels && a.height == b.height && a.width == b.width, name, ": the test split ",
           where(test), " holds ", b.channels, "x", b.height, "x", b.width, " images but the training split ",
           where(train), " holds ", a.channels, "x", a.height, "x", a.width, " images");
  std::vector<std::string> train_names = train.class_names(), test_names = test.class_names();
  if (train_names != test_names && !train_names.empty() && !test_names.empty()) {
    std::vector<std::string> only_train, only_test;
    std::sort(train_names.begin(), train_names.end());
    std::sort(test_names.begin(), test_names.end());
    std::set_difference(train_names.begin(), train_names.end(), test_names.begin(), test_names.end(),
                        std::back_inserter(only_train));
    std::set_difference(test_names.begin(), test_names.end(), train_names.begin(), train_names.end(),
                        std::back_inserter(only_test));
    RG_THROW(name, ": the classes of the test split ", where(test), " differ from the training split's ", where(train),
             ": only in training: ", joined(only_train), "; only in test: ", joined(only_test));
  }
  RG_CHECK(a.num_classes == b.num_classes, name, ": the test split ", where(test), " has ", b.num_classes,
           " classes but the training split ", where(train), " has ", a.num_classes);
}

DataSplits load_splits(const NamedDataOptions& options) {
  const std::string& name = options.name;
  if (name == "fashion-mnist") {
    return {std::make_unique<FashionMNIST>(MnistOptions{.split = Split::Train}),
            std::make_unique<FashionMNIST>(MnistOptions{.split = Split::Test})};
  }
  if (name == "mnist") {
    return {std::make_unique<MNIST>(MnistOptions{.split = Split::Train}),
            std::make_unique<MNIST>(MnistOptions{.split = Split::Test})};
  }
  if (name == "cifar10") {  // any whole number of records: a cut of CIFAR-10 trains as well
    return {std::make_unique<CIFAR10>(CifarOptions{.split = Split::Train, .official_counts = false}),
            std::make_unique<CIFAR10>(CifarOptions{.split = Split::Test, .official_counts = false})};
  }
  if (name == "synthetic") return load_synthetic(options.seed);
  if (name.starts_with(kFolderPrefix)) return load_folder(folder_path(name), options.image_size);
  RG_THROW("unknown dataset '", name, "'");
}

}  // namespace

const std::vector<std::string>& dataset_names() {
  static const std::vector<std::string> names = {"fashion-mnist", "mnist", "cifar10", "folder:PATH", "synthetic"};
  return names;
}

bool is_dataset_name(const std::string& name) {
  return name == "fashion-mnist" || name == "mnist" || name == "cifar10" || name == "synthetic" ||
         name.starts_with(kFolderPrefix);
}

std::string folder_path(const std::string& name) {
  return name.starts_with(kFolderPrefix) ? name.substr(kFolderPrefix.size()) : "";
}

DataSplits load_named(const NamedDataOptions& options) {
  DataSplits splits = load_splits(options);
  check_splits_agree(options.name, splits);
  return splits;
}

}  // namespace rg::data
