// The standard layers: Linear, Conv2d, pooling, activations, Flatten, Dropout,
// BatchNorm2d and Sequential. Each is a Cloneable module built from an options struct
// (what clone() rebuilds it from); Linear and Conv2d also take the common arguments directly.
// Shape letters as in autograd/functions.h (B batch, C channels, O output channels, in/out
// features, ...); k is Conv2d's kernel_size.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "autograd/functions.h"
#include "nn/module.h"

namespace rg::nn {

// ---- Linear: y = x W^T + b, x (B, in) -> (B, out) ----
struct LinearOptions {
  int64_t in_features = 0;
  int64_t out_features = 0;
  bool bias = true;
};
class Linear : public Cloneable<Linear> {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  explicit Linear(const LinearOptions& options);
  // PyTorch's default: kaiming_uniform(a = sqrt(5)) weight, U(-1/sqrt(in), 1/sqrt(in)) bias.
  // The constructor draws from default_generator().
  void reset_parameters(Generator& gen);
  Variable forward(const Variable& x) override;
  const LinearOptions& options() const { return options_; }

  Variable weight;  // (out, in)
  Variable bias;    // (out), undefined without bias

 private:
  LinearOptions options_;
};

// ---- Conv2d: x (B, C, H, W) -> (B, O, OH, OW), OH = (H + 2 padding - k) / stride + 1 ----
struct Conv2dOptions {
  int64_t in_channels = 0;
  int64_t out_channels = 0;
  int64_t kernel_size = 1;
  int64_t stride = 1;
  int64_t padding = 0;
  bool bias = true;
};
class Conv2d : public Cloneable<Conv2d> {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t stride = 1, int64_t padding = 0);
  explicit Conv2d(const Conv2dOptions& options);
  // As Linear, with fan_in = in_channels * kernel_size^2.
  void reset_parameters(Generator& gen);
  Variable forward(const Variable& x) override;
  const Conv2dOptions& options() const { return options_; }

  Variable weight;  // (O, C, k, k)
  Variable bias;    // (O), undefined without bias

 private:
  Conv2dOptions options_;
};

// ---- pooling (stride 0 means stride = kernel, as PyTorch's default) ----
class MaxPool2d : public Cloneable<MaxPool2d> {
 public:
  explicit MaxPool2d(int64_t kernel_size, int64_t stride = 0, int64_t padding = 0);
  explicit MaxPool2d(const Pool2dOptions& options) : options_(options) {}
  Variable forward(const Variable& x) override { return max_pool2d(x, options_); }
  const Pool2dOptions& options() const { return options_; }

 private:
  Pool2dOptions options_;
};
class AvgPool2d : public Cloneable<AvgPool2d> {
 public:
  explicit AvgPool2d(int64_t kernel_size, int64_t stride = 0, int64_t padding = 0);
  explicit AvgPool2d(const Pool2dOptions& options) : options_(options) {}
  Variable forward(const Variable& x) override { return avg_pool2d(x, options_); }
  const Pool2dOptions& options() const { return options_; }

 private:
  Pool2dOptions options_;
};

// ---- activations ----
struct ReLU : Cloneable<ReLU> {
  Variable forward(const Variable& x) override { return relu(x); }
};
struct Tanh : Cloneable<Tanh> {
  Variable forward(const Variable& x) override { return tanh(x); }
};
struct Sigmoid : Cloneable<Sigmoid> {
  Variable forward(const Variable& x) override { return sigmoid(x); }
};

// ---- Flatten: dims start..end into one (default keeps the batch dim) ----
struct FlattenOptions {
  int64_t start_dim = 1;
  int64_t end_dim = -1;
};
class Flatten : public Cloneable<Flatten> {
 public:
  explicit Flatten(const FlattenOptions& options = {}) : options_(options) {}
  Variable forward(const Variable& x) override { return x.flatten(options_.start_dim, options_.end_dim); }
  const FlattenOptions& options() const { return options_; }

 private:
  FlattenOptions options_;
};

// ---- Dropout: active in training mode only ----
struct DropoutOptions {
  double p = 0.5;
  Generator* generator = nullptr;  // null: default_generator(); clones share it
};
class Dropout : public Cloneable<Dropout> {
 public:
  explicit Dropout(double p = 0.5) : Dropout(DropoutOptions{.p = p}) {}
  explicit Dropout(const DropoutOptions& options);
  Variable forward(const Variable& x) override;
  const DropoutOptions& options() const { return options_; }

 private:
  DropoutOptions options_;
};

// ---- BatchNorm2d over the channels of (B, C, H, W); running stats are buffers ----
struct BatchNorm2dOptions {
  int64_t num_features = 0;
  double eps = 1e-5;
  double momentum = 0.1;
  bool affine = true;  // learnable weight (ones) and bias (zeros)
};
class BatchNorm2d : public Cloneable<BatchNorm2d> {
 public:
  explicit BatchNorm2d(int64_t num_features) : BatchNorm2d(BatchNorm2dOptions{.num_features = num_features}) {}
  explicit BatchNorm2d(const BatchNorm2dOptions& options);
  Variable forward(const Variable& x) override;
  const BatchNorm2dOptions& options() const { return options_; }
  Tensor& running_mean() { return buffer("running_mean"); }
  Tensor& running_var() { return buffer("running_var"); }

  Variable weight;  // (C), undefined without affine
  Variable bias;

 private:
  BatchNorm2dOptions options_;
};

// ---- Sequential: children named "0", "1", ... applied in order ----
class Sequential : public Module {
 public:
  Sequential() = default;
  // Modules by value (`nn::Linear(4, 2)`) or as shared_ptrs.
  template <class... Ms>
    requires(sizeof...(Ms) > 0)
  explicit Sequential(Ms&&... modules) {
    (push_back(std::forward<Ms>(modules)), ...);
  }
  void push_back(std::shared_ptr<Module> module);
  template <class M>
    requires std::derived_from<std::remove_cvref_t<M>, Module> && (!std::is_lvalue_reference_v<M>)
  void push_back(M&& module) {
    push_back(std::shared_ptr<Module>(std::make_shared<std::remove_cvref_t<M>>(std::move(module))));
  }
  template <class M>
  void push_back(std::shared_ptr<M> module) {
    push_back(std::shared_ptr<Module>(std::move(module)));
  }
  size_t size() const { return children().size(); }
  Module& operator[](size_t i) const { return *children().at(i).second; }
  Variable forward(const Variable& x) override;

 protected:
  std::shared_ptr<Module> clone_impl() const override;
};

}  // namespace rg::nn
