// Dataset selection for ringgrad-train. Every reader in data/ validates its files fully
// (magic, sizes, label ranges), so loading both splits here is the start-up check.
#include "tools/train/datasets.h"

#include <filesystem>
#include <string_view>

#include "data/cifar.h"
#include "data/idx.h"
#include "data/image_folder.h"
#include "data/synthetic.h"

namespace rg::train {

namespace {

constexpr std::string_view kFolderPrefix = "folder:";
// Synthetic data: small enough that a test run takes a blink, with train and test drawn
// around the same class prototypes (one generated set, split in two).
constexpr int64_t kSynthTrain = 1024, kSynthTest = 256;

DataSplits load_synthetic(uint64_t seed) {
  data::SynthDataset all({.size = kSynthTrain + kSynthTest, .num_classes = 10, .channels = 1, .height = 8,
                          .width = 8, .noise = 0.25, .seed = seed});
  const data::DatasetInfo info{all.name(), all.num_classes(), all.normalization(), {}};
  auto part = [&](int64_t start, int64_t length) {
    return std::make_unique<data::InMemoryDataset>(all.images().narrow(0, start, length),
                                                   all.labels().narrow(0, start, length), info);
  };
  return {part(0, kSynthTrain), part(kSynthTrain, kSynthTest)};
}

DataSplits load_folder(const std::string& root, int64_t image_size) {
  auto split = [&](const char* name) {
    return std::make_unique<data::ImageFolder>(data::ImageFolderOptions{
        .root = (std::filesystem::path(root) / name).string(),
        .size = {.channels = 3, .height = image_size, .width = image_size},
        .name = "ImageFolder"});
  };
  return {split("train"), split("test")};
}

}  // namespace

const std::vector<std::string>& data_names() {
  static const std::vector<std::string> names = {"fashion-mnist", "mnist", "cifar10", "folder:PATH", "synthetic"};
  return names;
}

bool is_data_name(const std::string& name) {
  return name == "fashion-mnist" || name == "mnist" || name == "cifar10" || name == "synthetic" ||
         name.starts_with(kFolderPrefix);
}

std::string folder_path(const std::string& name) {
  return name.starts_with(kFolderPrefix) ? name.substr(kFolderPrefix.size()) : "";
}

ImageShape DataSplits::shape() const {
  return {train->channels(), train->height(), train->width(), train->num_classes()};
}

DataSplits load_data(const DataRequest& request) {
  using data::Split;
  const std::string& name = request.name;
  if (name == "fashion-mnist") {
    return {std::make_unique<data::FashionMNIST>(data::MnistOptions{.split = Split::Train}),
            std::make_unique<data::FashionMNIST>(data::MnistOptions{.split = Split::Test})};
  }
  if (name == "mnist") {
    return {std::make_unique<data::MNIST>(data::MnistOptions{.split = Split::Train}),
            std::make_unique<data::MNIST>(data::MnistOptions{.split = Split::Test})};
  }
  if (name == "cifar10") {
    return {std::make_unique<data::CIFAR10>(data::CifarOptions{.split = Split::Train}),
            std::make_unique<data::CIFAR10>(data::CifarOptions{.split = Split::Test})};
  }
  if (name == "synthetic") return load_synthetic(request.seed);
  if (name.starts_with(kFolderPrefix)) return load_folder(folder_path(name), request.image_size);
  RG_THROW("unknown dataset '", name, "'");
}

}  // namespace rg::train
