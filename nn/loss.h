// Loss modules: thin, stateless wrappers over the fused autograd losses, so training code
// reads like PyTorch's (`nn::CrossEntropyLoss loss_fn; auto loss = loss_fn(output, y);`).
#pragma once
#include "autograd/functions.h"

namespace rg::nn {

// Mean (or sum) over the batch of -log_softmax(logits)[i, target_i]; logits (B, K),
// targets int64 (B) in [0, K). Mismatched shapes and out-of-range classes throw rg::Error.
struct CrossEntropyLoss {
  Reduction reduction = Reduction::mean;
  Variable operator()(const Variable& logits, const Tensor& targets) const {
    return cross_entropy(logits, targets, reduction);
  }
};

// Mean (or sum) of (prediction - target)^2; the shapes must be equal.
struct MSELoss {
  Reduction reduction = Reduction::mean;
  Variable operator()(const Variable& prediction, const Variable& target) const {
    return mse_loss(prediction, target, reduction);
  }
};

}  // namespace rg::nn
