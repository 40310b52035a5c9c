// Shape helpers: printing, checked size arithmetic, element counts, strides, broadcasting,
// dim wrapping.
#include "tensor/shape.h"

#include <algorithm>

#include "tensor/error.h"

namespace rg {

std::string shape_str(const Shape& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

int64_t checked_mul(int64_t a, int64_t b, const char* what) {
  int64_t out = 0;
  RG_CHECK(!__builtin_mul_overflow(a, b, &out), what, ": ", a, " * ", b, " overflows int64");
  return out;
}

int64_t checked_add(int64_t a, int64_t b, const char* what) {
  int64_t out = 0;
  RG_CHECK(!__builtin_add_overflow(a, b, &out), what, ": ", a, " + ", b, " overflows int64");
  return out;
}

int64_t numel_of(const Shape& shape, const char* op) {
  int64_t n = 1, extent = 1;  // extent: the product with zeros counted as 1
  for (int64_t s : shape) {
    RG_CHECK(s >= 0, op, ": negative size ", s, " in shape ", shape_str(shape));
    RG_CHECK(!__builtin_mul_overflow(extent, std::max<int64_t>(s, 1), &extent), op, ": shape ", shape_str(shape),
             " has more elements than int64 holds");
    n *= s;  // |n| <= extent: cannot overflow
  }
  return n;
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride = checked_mul(stride, std::max<int64_t>(shape[i], 1), "contiguous_strides");
  }
  return strides;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  size_t ndim = std::max(a.size(), b.size());
  Shape out(ndim);
  for (size_t i = 0; i < ndim; ++i) {
    int64_t da = i < ndim - a.size() ? 1 : a[i - (ndim - a.size())];
    int64_t db = i < ndim - b.size() ? 1 : b[i - (ndim - b.size())];
    RG_CHECK(da == db || da == 1 || db == 1, op, ": shapes ", shape_str(a), " and ", shape_str(b),
             " cannot be broadcast (dim ", i, ": ", da, " vs ", db, ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  int64_t lo = ndim == 0 ? -1 : -ndim, hi = ndim == 0 ? 0 : ndim - 1;
  RG_CHECK(dim >= lo && dim <= hi, op, ": dim ", dim, " is out of range for a tensor with ", ndim,
           " dims (expected ", lo, "..", hi, ")");
  return dim < 0 ? dim + std::max<int64_t>(ndim, 1) : dim;
}

}  // namespace rg
