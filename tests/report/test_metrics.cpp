// JSONL metrics: round trip with full precision, NaN/Inf -> null, append vs truncate,
// reader errors, and atomic JSON files.
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "read_text.h"
#include "report/metrics.h"
#include "temp_dir.h"
#include "tensor/error.h"

using namespace rg::report;
using rg::test::TempDir;
using rg::test::read_text;
using Catch::Contains;

TEST_CASE("report.metrics_round_trip", "[report]") {
  TempDir dir("round_trip");
  const auto path = dir.path / "metrics.jsonl";
  const double loss = 0.1 + 0.2;  // 0.30000000000000004: needs all 17 digits
  {
    MetricsWriter writer(path);
    writer.write("step", {{"step", std::size_t{1} << 40}, {"loss", loss}, {"nan", NAN}, {"inf", -INFINITY},
                          {"mode", "ddp"}, {"ok", true}, {"none", Value()}});
    writer.write("eval", {{"epoch", 3}, {"accuracy", 0.9125}});
  }
  const auto records = read_jsonl(path);
  REQUIRE(records.size() == 2);
  const Record& step = records[0];
  CHECK(step.at("kind").as_string() == "step");
  CHECK(step.at("step").as_int() == (std::int64_t{1} << 40));
  CHECK(step.at("loss").as_number() == loss);
  CHECK(step.at("nan").is_null());
  CHECK(std::isnan(step.at("inf").as_number()));
  CHECK(step.at("mode").as_string() == "ddp");
  CHECK(step.at("ok").as_bool());
  CHECK(step.at("none").is_null());
  CHECK(records[1].at("kind").as_string() == "eval");
  CHECK(records[1].at("accuracy").as_number() == 0.9125);

  // Every line is standalone valid JSON with "kind" first and no NaN/Infinity tokens.
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    CHECK(line.rfind("{\"kind\":", 0) == 0);
    CHECK(nlohmann::json::parse(line).is_object());
    CHECK(line.find("NaN") == std::string::npos);
    CHECK(line.find("Infinity") == std::string::npos);
  }
  CHECK_THAT(read_text(path), Contains("\"nan\":null") && Contains("\"loss\":0.30000000000000004"));
}

TEST_CASE("report.metrics_append_and_truncate", "[report]") {
  TempDir dir("append");
  const auto path = dir.path / "m.jsonl";
  MetricsWriter(path).write("step", {{"step", 1}});
  MetricsWriter(path, {.append = true}).write("step", {{"step", 2}});
  CHECK(read_jsonl(path).size() == 2);
  MetricsWriter(path).write("step", {{"step", 3}});
  REQUIRE(read_jsonl(path).size() == 1);
  CHECK(read_jsonl(path)[0].at("step").as_int() == 3);
}

TEST_CASE("report.metrics_errors", "[report]") {
  TempDir dir("errors");
  const auto path = dir.path / "bad.jsonl";
  std::ofstream(path) << "{\"kind\":\"step\"}\n\n{oops\n";
  CHECK_THROWS_WITH(read_jsonl(path), Contains("bad.jsonl:3"));
  std::ofstream(path) << "{\"kind\":\"step\",\"v\":[1,2]}\n";
  CHECK_THROWS_WITH(read_jsonl(path), Contains("field 'v'") && Contains("not a scalar"));
  CHECK_THROWS_AS(read_jsonl(dir.path / "missing.jsonl"), rg::Error);
  MetricsWriter writer(dir.path / "ok.jsonl");
  CHECK_THROWS_WITH(writer.write("step", {{"kind", "x"}}), Contains("reserved"));
  CHECK_THROWS_AS(Value("text").as_number(), rg::Error);
}

TEST_CASE("report.write_json_file_is_atomic_and_valid", "[report]") {
  TempDir dir("json_file");
  const auto path = dir.path / "config.json";
  write_json_file(path, {{"model", "mlp"}, {"lr", 0.1}, {"world_size", 4}, {"bad", NAN}});
  const auto config = nlohmann::json::parse(read_text(path));
  CHECK(config["model"] == "mlp");
  CHECK(config["world_size"] == 4);
  CHECK(config["bad"].is_null());

  write_json_file(path, R"({"a": [1, 2, {"b": null}]})");
  CHECK(nlohmann::json::parse(read_text(path))["a"][2]["b"].is_null());
  CHECK_THROWS_WITH(write_json_file(path, "{not json"), Contains("invalid JSON"));
  CHECK(nlohmann::json::parse(read_text(path))["a"].size() == 3);  // the old file survives
  // Only the final file is left: temporaries were renamed away.
  CHECK(std::distance(std::filesystem::directory_iterator(dir.path), std::filesystem::directory_iterator()) == 1);
}
