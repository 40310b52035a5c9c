// Shapes and strides (in elements), and the broadcasting rule shared by every op.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace rg {

using Shape = std::vector<int64_t>;

std::string shape_str(const Shape& shape);  // "[2, 3]"
int64_t numel_of(const Shape& shape);
Shape contiguous_strides(const Shape& shape);
// NumPy broadcasting: align trailing dims; each pair must be equal or contain a 1.
// `op` names the caller in the error message.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
// Wraps a possibly negative dim into [0, ndim); throws naming `op` when out of range.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);

}  // namespace rg
