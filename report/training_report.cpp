#include "report/training_report.h"

#include <iomanip>
#include <sstream>

#include "report/html_page.h"
#include "report/timeline_svg.h"
#include "report/training_charts.h"

namespace rg::report {

namespace {

std::vector<std::pair<std::string, std::string>> as_text(const Fields& fields) {
  std::vector<std::pair<std::string, std::string>> rows;
  for (const auto& [key, value] : fields) rows.emplace_back(key, value.text());
  return rows;
}

BarChart traffic_chart(const std::vector<RankTraffic>& traffic) {
  std::vector<std::string> ranks;
  std::vector<double> sent, received;
  for (size_t r = 0; r < traffic.size(); ++r) {
    ranks.push_back("rank " + std::to_string(r));
    sent.push_back(static_cast<double>(traffic[r].bytes_sent) / (1 << 20));
    received.push_back(static_cast<double>(traffic[r].bytes_received) / (1 << 20));
  }
  BarChart bars({.title = "traffic per rank over the run", .y_label = "MiB"}, ranks);
  bars.add_series("sent", sent).add_series("received", received);
  return bars;
}

}  // namespace

void write_training_report(const std::filesystem::path& path, const TrainingReport& r) {
  HtmlPage page(r.title);
  page.heading("Result").facts(as_text(r.result)).heading("Batch arithmetic").paragraph(r.batch_arithmetic);
  const auto records = read_jsonl(r.metrics);
  page.heading("Training curves")
      .chart(training_chart(records, "loss"), "loss per step (window mean) and on the test set")
      .chart(training_chart(records, "accuracy"), "accuracy per step (window mean) and on the test set");
  if (r.flow) {
    page.heading("One step, as the lecture draws it")
        .chart(*r.flow, "scatter, forward and backward on every rank, the all-reduce, the identical update: the "
                        "shapes, bytes and times of this run's traced steps");
  }
  if (!r.events.empty()) {
    page.heading("Timeline of steps " + r.traced_steps)
        .chart(to_timeline(r.events, {.title = "one lane per rank", .x_label = "time (ms)"}),
               "forward, backward, each all-reduce on the communication thread, waits, optimizer (trace.json has "
               "the detail: ui.perfetto.dev)");
  }
  if (r.comm_hidden) {
    std::ostringstream hidden;
    hidden << std::fixed << std::setprecision(0) << 100 * *r.comm_hidden << "% of the traced steps' all-reduce time "
           << "ran while backward was still computing";
    page.heading("Overlap").paragraph(hidden.str());
  }
  if (!r.traffic.empty()) {
    page.heading("Traffic per rank")
        .chart(traffic_chart(r.traffic), "bytes each rank's process group sent and received");
  }
  page.heading("Configuration").facts(as_text(r.config));
  page.save(path);
}

}  // namespace rg::report
