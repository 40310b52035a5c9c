// The CUDA backend's primitives, one function per Backend method, defined in one .cu
// file per family. Contracts as in tensor/backend.h; each runs on the stream of the
// device of its output (see cuda_common.cuh for the synchronisation rule).
#pragma once
#include "tensor/backend.h"

namespace rg::cuda {

// copy.cu: host<->device, same-device and peer copies with any strides and dtypes.
void copy_tensor(const Tensor& src, const Tensor& dst);
void fill_tensor(const Tensor& dst, double value);

// elementwise.cu
void unary_tensor(UnaryOp op, const Tensor& src, const Tensor& dst);
void binary_tensor(BinaryOp op, const Tensor& a, const Tensor& b, const Tensor& dst, double alpha);
void binary_scalar_tensor(BinaryOp op, const Tensor& a, double scalar, const Tensor& dst);
void where_tensor(const Tensor& cond, const Tensor& a, const Tensor& b, const Tensor& dst);
void clamp_tensor(const Tensor& src, const Tensor& dst, double low, double high);

// reduce.cu
void reduce_tensor(DimReduction op, const Tensor& src, const Tensor& dst);
void softmax_tensor(const Tensor& src, const Tensor& dst, int64_t dim, bool log);

// linalg.cu
void matmul_tensor(const Tensor& a, const Tensor& b, const Tensor& out);

// conv_pool.cu
void im2col_tensor(const Tensor& x, const Tensor& cols, const Conv2dGeometry& g);
void col2im_tensor(const Tensor& cols, const Tensor& x, const Conv2dGeometry& g);
void max_pool2d_tensor(const Tensor& x, const Tensor& out, const Tensor& indices, const Conv2dGeometry& g);
void avg_pool2d_tensor(const Tensor& x, const Tensor& out, const Conv2dGeometry& g);
void avg_pool2d_backward_tensor(const Tensor& grad_out, const Tensor& grad_in, const Conv2dGeometry& g);

// indexing.cu
void index_select_tensor(const Tensor& src, int64_t dim, const Tensor& index, const Tensor& dst);
void gather_tensor(const Tensor& src, int64_t dim, const Tensor& index, const Tensor& dst);
void scatter_add_tensor(const Tensor& dst, int64_t dim, const Tensor& index, const Tensor& src);

// random.cu: arange and the Philox fills (same stream as the CPU, see tensor/philox.h).
void arange_tensor(const Tensor& dst, double start, double step);
void random_tensor(const Tensor& dst, RandomKind kind, uint64_t seed, uint64_t offset, double a, double b);

}  // namespace rg::cuda
