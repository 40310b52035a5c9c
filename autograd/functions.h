// Differentiable functions on Variables. Each is written once, with its backward beside
// its forward, from tensor ops — so it runs on every device. Broadcasting is undone in
// backward by summing over the broadcast dims (sum_to).
//
// Shape letters as in tensor/ops.h (B batch, C channels, H and W height and width, O output
// channels, kh and kw the kernel, OH and OW the output), and here also
//   K        classes: logits (B, K)
//   in, out  a linear layer's input and output features: x (B, in), weight (out, in)
#pragma once
#include <optional>

#include "autograd/variable.h"
#include "tensor/generator.h"
#include "tensor/ops.h"

namespace rg {

// ---- elementwise (broadcasting) ----
Variable add(const Variable& a, const Variable& b);
Variable sub(const Variable& a, const Variable& b);
Variable mul(const Variable& a, const Variable& b);
Variable div(const Variable& a, const Variable& b);
Variable maximum(const Variable& a, const Variable& b);
Variable minimum(const Variable& a, const Variable& b);
Variable pow(const Variable& x, double exponent);
Variable neg(const Variable& x);
Variable exp(const Variable& x);
Variable log(const Variable& x);
Variable sqrt(const Variable& x);
Variable tanh(const Variable& x);
Variable sigmoid(const Variable& x);
Variable relu(const Variable& x);
Variable abs(const Variable& x);
Variable square(const Variable& x);
Variable clamp(const Variable& x, double low, double high);

Variable operator+(const Variable& a, const Variable& b);
Variable operator-(const Variable& a, const Variable& b);
Variable operator*(const Variable& a, const Variable& b);
Variable operator/(const Variable& a, const Variable& b);
Variable operator-(const Variable& x);
Variable operator+(const Variable& a, double b);
Variable operator-(const Variable& a, double b);
Variable operator*(const Variable& a, double b);
Variable operator/(const Variable& a, double b);
Variable operator+(double a, const Variable& b);
Variable operator-(double a, const Variable& b);
Variable operator*(double a, const Variable& b);

// ---- reductions ----
Variable sum(const Variable& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
Variable mean(const Variable& x, const std::vector<int64_t>& dims = {}, bool keepdim = false);
// Maximum over one dim; the gradient goes to the (first) position of the maximum.
Variable max(const Variable& x, int64_t dim, bool keepdim = false);

// ---- linear algebra, convolution, pooling ----
Variable matmul(const Variable& a, const Variable& b);
// y = x W^T + b, x (B, in), weight (out, in), bias (out) or undefined -> (B, out).
Variable linear(const Variable& x, const Variable& weight, const Variable& bias);
struct Conv2dOptions {
  int64_t stride = 1;
  int64_t padding = 0;
};
// x (B, C, H, W), weight (O, C, kh, kw), bias (O) or undefined -> (B, O, OH, OW); im2col + GEMM.
Variable conv2d(const Variable& x, const Variable& weight, const Variable& bias, const Conv2dOptions& options = {});
Variable max_pool2d(const Variable& x, const Pool2dOptions& options);
Variable avg_pool2d(const Variable& x, const Pool2dOptions& options);
// Concatenation along `dim` (DataParallel's gather; its device moves are Variable::to).
Variable cat(const std::vector<Variable>& xs, int64_t dim = 0);

// ---- softmax, losses ----
Variable softmax(const Variable& x, int64_t dim);
Variable log_softmax(const Variable& x, int64_t dim);
enum class Reduction { mean, sum };
// Fused, numerically stable: mean (or sum) over the batch of -log_softmax(logits)[i, target_i].
// logits (B, K); targets int64 (B) with values in [0, K).
Variable cross_entropy(const Variable& logits, const Tensor& targets, Reduction reduction = Reduction::mean);
Variable mse_loss(const Variable& prediction, const Variable& target, Reduction reduction = Reduction::mean);

// ---- regularisation and normalisation ----
// Zeroes each element with probability p and scales the rest by 1/(1-p) when training.
Variable dropout(const Variable& x, double p, bool training, Generator& gen);
// Batch norm over dim 1 of (B, C) or (B, C, H, W). Training: normalise with the batch
// statistics and update the running ones (biased variance to normalise, unbiased to
// track, as PyTorch); eval: use the running statistics.
struct BatchNormOptions {
  bool training = true;
  double momentum = 0.1;
  double eps = 1e-5;
};
Variable batch_norm(const Variable& x, const Variable& weight, const Variable& bias, const Tensor& running_mean,
                    const Tensor& running_var, const BatchNormOptions& options);

}  // namespace rg
