// report/training_report.h: a training run's page shows what it is given, and only that
// (no timeline without traced events, no traffic without it); report::Value as text.
#include <catch2/catch.hpp>

#include "read_text.h"
#include "report/metrics.h"
#include "report/training_report.h"
#include "temp_dir.h"

using namespace rg::report;
using rg::test::read_text;
using rg::test::TempDir;
using Catch::Contains;

TEST_CASE("report.value_as_text", "[report]") {
  CHECK(Value().text().empty());
  CHECK(Value(true).text() == "true");
  CHECK(Value(int64_t{-42}).text() == "-42");
  CHECK(Value(0.25).text() == "0.25");
  CHECK(Value("ddp").text() == "ddp");
}

TEST_CASE("report.training_report_shows_the_sections_it_is_given", "[report]") {
  TempDir dir("training_report");
  const auto metrics = dir.path / "metrics.jsonl";
  {
    MetricsWriter writer(metrics);
    for (int step = 1; step <= 4; ++step)
      writer.write("train", {{"step", step}, {"epoch_progress", step / 4.0}, {"loss", 2.0 / step}, {"acc", 0.2 * step}});
    writer.write("eval", {{"step", 4}, {"epoch_progress", 1.0}, {"test_loss", 0.6}, {"test_acc", 0.81}});
  }
  TrainingReport report{.title = "a run",
                        .result = {{"test accuracy", "81.00%"}, {"steps", 4}},
                        .batch_arithmetic = "64 per micro-batch x 2 worker(s)",
                        .metrics = metrics,
                        .config = {{"model", "mlp"}, {"lr", 0.05}}};
  write_training_report(dir.path / "plain.html", report);
  const std::string plain = read_text(dir.path / "plain.html");
  CHECK_THAT(plain, Contains("a run") && Contains("81.00%") && Contains("64 per micro-batch x 2 worker(s)") &&
                        Contains("Training curves") && Contains("0.05") && Contains("mlp"));
  CHECK_THAT(plain, !Contains("Timeline") && !Contains("Overlap") && !Contains("Traffic per rank"));

  report.events = {{.name = "backward", .category = "backward", .rank = 0, .start_us = 0, .duration_us = 900},
                   {.name = "all_reduce", .category = "comm", .rank = 0, .start_us = 500, .duration_us = 600}};
  report.traced_steps = "1-3";
  report.comm_hidden = 0.4;
  report.traffic = {{.bytes_sent = 3 << 20, .bytes_received = 3 << 20}, {.bytes_sent = 1 << 20, .bytes_received = 0}};
  write_training_report(dir.path / "traced.html", report);
  const std::string traced = read_text(dir.path / "traced.html");
  CHECK_THAT(traced, Contains("Timeline of steps 1-3") && Contains("40% of the traced steps&apos; all-reduce time") &&
                         Contains("Traffic per rank") && Contains("rank 1"));
}
