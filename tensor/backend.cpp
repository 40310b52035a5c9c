// Maps a device type to its backend, and names the primitive ops for messages.
#include "tensor/backend.h"

#include "tensor/cpu/cpu_backend.h"
#include "tensor/cuda_loader.h"

namespace rg {

Backend& backend_for(DeviceType type) {
  if (type == DeviceType::cuda) return cuda_backend();
  return cpu_backend();
}

void Backend::binary_scalar(BinaryOp op, const Tensor& a, double scalar, const Tensor& dst) {
  binary(op, a, Tensor::scalar(scalar, a.dtype(), a.device()).expand(a.shape()), dst, 1.0);
}

const char* op_name(UnaryOp op) {
  static const char* names[] = {"neg", "exp", "log", "sqrt", "tanh", "sigmoid", "relu", "abs", "sign", "square", "reciprocal"};
  return names[static_cast<int>(op)];
}

const char* op_name(BinaryOp op) {
  static const char* names[] = {"add", "sub", "mul", "div", "pow", "maximum", "minimum",
                                "eq",  "ne",  "lt",  "le",  "gt",  "ge"};
  return names[static_cast<int>(op)];
}

const char* op_name(ReduceOp op) {
  static const char* names[] = {"sum", "mean", "max", "min", "argmax", "argmin"};
  return names[static_cast<int>(op)];
}

}  // namespace rg
