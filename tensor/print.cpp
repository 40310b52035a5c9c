// Printing tensors the way PyTorch does: nested brackets, long dims summarised with "...".
#include <iomanip>
#include <ostream>

#include "tensor/tensor.h"

namespace rg {

namespace {

constexpr int64_t kEdgeItems = 3;      // shown at each end of a long dim
constexpr int64_t kSummariseAbove = 1000;  // elements

void print_values(std::ostream& out, const Tensor& t, const std::vector<double>& values, int64_t dim,
                  int64_t offset, bool summarise, int indent) {
  if (t.dim() == 0) {
    out << values[0];
    return;
  }
  int64_t n = t.shape()[dim];
  int64_t inner = 1;
  for (int64_t d = dim + 1; d < t.dim(); ++d) inner *= t.shape()[d];
  out << "[";
  for (int64_t i = 0; i < n; ++i) {
    if (summarise && n > 2 * kEdgeItems && i == kEdgeItems) {
      out << "..., ";
      if (dim + 1 < t.dim()) out << "\n" << std::string(indent + 1, ' ');
      i = n - kEdgeItems - 1;
      continue;
    }
    if (dim + 1 == t.dim()) {
      out << values[offset + i];
    } else {
      print_values(out, t, values, dim + 1, offset + i * inner, summarise, indent + 1);
    }
    if (i + 1 < n) out << (dim + 1 == t.dim() ? ", " : ",\n" + std::string(indent + 1, ' '));
  }
  out << "]";
}

}  // namespace

std::ostream& operator<<(std::ostream& out, const Tensor& t) {
  if (!t.defined()) return out << "tensor(undefined)";
  std::vector<double> values = t.to_vector<double>();
  std::ios saved(nullptr);
  saved.copyfmt(out);
  if (is_floating(t.dtype())) out << std::fixed << std::setprecision(4);
  out << "tensor(";
  print_values(out, t, values, 0, 0, t.numel() > kSummariseAbove, 7);
  out.copyfmt(saved);
  return out << ", shape=" << shape_str(t.shape()) << ", dtype=" << dtype_name(t.dtype())
             << ", device=" << t.device().str() << ")";
}

}  // namespace rg
