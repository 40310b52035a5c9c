// Data sets by name, as a program's --data flag names them: fashion-mnist, mnist, cifar10,
// folder:PATH (PATH/train and PATH/test image folders) and synthetic. Both splits are read
// and validated together, so a bad test file stops a run before it trains.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace rg::data {

// "fashion-mnist", "mnist", "cifar10", "folder:PATH", "synthetic".
const std::vector<std::string>& dataset_names();
// True for a known name or "folder:<anything>".
bool is_dataset_name(const std::string& name);
// PATH of "folder:PATH", or "" for the other names.
std::string folder_path(const std::string& name);

struct DataSplits {
  std::unique_ptr<Dataset> train;
  std::unique_ptr<Dataset> test;
  ImageShape shape() const { return image_shape(*train); }
};

struct NamedDataOptions {
  std::string name = "fashion-mnist";
  int64_t image_size = 32;  // folder data only: images become image_size x image_size RGB
  uint64_t seed = 0;        // synthetic data only
};

// Reads both splits (MNIST, Fashion-MNIST and CIFAR-10 from the usual data roots, see
// data/io.h) and checks they agree: the same image size and channels, the same classes
// (by name, where the data names them). Throws rg::Error naming the files and the problem,
// or the unknown name. Each split's source() says which files or folder it came from.
DataSplits load_named(const NamedDataOptions& options);

}  // namespace rg::data
