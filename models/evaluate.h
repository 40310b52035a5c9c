// How well a classifier does on a data set: the summed cross-entropy and the number of
// correct predictions over what a loader yields. Sums, not means, so that shares of a test
// set evaluated on different ranks add up exactly (then divide once).
#pragma once
#include <cstdint>

#include "data/loader.h"
#include "nn/module.h"

namespace rg::models {

struct Evaluation {
  double loss_sum = 0;  // cross-entropy summed over the samples
  int64_t correct = 0;  // argmax(logits) == label
  int64_t samples = 0;
  double loss() const { return loss_sum / static_cast<double>(samples); }
  double accuracy() const { return static_cast<double>(correct) / static_cast<double>(samples); }
};

// Samples whose largest logit is their label's: logits (B, K), labels (B).
int64_t count_correct(const Tensor& logits, const Tensor& labels);

// x on `device`, in the dtype of the model's parameters when x is floating (images come as
// float32; a float64 model gets them in float64).
Tensor as_model_input(const Tensor& x, const nn::Module& model, const Device& device);

// Runs the model over the batches of `loader` (every one, or the first max_batches) in eval
// mode and without recording a graph, then puts it back in training mode.
Evaluation evaluate(nn::Module& model, data::DataLoader& loader, const Device& device = Device::cpu(),
                    int64_t max_batches = 0);

// The same over every sample of `data`, in batches of `batch_size` (the sums do not depend on it).
Evaluation evaluate(nn::Module& model, const data::Dataset& data, const Device& device = Device::cpu(),
                    int64_t batch_size = 1000);

}  // namespace rg::models
