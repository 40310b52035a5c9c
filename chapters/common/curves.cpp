// smoothed_curve (see curves.h).
#include "chapters/common/curves.h"

#include <algorithm>
#include <cmath>

namespace rg::chapters {

std::vector<report::Point> smoothed_curve(const std::vector<double>& values, double x_per_value, size_t points,
                                          double clip) {
  const size_t window = std::max<size_t>(1, (values.size() + points - 1) / std::max<size_t>(points, 1));
  std::vector<report::Point> curve;
  for (size_t start = 0; start < values.size(); start += window) {
    const size_t end = std::min(values.size(), start + window);
    double sum = 0;
    for (size_t i = start; i < end; ++i) sum += std::isfinite(values[i]) ? std::min(values[i], clip) : clip;
    const double count = static_cast<double>(end - start);
    const double mean_index = static_cast<double>(start + end - 1) / 2;  // of the window's values
    curve.push_back({(mean_index + 1) * x_per_value, sum / count});
  }
  return curve;
}

}  // namespace rg::chapters
