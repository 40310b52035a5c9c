// Layer constructors (parameter shapes and PyTorch's default initialisation) and forwards.
#include "nn/layers.h"

#include <cmath>

#include "nn/init.h"

namespace rg::nn {

namespace {
// PyTorch's reset_parameters for Linear and Conv2d (torch/nn/modules/linear.py, conv.py).
void reset_weight_and_bias(const Variable& weight, const Variable& bias, Generator& gen) {
  init::kaiming_uniform_(weight.data(), gen, std::sqrt(5.0));
  if (!bias.defined()) return;
  double bound = 1.0 / std::sqrt(static_cast<double>(init::fans(weight.data()).first));
  init::uniform_(bias.data(), gen, -bound, bound);
}

Pool2dOptions pool_options(int64_t kernel_size, int64_t stride, int64_t padding) {
  RG_CHECK(kernel_size > 0 && stride >= 0 && padding >= 0 && 2 * padding <= kernel_size, "pool2d: invalid kernel ",
           kernel_size, ", stride ", stride, ", padding ", padding, " (padding must be at most half the kernel)");
  return {kernel_size, kernel_size, stride, stride, padding, padding};
}
}  // namespace

Linear::Linear(int64_t in_features, int64_t out_features, bool bias)
    : Linear(LinearOptions{in_features, out_features, bias}) {}

Linear::Linear(const LinearOptions& options) : options_(options) {
  RG_CHECK(options.in_features > 0 && options.out_features > 0, "Linear: features must be positive, got in ",
           options.in_features, ", out ", options.out_features);
  weight = register_parameter("weight", Tensor::empty({options.out_features, options.in_features}));
  if (options.bias) bias = register_parameter("bias", Tensor::empty({options.out_features}));
  reset_parameters(default_generator());
}

void Linear::reset_parameters(Generator& gen) { reset_weight_and_bias(weight, bias, gen); }

Variable Linear::forward(const Variable& x) { return linear(x, weight, bias); }

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t stride, int64_t padding)
    : Conv2d(Conv2dOptions{in_channels, out_channels, kernel_size, stride, padding, true}) {}

Conv2d::Conv2d(const Conv2dOptions& options) : options_(options) {
  RG_CHECK(options.in_channels > 0 && options.out_channels > 0 && options.kernel_size > 0 && options.stride > 0 &&
               options.padding >= 0,
           "Conv2d: invalid options: in ", options.in_channels, ", out ", options.out_channels, ", kernel ",
           options.kernel_size, ", stride ", options.stride, ", padding ", options.padding);
  int64_t k = options.kernel_size;
  weight = register_parameter("weight", Tensor::empty({options.out_channels, options.in_channels, k, k}));
  if (options.bias) bias = register_parameter("bias", Tensor::empty({options.out_channels}));
  reset_parameters(default_generator());
}

void Conv2d::reset_parameters(Generator& gen) { reset_weight_and_bias(weight, bias, gen); }

Variable Conv2d::forward(const Variable& x) {
  return conv2d(x, weight, bias, rg::Conv2dOptions{.stride = options_.stride, .padding = options_.padding});
}

MaxPool2d::MaxPool2d(int64_t kernel_size, int64_t stride, int64_t padding)
    : options_(pool_options(kernel_size, stride, padding)) {}

AvgPool2d::AvgPool2d(int64_t kernel_size, int64_t stride, int64_t padding)
    : options_(pool_options(kernel_size, stride, padding)) {}

Dropout::Dropout(const DropoutOptions& options) : options_(options) {
  RG_CHECK(options.p >= 0 && options.p < 1, "Dropout: p must be in [0, 1), got ", options.p);
}

Variable Dropout::forward(const Variable& x) {
  Generator& gen = options_.generator ? *options_.generator : default_generator();
  return dropout(x, options_.p, is_training(), gen);
}

BatchNorm2d::BatchNorm2d(const BatchNorm2dOptions& options) : options_(options) {
  RG_CHECK(options.num_features > 0, "BatchNorm2d: num_features must be positive, got ", options.num_features);
  int64_t c = options.num_features;
  if (options.affine) {
    weight = register_parameter("weight", Tensor::ones({c}));
    bias = register_parameter("bias", Tensor::zeros({c}));
  }
  register_buffer("running_mean", Tensor::zeros({c}));
  register_buffer("running_var", Tensor::ones({c}));
}

Variable BatchNorm2d::forward(const Variable& x) {
  RG_CHECK(x.dim() == 4 && x.size(1) == options_.num_features, "BatchNorm2d: expects (B, ", options_.num_features,
           ", H, W), got shape ", shape_str(x.shape()));
  return batch_norm(x, weight, bias, running_mean(), running_var(),
                    {.training = is_training(), .momentum = options_.momentum, .eps = options_.eps});
}

void Sequential::push_back(std::shared_ptr<Module> module) {
  register_module(std::to_string(size()), std::move(module));
}

Variable Sequential::forward(const Variable& x) {
  Variable out = x;
  for (const auto& [name, child] : children()) out = child->forward(out);
  return out;
}

std::shared_ptr<Module> Sequential::clone_impl() const {
  auto copy = std::make_shared<Sequential>();
  for (const auto& [name, child] : children()) copy->push_back(child->clone());
  return copy;
}

}  // namespace rg::nn
