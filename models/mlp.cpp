// MLP (see mlp.h).
#include "models/mlp.h"

namespace rg::models {

// The layers are registered as "1", "3" and "5", their places in PyTorch's
// nn.Sequential(Flatten, Linear, ReLU, Linear, ReLU, Linear), so the parameters are named
// as there ("1.weight", ...) and as in checkpoints written before this library existed.
// The weights are drawn output layer first: the order in which that earlier nn::Sequential
// version drew them under GCC (which evaluates constructor arguments right to left), kept
// so that a seed gives the weights it always gave.
MLP::MLP(const data::ImageShape& shape) : shape_(shape) {
  auto out = std::make_shared<nn::Linear>(128, shape.num_classes);
  auto hidden2 = std::make_shared<nn::Linear>(256, 128);
  auto hidden1 = std::make_shared<nn::Linear>(shape.channels * shape.height * shape.width, 256);
  fc1 = register_module("1", hidden1);
  fc2 = register_module("3", hidden2);
  fc3 = register_module("5", out);
}

Variable MLP::forward(const Variable& x) {
  Variable h = x.flatten(1);    // (B, C*H*W)
  h = relu(fc1->forward(h));    // (B, 256)
  h = relu(fc2->forward(h));    // (B, 128)
  return fc3->forward(h);       // (B, K)
}

}  // namespace rg::models
