// CNN (see cnn.h).
#include "models/cnn.h"

namespace rg::models {

namespace {
const Pool2dOptions kPool2x2{.kernel_h = 2, .kernel_w = 2};  // stride = kernel: halves H and W
}  // namespace

// As in MLP (mlp.cpp): the layers are registered under their places in PyTorch's
// nn.Sequential(Conv2d, ReLU, MaxPool2d, Conv2d, ReLU, MaxPool2d, Flatten, Linear), and the
// weights are drawn output layer first, as the earlier nn::Sequential version drew them.
CNN::CNN(const data::ImageShape& shape) : shape_(shape) {
  RG_CHECK(shape.height >= 4 && shape.width >= 4, "cnn: images must be at least 4x4, got ", shape.height, "x",
           shape.width);
  auto out = std::make_shared<nn::Linear>(32 * (shape.height / 4) * (shape.width / 4), shape.num_classes);
  auto second = std::make_shared<nn::Conv2d>(16, 32, 5, 1, 2);
  auto first = std::make_shared<nn::Conv2d>(shape.channels, 16, 5, 1, 2);
  conv1 = register_module("0", first);
  conv2 = register_module("3", second);
  fc = register_module("7", out);
}

// Conv -> ReLU -> MaxPool, computed as Conv -> MaxPool -> ReLU: ReLU is monotone, so the max
// of ReLUs is the ReLU of the max, and the pool keeps the same winner (the first maximum, or a
// tap whose ReLU gradient is 0 either way). Values and gradients are bit for bit the same;
// ReLU and its backward touch a quarter of the values.
Variable CNN::forward(const Variable& x) {
  Variable h = relu(max_pool2d(conv1->forward(x), kPool2x2));  // (B, 16, H/2, W/2)
  h = relu(max_pool2d(conv2->forward(h), kPool2x2));           // (B, 32, H/4, W/4)
  return fc->forward(h.flatten(1));                            // (B, 32*(H/4)*(W/4)) -> (B, K)
}

}  // namespace rg::models
