// The joining, splitting and indexing ops of tensor/ops.h. cat, stack, split and chunk
// are composed from views and copies, one_hot from scatter_add_; index_select, gather and
// scatter_add_ check every index on the host before their Backend primitive runs.
#include "tensor/ops.h"

#include <algorithm>

#include "tensor/op_checks.h"

namespace rg {

using namespace detail;

namespace {

void check_index_dtype(const char* op, const Tensor& index) {
  RG_CHECK(index.dtype() == DType::int64, op, ": index tensor must be int64, got ", dtype_name(index.dtype()));
}

// Checks every index value is in [0, size) — on the host, since a bad index must be an
// error and not a wild memory access on any device.
void check_index_range(const char* op, const Tensor& index, int64_t size, int64_t dim) {
  if (index.numel() == 0) return;
  std::vector<int64_t> values = index.to_vector<int64_t>();
  auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  RG_CHECK(*lo >= 0 && *hi < size, op, ": index ", (*lo < 0 ? *lo : *hi), " is out of range for dim ", dim,
           " of size ", size);
}

}  // namespace

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  RG_CHECK(!tensors.empty(), "cat: needs at least one tensor");
  const Tensor& first = tensors[0];
  check_defined("cat", first);
  int64_t d = wrap_dim(dim, first.dim(), "cat");
  Shape shape = first.shape();
  DType dtype = first.dtype();
  shape[d] = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    check_same_device("cat", first, t);
    RG_CHECK(t.dim() == first.dim(), "cat: tensor ", i, " has shape ", shape_str(t.shape()), " but tensor 0 has ",
             shape_str(first.shape()), " (ranks differ)");
    for (int64_t k = 0; k < t.dim(); ++k)
      RG_CHECK(k == d || t.shape()[k] == first.shape()[k], "cat: tensor ", i, " has shape ", shape_str(t.shape()),
               ", tensor 0 has ", shape_str(first.shape()), ": sizes must match except in dim ", d);
    shape[d] = checked_add(shape[d], t.shape()[d], "cat");
    dtype = promote(dtype, t.dtype());
  }
  Tensor out = Tensor::empty(shape, dtype, first.device());
  int64_t start = 0;
  for (const Tensor& t : tensors) {
    out.narrow(d, start, t.shape()[d]).copy_(t);
    start += t.shape()[d];
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  RG_CHECK(!tensors.empty(), "stack: needs at least one tensor");
  int64_t d = wrap_dim(dim, tensors[0].dim() + 1, "stack");
  std::vector<Tensor> expanded;
  for (size_t i = 0; i < tensors.size(); ++i) {
    RG_CHECK(tensors[i].shape() == tensors[0].shape(), "stack: tensor ", i, " has shape ",
             shape_str(tensors[i].shape()), " but tensor 0 has ", shape_str(tensors[0].shape()));
    expanded.push_back(tensors[i].unsqueeze(d));
  }
  return cat(expanded, d);
}

std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim) {
  check_defined("split", x);
  RG_CHECK(split_size > 0, "split: split_size must be positive, got ", split_size);
  int64_t d = wrap_dim(dim, x.dim(), "split");
  std::vector<Tensor> parts;
  for (int64_t start = 0; start < x.size(d);) {
    const int64_t length = std::min(split_size, x.size(d) - start);  // start + split_size may overflow
    parts.push_back(x.narrow(d, start, length));
    start += length;
  }
  return parts;
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim) {
  check_defined("chunk", x);
  RG_CHECK(chunks > 0, "chunk: number of chunks must be positive, got ", chunks);
  int64_t d = wrap_dim(dim, x.dim(), "chunk");
  const int64_t size = x.size(d);
  return split(x, std::max<int64_t>(1, size / chunks + (size % chunks != 0)), d);  // ceil, without overflow
}

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  check_same_device("index_select", x, index);
  check_index_dtype("index_select", index);
  RG_CHECK(index.dim() == 1, "index_select: index must be 1-d, got shape ", shape_str(index.shape()));
  int64_t d = wrap_dim(dim, x.dim(), "index_select");
  check_index_range("index_select", index, x.size(d), d);
  Shape shape = x.shape();
  shape[d] = index.numel();
  Tensor out = Tensor::empty(shape, x.dtype(), x.device());
  if (out.numel() > 0) backend_for(x).index_select(x, d, index, out);
  return out;
}

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  check_same_device("gather", x, index);
  check_index_dtype("gather", index);
  int64_t d = wrap_dim(dim, x.dim(), "gather");
  RG_CHECK(index.dim() == x.dim(), "gather: index ", shape_str(index.shape()), " and input ", shape_str(x.shape()),
           " must have the same number of dims");
  for (int64_t k = 0; k < x.dim(); ++k)
    RG_CHECK(k == d || index.shape()[k] <= x.shape()[k], "gather: index ", shape_str(index.shape()),
             " is larger than input ", shape_str(x.shape()), " in dim ", k);
  check_index_range("gather", index, x.size(d), d);
  Tensor out = Tensor::empty(index.shape(), x.dtype(), x.device());
  if (out.numel() > 0) backend_for(x).gather(x, d, index, out);
  return out;
}

const Tensor& scatter_add_(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  check_same_device("scatter_add_", x, index);
  check_same_device("scatter_add_", x, src);
  check_index_dtype("scatter_add_", index);
  int64_t d = wrap_dim(dim, x.dim(), "scatter_add_");
  RG_CHECK(index.shape() == src.shape() && index.dim() == x.dim(), "scatter_add_: index ", shape_str(index.shape()),
           " and source ", shape_str(src.shape()), " must have the same shape and the rank of ", shape_str(x.shape()));
  for (int64_t k = 0; k < x.dim(); ++k)
    RG_CHECK(k == d || index.shape()[k] <= x.shape()[k], "scatter_add_: index ", shape_str(index.shape()),
             " is larger than ", shape_str(x.shape()), " in dim ", k);
  check_index_range("scatter_add_", index, x.size(d), d);
  if (index.numel() > 0) backend_for(x).scatter_add(x, d, index, src.to(x.dtype()));
  return x;
}

Tensor one_hot(const Tensor& labels, int64_t num_classes, DType dtype) {
  check_defined("one_hot", labels);
  check_index_dtype("one_hot", labels);
  RG_CHECK(num_classes > 0, "one_hot: num_classes must be positive, got ", num_classes);
  check_index_range("one_hot", labels, num_classes, labels.dim());
  Shape shape = labels.shape();
  shape.push_back(num_classes);
  Tensor out = Tensor::zeros(shape, dtype, labels.device());
  Tensor index = labels.unsqueeze(-1);
  scatter_add_(out, -1, index, Tensor::ones(index.shape(), dtype, labels.device()));
  return out;
}

}  // namespace rg
