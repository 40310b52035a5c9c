// Small training helpers that several chapters share: a model drawn from a chosen seed
// (safe on the rank-threads of a local world), and the steps of a long run worth a row in a
// table. (A model's test loss and accuracy: models::evaluate.)
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/data.h"
#include "nn/module.h"

namespace rg::chapters {

// models::make_model(name, shape) with its parameters drawn from `seed`. The parameters
// come from the process-wide default_generator(), so rank-threads take turns here.
std::shared_ptr<nn::Module> seeded_model(const std::string& name, const data::ImageShape& shape, uint64_t seed);

// `first`, then 1, 2, 5, 10, 20, 50, ... up to `last`, and `last`: in order, each once.
std::vector<size_t> shown_steps(size_t first, size_t last);

}  // namespace rg::chapters
