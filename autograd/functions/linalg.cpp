// Differentiable reductions, matmul, linear, conv2d (im2col + GEMM), pooling and cat.
#include "autograd/functions.h"
#include "autograd/node.h"

namespace rg {

// The dims a reduction removed, restored as size-1 dims so the gradient broadcasts back.
static Shape keepdim_shape(const Shape& shape, const std::vector<int64_t>& dims) {
  Shape out = shape;
  if (dims.empty()) std::fill(out.begin(), out.end(), 1);
  for (int64_t d : dims) out[wrap_dim(d, static_cast<int64_t>(shape.size()), "sum")] = 1;
  return out;
}

Variable sum(const Variable& x, const std::vector<int64_t>& dims, bool keepdim) {
  Shape in_shape = x.shape(), kept = keepdim_shape(in_shape, dims);
  return make_result("sum", rg::sum(x.data(), dims, keepdim), {x}, [in_shape, kept](const Tensor& g, const NeedsGrad&) {
    return Gradients{g.reshape(kept).expand(in_shape).contiguous()};
  });
}

Variable mean(const Variable& x, const std::vector<int64_t>& dims, bool keepdim) {
  Shape in_shape = x.shape(), kept = keepdim_shape(in_shape, dims);
  double count = static_cast<double>(x.numel()) / static_cast<double>(std::max<int64_t>(1, numel_of(kept)));
  return make_result("mean", rg::mean(x.data(), dims, keepdim), {x},
                     [in_shape, kept, count](const Tensor& g, const NeedsGrad&) {
                       return Gradients{g.reshape(kept).expand(in_shape) / count};
                     });
}

Variable max(const Variable& x, int64_t dim, bool keepdim) {
  Tensor in = x.data();
  int64_t d = wrap_dim(dim, in.dim(), "max");
  Tensor index = argmax(in, d, true);
  Tensor values = gather(in, d, index);
  return make_result("max", keepdim ? values : values.squeeze(d), {x},
                     [shape = in.shape(), d, index](const Tensor& g, const NeedsGrad&) {
                       Tensor grad = Tensor::zeros(shape, g.dtype(), g.device());
                       scatter_add_(grad, d, index, g.reshape(index.shape()));
                       return Gradients{grad};
                     });
}

Variable matmul(const Variable& a, const Variable& b) {
  Tensor x = a.data(), y = b.data();
  RG_CHECK(x.dim() >= 2 && y.dim() >= 2, "matmul (autograd): operands need at least 2 dims, got ",
           shape_str(x.shape()), " and ", shape_str(y.shape()));
  return make_result("matmul", rg::matmul(x, y), {a, b}, [x, y](const Tensor& g, const NeedsGrad& needs) {
    // C = A B:  dA = dC B^T,  dB = A^T dC  (batch dims broadcast, so sum them back)
    return Gradients{needs[0] ? sum_to(rg::matmul(g, y.transpose(-1, -2)), x.shape()) : Tensor(),
                     needs[1] ? sum_to(rg::matmul(x.transpose(-1, -2), g), y.shape()) : Tensor()};
  });
}

// Linear's backward (out = x W^T + b). Given g = dL/dout (B, out), the input x (B, in) and
// the weight W (out, in), returns {dx, dW, db}: dx = g W (B, in), dW = g^T x (out, in),
// db = the sum of g over the batch (out). Entry i may be left undefined when needs[i] is
// false (that input needs no gradient, e.g. an undefined bias).
// BEGIN SOLUTION lab1.linear_backward
static Gradients linear_backward(const Tensor& g, const Tensor& x, const Tensor& w, const NeedsGrad& needs) {
  return Gradients{needs[0] ? rg::matmul(g, w) : Tensor(),      // dx = g W        (B, in)
                   needs[1] ? rg::matmul(g.t(), x) : Tensor(),  // dW = g^T x      (out, in)
                   needs[2] ? rg::sum(g, {0}) : Tensor()};      // db = sum_n g    (out)
}
// END SOLUTION

Variable linear(const Variable& x, const Variable& weight, const Variable& bias) {
  Tensor in = x.data(), w = weight.data();
  RG_CHECK(in.dim() == 2 && w.dim() == 2 && in.size(1) == w.size(1), "linear: input ", shape_str(in.shape()),
           " does not match weight ", shape_str(w.shape()), " (expected (B, ", w.size(1), "))");
  Tensor out = rg::matmul(in, w.t());  // x: (B, in), W: (out, in) -> (B, out)
  if (bias.defined()) out.add_(bias.data());
  return make_result("linear", out, {x, weight, bias}, [in, w](const Tensor& g, const NeedsGrad& needs) {
    return linear_backward(g, in, w, needs);
  });
}

Variable conv2d(const Variable& x, const Variable& weight, const Variable& bias, const Conv2dOptions& options) {
  Tensor in = x.data(), w = weight.data();
  RG_CHECK(in.dim() == 4 && w.dim() == 4 && in.size(1) == w.size(1), "conv2d: input ", shape_str(in.shape()),
           " (B, C, H, W) does not match weight ", shape_str(w.shape()), " (O, C, kh, kw)");
  Conv2dGeometry geo{w.size(2), w.size(3), options.stride, options.stride, options.padding, options.padding};
  // im2col + GEMM in the backend (tensor/cpu/conv2d.cpp says how the CPU does it); the
  // backward pass needs only x and W: dx = col2im(W^T g), dW = g cols(x)^T, db = sum g.
  Tensor out = rg::conv2d(in, w, bias.defined() ? bias.data() : Tensor(), geo);
  return make_result("conv2d", out, {x, weight, bias}, [in, w, geo](const Tensor& g, const NeedsGrad& needs) {
    Conv2dGrads grads = rg::conv2d_backward(in, w, g, needs[0], needs[1], needs[2], geo);
    return Gradients{grads.x, grads.weight, grads.bias};
  });
}

Variable max_pool2d(const Variable& x, const Pool2dOptions& options) {
  auto [out, indices] = rg::max_pool2d(x.data(), options);
  return make_result("max_pool2d", out, {x}, [indices, shape = x.shape()](const Tensor& g, const NeedsGrad&) {
    return Gradients{max_pool2d_backward(g, indices, shape)};
  });
}

Variable avg_pool2d(const Variable& x, const Pool2dOptions& options) {
  return make_result("avg_pool2d", rg::avg_pool2d(x.data(), options), {x},
                     [options, shape = x.shape()](const Tensor& g, const NeedsGrad&) {
                       return Gradients{avg_pool2d_backward(g, shape, options)};
                     });
}

Variable cat(const std::vector<Variable>& xs, int64_t dim) {
  std::vector<Tensor> tensors;
  std::vector<int64_t> sizes;
  for (const Variable& x : xs) tensors.push_back(x.data()), sizes.push_back(0);
  Tensor out = rg::cat(tensors, dim);
  int64_t d = wrap_dim(dim, out.dim(), "cat");
  for (size_t i = 0; i < xs.size(); ++i) sizes[i] = tensors[i].size(d);
  return make_result("cat", out, xs, [sizes, d](const Tensor& g, const NeedsGrad& needs) {
    Gradients grads;
    int64_t start = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      grads.push_back(needs[i] ? g.narrow(d, start, sizes[i]) : Tensor());
      start += sizes[i];
    }
    return grads;
  });
}

}  // namespace rg
