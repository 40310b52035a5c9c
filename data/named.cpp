// Data sets by name (see named.h). Every reader in data/ validates its files fully (magic,
// sizes, label ranges), so loading both splits here is the start-up check.
#include "data/named.h"

#include <filesystem>
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
  const DatasetInfo info{all.name(), all.num_classes(), all.normalization(), {}};
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
  const std::string& name = options.name;
  if (name == "fashion-mnist") {
    return {std::make_unique<FashionMNIST>(MnistOptions{.split = Split::Train}),
            std::make_unique<FashionMNIST>(MnistOptions{.split = Split::Test})};
  }
  if (name == "mnist") {
    return {std::make_unique<MNIST>(MnistOptions{.split = Split::Train}),
            std::make_unique<MNIST>(MnistOptions{.split = Split::Test})};
  }
  if (name == "cifar10") {
    return {std::make_unique<CIFAR10>(CifarOptions{.split = Split::Train}),
            std::make_unique<CIFAR10>(CifarOptions{.split = Split::Test})};
  }
  if (name == "synthetic") return load_synthetic(options.seed);
  if (name.starts_with(kFolderPrefix)) return load_folder(folder_path(name), options.image_size);
  RG_THROW("unknown dataset '", name, "'");
}

}  // namespace rg::data
