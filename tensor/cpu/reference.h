// Naive reference kernels: the plainest loops that compute what the optimized CPU kernels
// compute, over any strides, for tests to compare against. Slow on purpose.
#pragma once
#include "tensor/backend.h"

namespace rg::cpu {

// Same arguments as matmul() (out may have any strides); floats accumulate in double.
void matmul_reference(const Tensor& a, const Tensor& b, const Tensor& out);
// Same arguments as im2col(), conv2d(), conv2d_backward() (every gradient defined) and
// max_pool2d(); float32 and float64, contiguous.
void im2col_reference(const Tensor& x, const Tensor& cols, const Conv2dGeometry& g);
void conv2d_reference(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y, const Conv2dGeometry& g);
void conv2d_backward_reference(const Tensor& x, const Tensor& w, const Tensor& grad_y, const Tensor& grad_x,
                               const Tensor& grad_w, const Tensor& grad_bias, const Conv2dGeometry& g);
void max_pool2d_reference(const Tensor& x, const Tensor& out, const Tensor& indices, const Conv2dGeometry& g);

}  // namespace rg::cpu
