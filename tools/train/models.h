// The model zoo of ringgrad-train: mlp, cnn and resnet-small, each sized from the
// dataset's image shape (C, H, W) and class count K, so one flag works on every dataset.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nn/module.h"

namespace rg::train {

struct ImageShape {
  int64_t channels = 1;
  int64_t height = 28;
  int64_t width = 28;
  int64_t num_classes = 10;
};

// "mlp", "cnn", "resnet-small".
const std::vector<std::string>& model_names();

// Parameters are drawn from default_generator(): seed it first for a reproducible model.
// Throws rg::Error on an unknown name or an image too small for the model.
std::shared_ptr<nn::Module> make_model(const std::string& name, const ImageShape& shape);

}  // namespace rg::train
