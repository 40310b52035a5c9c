// Training curves for the chapters' charts (C04, C05, C06): a per-step loss is noisy and
// thousands of steps long, so a curve shows the mean of each window of consecutive steps.
#pragma once
#include <cstddef>
#include <vector>

#include "report/svg.h"

namespace rg::chapters {

// At most `points` points: the mean of each window of consecutive values, placed at the
// window's mean x, where value i sits at x = (i + 1) * x_per_value (e.g. epochs per step).
std::vector<report::Point> smoothed_curve(const std::vector<double>& values, double x_per_value, size_t points = 60);

}  // namespace rg::chapters
