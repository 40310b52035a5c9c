// Maps a device type to its backend, and names the primitive ops for messages.
#include "tensor/backend.h"

#include "tensor/cpu/cpu_backend.h"
#include "tensor/cuda_loader.h"
#include "tensor/ops.h"

namespace rg {

Backend& backend_for(DeviceType type) {
  if (type == DeviceType::cuda) return cuda_backend();
  return cpu_backend();
}

void Backend::binary_scalar(BinaryOp op, const Tensor& a, double scalar, const Tensor& dst) {
  binary(op, a, Tensor::scalar(scalar, a.dtype(), a.device()).expand(a.shape()), dst, 1.0);
}

void Backend::conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y, const Conv2dGeometry& g) {
  int64_t o = w.size(0);
  Tensor out = rg::matmul(w.view({o, -1}), rg::im2col(x, g));  // (O, C*kh*kw) @ (B, C*kh*kw, L)
  if (bias.defined()) out.add_(bias.view({o, 1}));
  y.view(out.shape()).copy_(out);
}

void Backend::conv2d_backward(const Tensor& x, const Tensor& w, const Tensor& grad_y, const Tensor& grad_x,
                              const Tensor& grad_w, const Tensor& grad_bias, const Conv2dGeometry& g) {
  int64_t o = w.size(0);
  Tensor gy = grad_y.view({grad_y.size(0), o, -1});  // (B, O, L)
  Tensor w2 = w.view({o, -1});                         // (O, C*kh*kw)
  if (grad_x.defined()) grad_x.copy_(rg::col2im(rg::matmul(w2.t(), gy), x.shape(), g));
  if (grad_w.defined()) grad_w.view(w2.shape()).copy_(rg::sum(rg::matmul(gy, rg::im2col(x, g).transpose(1, 2)), {0}));
  if (grad_bias.defined()) grad_bias.copy_(rg::sum(gy, {0, 2}));
}

const char* op_name(UnaryOp op) {
  static const char* names[] = {"neg", "exp", "log", "sqrt", "tanh", "sigmoid", "relu", "abs", "sign", "square", "reciprocal"};
  return names[static_cast<int>(op)];
}

const char* op_name(BinaryOp op) {
  static const char* names[] = {"add", "sub", "mul", "div", "pow", "maximum", "minimum", "where_positive",
                                "eq",  "ne",  "lt",  "le",  "gt",  "ge"};
  return names[static_cast<int>(op)];
}

const char* op_name(DimReduction op) {
  static const char* names[] = {"sum", "mean", "max", "min", "argmax", "argmin"};
  return names[static_cast<int>(op)];
}

}  // namespace rg
