// Training curves for the chapters' charts (C04, C05, C06): a per-step loss is noisy and
// thousands of steps long, so a curve shows the mean of each window of consecutive steps.
#pragma once
#include <cstddef>
#include <limits>
#include <vector>

#include "report/svg.h"

namespace rg::chapters {

// At most `points` points: the mean of each window of consecutive values, placed at the
// window's mean x, where value i sits at x = (i + 1) * x_per_value (e.g. epochs per step).
// Values above `clip`, and NaN/Inf, count as `clip`: a diverging run's losses of 1e20 would
// otherwise squash every other line of the chart to zero.
std::vector<report::Point> smoothed_curve(const std::vector<double>& values, double x_per_value, size_t points = 60,
                                          double clip = std::numeric_limits<double>::infinity());

}  // namespace rg::chapters
