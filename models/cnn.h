// CNN: two 5x5 convolutions (16 and 32 channels, padding 2 keeps H and W), each followed by
// a ReLU and a 2x2 max-pool, then one linear layer to K logits: LeNet's pattern at the size
// of MNIST. The same model as bench/torch_models.py's PyTorch one and bench/libtorch's.
#pragma once
#include <memory>

#include "data/dataset.h"
#include "nn/layers.h"

namespace rg::models {

class CNN : public nn::Cloneable<CNN> {
 public:
  // Throws rg::Error unless the images are at least 4x4 (two halvings leave a pixel).
  explicit CNN(const data::ImageShape& shape);
  Variable forward(const Variable& x) override;  // x: (B, C, H, W) -> logits (B, K)
  const data::ImageShape& options() const { return shape_; }

  std::shared_ptr<nn::Conv2d> conv1;  // C -> 16 channels, 5x5, padding 2
  std::shared_ptr<nn::Conv2d> conv2;  // 16 -> 32 channels, 5x5, padding 2
  std::shared_ptr<nn::Linear> fc;     // 32*(H/4)*(W/4) -> K

 private:
  data::ImageShape shape_;
};

}  // namespace rg::models
