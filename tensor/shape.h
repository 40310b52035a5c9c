// Shapes and strides (in elements), the broadcasting rule shared by every op, and the
// checked size arithmetic that every product or sum of sizes in tensor/ goes through.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace rg {

using Shape = std::vector<int64_t>;

std::string shape_str(const Shape& shape);  // "[2, 3]"

// a * b and a + b of sizes, strides or offsets; an overflow throws rg::Error naming `what`
// and both operands instead of wrapping (a wrapped element count allocates too little, and
// the writes that follow run past the end: Tensor::empty({2^62 + 1, 4}) once got 4 elements).
int64_t checked_mul(int64_t a, int64_t b, const char* what);
int64_t checked_add(int64_t a, int64_t b, const char* what);

// The element count of `shape`. Throws, naming `op`, unless every size is >= 0 and the
// product of the sizes, a 0 counted as 1, fits in int64: then every stride and every
// partial product of the shape fits too, empty shapes included ({0, 2^62, 2^62} would not).
int64_t numel_of(const Shape& shape, const char* op = "numel");
Shape contiguous_strides(const Shape& shape);
// NumPy broadcasting: align trailing dims; each pair must be equal or contain a 1.
// `op` names the caller in the error message.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
// Wraps a possibly negative dim into [0, ndim); throws naming `op` when out of range.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);

}  // namespace rg
