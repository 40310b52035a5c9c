// MLP: the multi-layer perceptron of the lecture's first examples, C*H*W -> 256 -> 128 -> K
// with ReLUs between (784-256-128-10 on MNIST-shaped data). The same model as
// bench/torch_models.py's PyTorch one and bench/libtorch's, layer for layer.
#pragma once
#include <memory>

#include "data/dataset.h"
#include "nn/layers.h"

namespace rg::models {

class MLP : public nn::Cloneable<MLP> {
 public:
  explicit MLP(const data::ImageShape& shape);
  Variable forward(const Variable& x) override;  // x: (B, C, H, W) -> logits (B, K)
  const data::ImageShape& options() const { return shape_; }

  std::shared_ptr<nn::Linear> fc1;  // C*H*W -> 256
  std::shared_ptr<nn::Linear> fc2;  // 256 -> 128
  std::shared_ptr<nn::Linear> fc3;  // 128 -> K

 private:
  data::ImageShape shape_;
};

}  // namespace rg::models
