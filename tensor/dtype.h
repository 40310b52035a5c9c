// Element types of tensors and a dispatcher from a runtime DType to a C++ type.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace rg {

enum class DType : uint8_t { float32, float64, int64, int32, uint8 };

size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);
bool is_floating(DType dtype);
DType parse_dtype(const std::string& name);  // "float32", ... (the safetensors names too: "F32", ...)
// The type both operands of a binary op are converted to: float64 > float32 > int64 > int32 > uint8.
DType promote(DType a, DType b);

template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::float32; }
template <> constexpr DType dtype_of<double>() { return DType::float64; }
template <> constexpr DType dtype_of<int64_t>() { return DType::int64; }
template <> constexpr DType dtype_of<int32_t>() { return DType::int32; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::uint8; }

// Calls fn(T{}) with T the C++ type of `dtype`:
//   dispatch(t.dtype(), [&](auto tag) { using T = decltype(tag); ... });
template <class Fn>
decltype(auto) dispatch(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::float32: return fn(float{});
    case DType::float64: return fn(double{});
    case DType::int64: return fn(int64_t{});
    case DType::int32: return fn(int32_t{});
    case DType::uint8: break;
  }
  return fn(uint8_t{});
}

// The same, for kernels that only make sense on floating types.
template <class Fn>
decltype(auto) dispatch_floating(DType dtype, Fn&& fn) {
  if (dtype == DType::float64) return fn(double{});
  return fn(float{});
}

}  // namespace rg
