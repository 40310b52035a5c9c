// Argument checks shared by the files that implement tensor/ops.h (ops.cpp,
// ops_conv_pool.cpp, ops_index.cpp). Internal to the tensor layer: callers include ops.h.
#pragma once
#include "tensor/tensor.h"

namespace rg::detail {

inline void check_defined(const char* op, const Tensor& t) { RG_CHECK(t.defined(), op, ": got an undefined tensor"); }

inline void check_same_device(const char* op, const Tensor& a, const Tensor& b) {
  check_defined(op, a);
  check_defined(op, b);
  RG_CHECK(a.device() == b.device(), op, ": tensors are on different devices, ", a.device().str(), " and ",
           b.device().str(), " (move one with .to(device))");
}

inline void check_floating(const char* op, const Tensor& t) {
  RG_CHECK(is_floating(t.dtype()), op, ": expects a float32 or float64 tensor, got ", dtype_name(t.dtype()),
           " with shape ", shape_str(t.shape()));
}

}  // namespace rg::detail
