// ResNet-small: a CIFAR-style residual network (He et al. 2016, "Deep Residual Learning",
// section 4.2): a 3x3 stem, three stages of two basic blocks at 16, 32 and 64 channels (the
// second and third start with stride 2), global average pooling and one linear layer.
// BatchNorm follows every convolution.
#pragma once
#include <cstdint>
#include <memory>

#include "data/dataset.h"
#include "nn/layers.h"

namespace rg::models {

struct BlockOptions {
  int64_t in = 16, out = 16, stride = 1;
};

// relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x)), the 3x3 convs without bias; the
// shortcut is a strided 1x1 conv + BN when the shape changes, else the identity.
// x: (B, in, H, W) -> (B, out, H/stride, W/stride)
class BasicBlock : public nn::Cloneable<BasicBlock> {
 public:
  explicit BasicBlock(const BlockOptions& options);
  Variable forward(const Variable& x) override;
  const BlockOptions& options() const { return options_; }

 private:
  BlockOptions options_;
  std::shared_ptr<nn::Conv2d> conv1_, conv2_;
  std::shared_ptr<nn::BatchNorm2d> bn1_, bn2_;
  std::shared_ptr<nn::Sequential> shortcut_;  // null for the identity
};

class ResNetSmall : public nn::Cloneable<ResNetSmall> {
 public:
  static constexpr int64_t kBlocksPerStage = 2;

  explicit ResNetSmall(const data::ImageShape& shape);
  Variable forward(const Variable& x) override;  // x: (B, C, H, W) -> logits (B, K)
  const data::ImageShape& options() const { return shape_; }

 private:
  data::ImageShape shape_;
  std::shared_ptr<nn::Sequential> stem_;    // conv 3x3 C -> 16, BN, ReLU
  std::shared_ptr<nn::Sequential> stages_;  // the six BasicBlocks
  std::shared_ptr<nn::Linear> fc_;          // 64 -> K
};

}  // namespace rg::models
