// Small training helpers that several chapters share: a model drawn from a chosen seed
// (safe on the rank-threads of a local world) and its loss and accuracy on a test set.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "data/data.h"
#include "nn/module.h"

namespace rg::chapters {

// models::make_model(name, shape) with its parameters drawn from `seed`. The parameters
// come from the process-wide default_generator(), so rank-threads take turns here.
std::shared_ptr<nn::Module> seeded_model(const std::string& name, const data::ImageShape& shape, uint64_t seed);

struct TestResult {
  double loss = 0;      // mean cross-entropy
  double accuracy = 0;  // share classified correctly
};

// Loss and accuracy of `model` on the batches of `test` (all, or the first max_batches),
// with the images cast to the model's dtype; no graph is recorded.
TestResult evaluate(nn::Module& model, data::DataLoader& test, int64_t max_batches = 0);

}  // namespace rg::chapters
