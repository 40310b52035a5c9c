// Training curves. Per-step train loss/accuracy are averaged over windows so a long run
// draws a few hundred points, not tens of thousands (a readable line, a small file).
#include "tools/train/charts.h"

#include <algorithm>
#include <string>
#include <vector>

#include "report/metrics.h"
#include "report/svg.h"

namespace rg::train {

namespace {

constexpr size_t kMaxPoints = 300;

// The mean of each window of consecutive points (x and y alike).
std::vector<report::Point> window_means(const std::vector<report::Point>& points) {
  const size_t window = std::max<size_t>(1, (points.size() + kMaxPoints - 1) / kMaxPoints);
  std::vector<report::Point> out;
  for (size_t start = 0; start < points.size(); start += window) {
    const size_t end = std::min(points.size(), start + window);
    report::Point mean;
    for (size_t i = start; i < end; ++i) {
      mean.x += points[i].x;
      mean.y += points[i].y;
    }
    mean.x /= static_cast<double>(end - start);
    mean.y /= static_cast<double>(end - start);
    out.push_back(mean);
  }
  return out;
}

std::vector<report::Point> series(const std::vector<report::Record>& records, const std::string& kind,
                                  const std::string& key) {
  std::vector<report::Point> points;
  for (const auto& r : records) {
    if (r.at("kind").as_string() != kind) continue;
    points.push_back({r.at("epoch_progress").as_number(), r.at(key).as_number()});
  }
  return points;
}

void chart(const std::vector<report::Record>& records, const std::string& what, const std::string& train_key,
           const std::string& test_key, const std::filesystem::path& file) {
  report::LineChart c({.title = what + " during training", .x_label = "epoch", .y_label = what});
  c.add_series("train (window mean)", window_means(series(records, "train", train_key)));
  c.add_series("test", series(records, "eval", test_key));
  c.save(file);
}

}  // namespace

void write_charts(const std::filesystem::path& metrics, const std::filesystem::path& out_dir) {
  const auto records = report::read_jsonl(metrics);
  chart(records, "loss", "loss", "test_loss", out_dir / "loss.svg");
  chart(records, "accuracy", "acc", "test_acc", out_dir / "accuracy.svg");
}

}  // namespace rg::train
