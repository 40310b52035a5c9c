// BatchNormCNN (see batchnorm_cnn.h).
#include "chapters/common/batchnorm_cnn.h"

#include "tensor/generator.h"

namespace rg::chapters {

namespace {

// conv 3x3 (padding 1 keeps H and W) -> [BatchNorm] -> ReLU -> 2x2 max-pool (halves H and W).
// With BatchNorm the convolution has no bias: BatchNorm's own bias takes its place.
void add_stage(nn::Sequential& layers, int64_t in, int64_t out, bool batch_norm) {
  auto conv = std::make_shared<nn::Conv2d>(
      nn::Conv2dOptions{.in_channels = in, .out_channels = out, .kernel_size = 3, .padding = 1, .bias = !batch_norm});
  layers.push_back(conv);
  if (batch_norm) layers.push_back(nn::BatchNorm2d(out));
  layers.push_back(nn::ReLU());
  layers.push_back(nn::MaxPool2d(2));
}

}  // namespace

BatchNormCNN::BatchNormCNN(const BatchNormCNNOptions& options) : options_(options) {
  const data::ImageShape& s = options.shape;
  RG_CHECK(s.height >= 4 && s.width >= 4, "BatchNormCNN: images must be at least 4x4, got ", s.height, "x", s.width);
  {
    // Rank-threads build their models at the same time: keep them off default_generator(),
    // then draw every weight from this model's own generator.
    nn::InitSkipGuard no_draws;
    layers_ = std::make_shared<nn::Sequential>();
    add_stage(*layers_, s.channels, 8, options.batch_norm);
    add_stage(*layers_, 8, 16, options.batch_norm);
    layers_->push_back(nn::Flatten());
    hidden_ = std::make_shared<nn::Linear>(16 * (s.height / 4) * (s.width / 4), kHidden, !options.batch_norm);
    if (options.batch_norm) hidden_norm_ = std::make_shared<nn::BatchNorm2d>(kHidden);
    out_ = std::make_shared<nn::Linear>(kHidden, s.num_classes);
  }
  Generator gen(options.seed);
  for (const auto& [name, layer] : layers_->children())
    if (auto* conv = dynamic_cast<nn::Conv2d*>(layer.get())) conv->reset_parameters(gen);
  hidden_->reset_parameters(gen);
  out_->reset_parameters(gen);
  register_module("features", layers_);
  register_module("hidden", hidden_);
  if (hidden_norm_) register_module("hidden_norm", hidden_norm_);
  register_module("out", out_);
}

Variable BatchNormCNN::forward(const Variable& x) {
  Variable h = hidden_->forward(layers_->forward(x));  // (B, 64)
  const int64_t batch = h.size(0);
  // BatchNorm over a (B, 64, 1, 1) view: each feature's mean and variance over the B samples alone.
  if (hidden_norm_) h = hidden_norm_->forward(h.view({batch, kHidden, 1, 1})).view({batch, kHidden});
  return out_->forward(relu(h));
}

}  // namespace rg::chapters
