// The models by name, as a program's --model flag names them: "mlp", "cnn" and
// "resnet-small", each sized from the dataset's image shape (C, H, W) and class count K, so
// one name works on every dataset.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "nn/module.h"

namespace rg::models {

// "mlp", "cnn", "resnet-small".
const std::vector<std::string>& model_names();

// Parameters are drawn from default_generator(): seed it first for a reproducible model.
// Throws rg::Error on an unknown name or an image too small for the model.
std::shared_ptr<nn::Module> make_model(const std::string& name, const data::ImageShape& shape);

}  // namespace rg::models
