// Training curves from metrics records.
#include "report/training_charts.h"

#include <algorithm>

#include "tensor/error.h"

namespace rg::report {

namespace {

constexpr size_t kMaxPoints = 300;

// The mean of each window of consecutive points (x and y alike).
std::vector<Point> window_means(const std::vector<Point>& points) {
  const size_t window = std::max<size_t>(1, (points.size() + kMaxPoints - 1) / kMaxPoints);
  std::vector<Point> out;
  for (size_t start = 0; start < points.size(); start += window) {
    const size_t end = std::min(points.size(), start + window);
    Point mean;
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

std::vector<Point> series(const std::vector<Record>& records, const std::string& kind, const std::string& key) {
  std::vector<Point> points;
  for (const auto& r : records) {
    if (r.at("kind").as_string() != kind) continue;
    points.push_back({r.at("epoch_progress").as_number(), r.at(key).as_number()});
  }
  return points;
}

}  // namespace

LineChart training_chart(const std::vector<Record>& records, const std::string& what) {
  RG_CHECK(what == "loss" || what == "accuracy", "training_chart: '", what, "' is not loss or accuracy");
  const bool loss = what == "loss";
  LineChart c({.title = what + " during training", .x_label = "epoch", .y_label = what});
  c.add_series("train (window mean)", window_means(series(records, "train", loss ? "loss" : "acc")));
  c.add_series("test", series(records, "eval", loss ? "test_loss" : "test_acc"));
  return c;
}

void write_training_charts(const std::filesystem::path& metrics, const std::filesystem::path& out_dir) {
  const auto records = read_jsonl(metrics);
  training_chart(records, "loss").save(out_dir / "loss.svg");
  training_chart(records, "accuracy").save(out_dir / "accuracy.svg");
}

}  // namespace rg::report
