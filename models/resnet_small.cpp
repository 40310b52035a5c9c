// ResNet-small and its BasicBlock (see resnet_small.h).
#include "models/resnet_small.h"

namespace rg::models {

namespace {

nn::Conv2d conv_no_bias(int64_t in, int64_t out, int64_t kernel, int64_t stride) {
  // BatchNorm follows every conv, so a bias would be cancelled by its mean subtraction.
  return nn::Conv2d(nn::Conv2dOptions{.in_channels = in, .out_channels = out, .kernel_size = kernel,
                                      .stride = stride, .padding = kernel / 2, .bias = false});
}

}  // namespace

BasicBlock::BasicBlock(const BlockOptions& o) : options_(o) {
  conv1_ = register_module("conv1", conv_no_bias(o.in, o.out, 3, o.stride));
  bn1_ = register_module("bn1", nn::BatchNorm2d(o.out));
  conv2_ = register_module("conv2", conv_no_bias(o.out, o.out, 3, 1));
  bn2_ = register_module("bn2", nn::BatchNorm2d(o.out));
  if (o.stride != 1 || o.in != o.out) {
    shortcut_ = register_module("shortcut", nn::Sequential(conv_no_bias(o.in, o.out, 1, o.stride),
                                                           nn::BatchNorm2d(o.out)));
  }
}

Variable BasicBlock::forward(const Variable& x) {
  Variable y = bn2_->forward(conv2_->forward(relu(bn1_->forward(conv1_->forward(x)))));
  return relu(y + (shortcut_ ? shortcut_->forward(x) : x));
}

ResNetSmall::ResNetSmall(const data::ImageShape& s) : shape_(s) {
  stem_ = register_module("stem", nn::Sequential(conv_no_bias(s.channels, 16, 3, 1), nn::BatchNorm2d(16), nn::ReLU()));
  auto stages = std::make_shared<nn::Sequential>();
  int64_t in = 16;
  for (int64_t out : {16, 32, 64}) {
    for (int64_t b = 0; b < kBlocksPerStage; ++b) {
      const int64_t stride = (b == 0 && out != 16) ? 2 : 1;
      stages->push_back(BasicBlock({.in = in, .out = out, .stride = stride}));
      in = out;
    }
  }
  stages_ = register_module("stages", stages);
  fc_ = register_module("fc", nn::Linear(64, s.num_classes));
}

Variable ResNetSmall::forward(const Variable& x) {
  Variable features = stages_->forward(stem_->forward(x));  // (B, 64, H/4, W/4)
  return fc_->forward(mean(features, {2, 3}));              // global average pool -> (B, 64)
}

}  // namespace rg::models
