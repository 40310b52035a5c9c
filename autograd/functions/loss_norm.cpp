// Differentiable softmax family, losses (fused cross-entropy, MSE), dropout, batch norm.
#include "autograd/functions.h"
#include "autograd/node.h"

namespace rg {

Variable softmax(const Variable& x, int64_t dim) {
  Tensor y = rg::softmax(x.data(), dim);
  return make_result("softmax", y, {x}, [y, dim](const Tensor& g, const NeedsGrad&) {
    return Gradients{y * (g - rg::sum(g * y, {dim}, true))};  // dx = y (g - <g, y>)
  });
}

Variable log_softmax(const Variable& x, int64_t dim) {
  Tensor y = rg::log_softmax(x.data(), dim);
  return make_result("log_softmax", y, {x}, [y, dim](const Tensor& g, const NeedsGrad&) {
    return Gradients{g - rg::exp(y) * rg::sum(g, {dim}, true)};  // dx = g - softmax * sum(g)
  });
}

static double reduction_scale(Reduction reduction, int64_t count) {
  return reduction == Reduction::mean ? 1.0 / static_cast<double>(std::max<int64_t>(count, 1)) : 1.0;
}

// Cross-entropy's backward. The forward computed loss = -scale * sum_i log_softmax(z)_i[t_i]
// (scale = 1/B for the mean, 1 for the sum). Given g = dL/dloss (a scalar tensor),
// log_probs = log_softmax(z) (B, K) and the targets t as (B, 1) int64 class indices, returns
// {dL/dz} = {(softmax(z) - onehot(t)) * scale * g}, shape (B, K).
// BEGIN SOLUTION lab1.cross_entropy_backward
static Gradients cross_entropy_backward(const Tensor& g, const Tensor& log_probs, const Tensor& targets,
                                        double scale) {
  Tensor grad = rg::exp(log_probs);
  scatter_add_(grad, 1, targets, Tensor::full(targets.shape(), -1.0, grad.dtype(), grad.device()));
  grad.mul_(g * scale);
  return Gradients{grad};
}
// END SOLUTION

Variable cross_entropy(const Variable& logits, const Tensor& targets, Reduction reduction) {
  const Tensor& z = logits.data();
  RG_CHECK(z.dim() == 2, "cross_entropy: logits must be (B, K), got shape ", shape_str(z.shape()));
  RG_CHECK(targets.defined() && targets.dtype() == DType::int64, "cross_entropy: targets must be int64 class indices");
  RG_CHECK(targets.dim() == 1 && targets.size(0) == z.size(0), "cross_entropy: targets of shape ",
           shape_str(targets.shape()), " do not match logits ", shape_str(z.shape()), " (expected (", z.size(0), "))");
  int64_t n = z.size(0), k = z.size(1);
  for (int64_t t : targets.to_vector<int64_t>())
    RG_CHECK(t >= 0 && t < k, "cross_entropy: target class ", t, " is out of range for ", k, " classes");
  // loss = -sum_i log_softmax(z)_i[t_i] * scale; computing log-softmax first keeps it stable.
  Tensor log_probs = rg::log_softmax(z, 1);
  Tensor index = targets.view({n, 1});
  double scale = reduction_scale(reduction, n);
  Tensor loss = rg::sum(gather(log_probs, 1, index)) * -scale;
  return make_result("cross_entropy", loss, {logits}, [log_probs, index, scale](const Tensor& g, const NeedsGrad&) {
    return cross_entropy_backward(g, log_probs, index, scale);
  });
}

Variable mse_loss(const Variable& prediction, const Variable& target, Reduction reduction) {
  RG_CHECK(prediction.shape() == target.shape(), "mse_loss: prediction of shape ", shape_str(prediction.shape()),
           " and target of shape ", shape_str(target.shape()), " differ");
  Variable diff = prediction - target;
  Variable squared = square(diff);
  return reduction == Reduction::mean ? mean(squared) : sum(squared);
}

Variable dropout(const Variable& x, double p, bool training, Generator& gen) {
  RG_CHECK(p >= 0 && p < 1, "dropout: p must be in [0, 1), got ", p);
  if (!training || p == 0) return x;
  Tensor keep = lt(rand(x.shape(), gen, 0.0, 1.0, x.dtype(), x.device()), Tensor::scalar(1 - p, x.dtype(), x.device()));
  Tensor mask = keep.to(x.dtype()) * (1.0 / (1.0 - p));
  return make_result("dropout", x.data() * mask, {x}, [mask](const Tensor& g, const NeedsGrad&) {
    return Gradients{g * mask};
  });
}

Variable batch_norm(const Variable& x, const Variable& weight, const Variable& bias, const Tensor& running_mean,
                    const Tensor& running_var, const BatchNormOptions& options) {
  const Tensor& in = x.data();
  RG_CHECK(in.dim() == 2 || in.dim() == 4, "batch_norm: expects (B, C) or (B, C, H, W), got ", shape_str(in.shape()));
  int64_t c = in.size(1);
  std::vector<int64_t> dims = in.dim() == 4 ? std::vector<int64_t>{0, 2, 3} : std::vector<int64_t>{0};
  Shape per_channel = in.dim() == 4 ? Shape{1, c, 1, 1} : Shape{1, c};
  int64_t m = in.numel() / std::max<int64_t>(c, 1);  // values per channel
  Tensor mu, var;
  if (options.training) {
    RG_CHECK(m > 1, "batch_norm: training needs more than one value per channel, got input ", shape_str(in.shape()));
    mu = rg::mean(in, dims, true);
    var = rg::mean(square(in - mu), dims, true);  // biased: what normalises the batch
    Tensor unbiased = var.view({c}) * (static_cast<double>(m) / static_cast<double>(m - 1));
    running_mean.mul_(1 - options.momentum).add_(mu.view({c}), options.momentum);
    running_var.mul_(1 - options.momentum).add_(unbiased, options.momentum);
  } else {
    mu = running_mean.view(per_channel);
    var = running_var.view(per_channel);
  }
  Tensor inv_std = reciprocal(rg::sqrt(var + options.eps));
  Tensor x_hat = (in - mu) * inv_std;
  Tensor out = x_hat;
  if (weight.defined()) out = out * weight.data().view(per_channel);
  if (bias.defined()) out = out + bias.data().view(per_channel);
  Tensor w = weight.defined() ? weight.data().view(per_channel) : Tensor();
  bool training = options.training;
  return make_result("batch_norm", out, {x, weight, bias},
                     [x_hat, inv_std, w, dims, m, training](const Tensor& g, const NeedsGrad& needs) {
                       Gradients grads(3);
                       Tensor g_hat = w.defined() ? g * w : g;
                       if (needs[0]) {
                         if (training) {
                           // dx = inv_std / m * (m g_hat - sum(g_hat) - x_hat sum(g_hat x_hat))
                           Tensor sum_g = rg::sum(g_hat, dims, true), sum_gx = rg::sum(g_hat * x_hat, dims, true);
                           grads[0] = (g_hat * static_cast<double>(m) - sum_g - x_hat * sum_gx) * inv_std /
                                      static_cast<double>(m);
                         } else {
                           grads[0] = g_hat * inv_std;
                         }
                       }
                       if (needs[1]) grads[1] = rg::sum(g * x_hat, dims);
                       if (needs[2]) grads[2] = rg::sum(g, dims);
                       return grads;
                     });
}

}  // namespace rg
