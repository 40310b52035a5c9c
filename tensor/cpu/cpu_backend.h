// The CPU backend: the Backend primitives implemented with loops over strided memory,
// OpenBLAS for GEMM, and the intra-op thread pool. Each family lives in its own file;
// this header lists them.
#pragma once
#include "tensor/backend.h"

namespace rg {

Backend& cpu_backend();

namespace cpu {
// memory and data movement (cpu_backend.cpp)
void copy(const Tensor& src, const Tensor& dst);
void fill(const Tensor& dst, double value);
void arange(const Tensor& dst, double start, double step);
void random(const Tensor& dst, RandomKind kind, uint64_t seed, uint64_t offset, double a, double b);
// elementwise.cpp
void unary(UnaryOp op, const Tensor& src, const Tensor& dst);
void binary(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& dst, double alpha);
void binary_scalar(BinaryOp op, const Tensor& a, double scalar, const Tensor& dst);
void where(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& dst);
void clamp(const Tensor& src, const Tensor& dst, double low, double high);
// reduce.cpp
void reduce(DimReduction op, const Tensor& src, const Tensor& dst);
void softmax(const Tensor& src, const Tensor& dst, int64_t dim, bool log);
// linalg.cpp
void matmul(const Tensor& a, const Tensor& b, const Tensor& out);
// conv2d.cpp
void im2col(const Tensor& x, const Tensor& cols, const Conv2dGeometry& g);
void col2im(const Tensor& cols, const Tensor& x, const Conv2dGeometry& g);
void conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y, const Conv2dGeometry& g);
void conv2d_backward(const Tensor& x, const Tensor& w, const Tensor& grad_y, const Tensor& grad_x,
                     const Tensor& grad_w, const Tensor& grad_bias, const Conv2dGeometry& g);
// pool.cpp
void max_pool2d(const Tensor& x, const Tensor& out, const Tensor& indices, const Conv2dGeometry& g);
void avg_pool2d(const Tensor& x, const Tensor& out, const Conv2dGeometry& g);
void avg_pool2d_backward(const Tensor& grad_out, const Tensor& grad_in, const Conv2dGeometry& g);
// indexing.cpp
void index_select(const Tensor& src, int64_t dim, const Tensor& index, const Tensor& dst);
void gather(const Tensor& src, int64_t dim, const Tensor& index, const Tensor& dst);
void scatter_add(const Tensor& dst, int64_t dim, const Tensor& index, const Tensor& src);
}  // namespace cpu

}  // namespace rg
