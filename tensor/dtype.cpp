// Names, sizes and promotion of element types.
#include "tensor/dtype.h"

#include "tensor/error.h"

namespace rg {

size_t dtype_size(DType dtype) {
  return dispatch(dtype, [](auto tag) { return sizeof(tag); });
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::float32: return "float32";
    case DType::float64: return "float64";
    case DType::int64: return "int64";
    case DType::int32: return "int32";
    case DType::uint8: return "uint8";
  }
  return "?";
}

bool is_floating(DType dtype) { return dtype == DType::float32 || dtype == DType::float64; }

DType parse_dtype(const std::string& name) {
  if (name == "float32" || name == "F32") return DType::float32;
  if (name == "float64" || name == "F64") return DType::float64;
  if (name == "int64" || name == "I64") return DType::int64;
  if (name == "int32" || name == "I32") return DType::int32;
  if (name == "uint8" || name == "U8") return DType::uint8;
  RG_THROW("unknown dtype '", name, "' (expected float32, float64, int64, int32 or uint8)");
}

// The enum order is not the promotion order, so rank them explicitly.
static int promotion_rank(DType dtype) {
  switch (dtype) {
    case DType::uint8: return 0;
    case DType::int32: return 1;
    case DType::int64: return 2;
    case DType::float32: return 3;
    case DType::float64: return 4;
  }
  return 0;
}

DType promote(DType a, DType b) { return promotion_rank(a) >= promotion_rank(b) ? a : b; }

}  // namespace rg
