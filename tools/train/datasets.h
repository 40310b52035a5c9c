// The datasets ringgrad-train can train on, chosen by name: fashion-mnist, mnist, cifar10,
// folder:PATH (PATH/train and PATH/test image folders) and synthetic. Both splits are read
// and validated together at start-up, so a bad test file stops the run before training.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "tools/train/models.h"

namespace rg::train {

// "fashion-mnist", "mnist", "cifar10", "folder:PATH", "synthetic".
const std::vector<std::string>& data_names();
// True for a known name or "folder:<anything>".
bool is_data_name(const std::string& name);
// PATH of "folder:PATH", or "" for the other names.
std::string folder_path(const std::string& name);

struct DataSplits {
  std::unique_ptr<data::Dataset> train;
  std::unique_ptr<data::Dataset> test;
  ImageShape shape() const;
};

struct DataRequest {
  std::string name = "fashion-mnist";
  int64_t image_size = 32;  // folder data only: images become image_size x image_size RGB
  uint64_t seed = 0;        // synthetic data only
};

// Reads both splits; throws rg::Error naming the file and the problem.
DataSplits load_data(const DataRequest& request);

}  // namespace rg::train
