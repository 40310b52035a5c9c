// Tracing: scopes and threads, merging ranks, Chrome trace JSON, timelines, and the
// communication/backward overlap fraction on hand-made intervals.
#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "report/trace.h"
#include "temp_dir.h"
#include "xml_check.h"

using namespace rg::report;
using rg::test::TempDir;
using Catch::Contains;

namespace {

TraceEvent event(int rank, std::string category, std::int64_t start, std::int64_t duration) {
  return {category + " event", std::move(category), rank, 0, start, duration, {}};
}

}  // namespace

TEST_CASE("report.trace_scopes", "[report]") {
  TraceRecorder recorder(2);
  {
    auto step = recorder.scope("step", "compute", {{"step", 1}});
    {
      TraceRecorder::Scope backward(&recorder, "backward", "backward");
      backward.add_arg("bytes", 1024);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  { TraceRecorder::Scope ignored(nullptr, "not recorded", "compute"); }
  const auto events = recorder.events();
  REQUIRE(events.size() == 2);
  CHECK(events[0].name == "step");  // ordered by start although it ended last
  CHECK(events[1].name == "backward");
  CHECK(events[1].duration_us >= 2000);
  CHECK(events[0].start_us <= events[1].start_us);
  CHECK(events[0].start_us + events[0].duration_us >= events[1].start_us + events[1].duration_us);
  CHECK(events[0].rank == 2);
  CHECK(events[1].args == Fields{{"bytes", 1024}});
  recorder.clear();
  CHECK(recorder.events().empty());
}

TEST_CASE("report.trace_is_thread_safe", "[report]") {
  TraceRecorder recorder;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 500; ++i) auto scope = recorder.scope("work", "compute");
    });
  }
  for (auto& thread : threads) thread.join();
  const auto events = recorder.events();
  CHECK(events.size() == 2000);
  std::set<int> tids;
  for (const auto& e : events) tids.insert(e.tid);
  CHECK(tids == std::set<int>{0, 1, 2, 3});
}

TEST_CASE("report.trace_merge_and_timeline", "[report]") {
  TraceRecorder rank0(0);
  TraceRecorder rank1(1, rank0.epoch());
  rank1.record("forward", "compute", 10, 5);
  rank0.record("forward", "compute", 20, 5);
  rank0.record("all-reduce", "comm", 0, 5);
  const auto all = merge({rank0.events(), rank1.events()});
  REQUIRE(all.size() == 3);
  CHECK(all[0].start_us == 0);
  CHECK(all[1].rank == 1);
  CHECK(all[2].start_us == 20);
  const std::string svg = to_timeline(all, {.title = "trace"}).str();
  CHECK(rg::report::test::xml_problem(svg).empty());
  CHECK_THAT(svg, Contains(">rank 0<") && Contains(">rank 1<"));
  CHECK(svg.find(">rank 2<") == std::string::npos);
}

TEST_CASE("report.trace_chrome_json", "[report]") {
  TempDir dir("chrome");
  TraceRecorder recorder(3);
  recorder.record("bucket 0", "comm", 100, 250, {{"bytes", 4096}, {"ratio", NAN}});
  const auto path = dir.path / "trace.json";
  recorder.write_chrome_trace(path);
  std::ifstream in(path);
  const auto trace = nlohmann::json::parse(in);
  REQUIRE(trace.is_array());
  REQUIRE(trace.size() == 2);
  const auto& meta = trace[0];
  CHECK(meta["ph"] == "M");
  CHECK(meta["name"] == "process_name");
  CHECK(meta["pid"] == 3);
  CHECK(meta["args"]["name"] == "rank 3");
  const auto& x = trace[1];
  CHECK(x["ph"] == "X");
  CHECK(x["name"] == "bucket 0");
  CHECK(x["cat"] == "comm");
  CHECK(x["pid"] == 3);
  CHECK(x["tid"] == 0);
  CHECK(x["ts"] == 100);
  CHECK(x["dur"] == 250);
  CHECK(x["args"]["bytes"] == 4096);
  CHECK(x["args"]["ratio"].is_null());
}

TEST_CASE("report.trace_overlap_fraction", "[report]") {
  const std::vector<TraceEvent> backward{event(0, "backward", 0, 100), event(1, "backward", 0, 100)};
  auto with = [&](std::vector<TraceEvent> comm) {
    comm.insert(comm.end(), backward.begin(), backward.end());
    return comm;
  };
  CHECK(overlap_fraction(with({event(0, "comm", 10, 50)}), "comm", "backward", 0) == 1.0);
  CHECK(overlap_fraction(with({event(0, "comm", 50, 100)}), "comm", "backward", 0) == 0.5);
  CHECK(overlap_fraction(with({event(0, "comm", 200, 100)}), "comm", "backward", 0) == 0.0);
  // Concurrent buckets count once: union [50, 150) against [0, 100).
  CHECK(overlap_fraction(with({event(0, "comm", 50, 100), event(0, "comm", 60, 80)}), "comm", "backward", 0) == 0.5);
  // Another rank's backward hides nothing of rank 0's communication.
  CHECK(overlap_fraction({event(0, "comm", 10, 50), event(1, "backward", 0, 100)}, "comm", "backward", 0) == 0.0);
  // All ranks: rank 0 fully hidden (50 us), rank 1 not at all (150 us) -> 50 / 200.
  const auto both = with({event(0, "comm", 10, 50), event(1, "comm", 100, 150)});
  CHECK(overlap_fraction(both, "comm", "backward") == Approx(0.25));
  CHECK(overlap_fraction(both, "comm", "backward", 1) == 0.0);
  CHECK(overlap_fraction(backward, "comm", "backward", 0) == 0.0);  // no communication at all
  // Backward [0, 100) ends waiting [80, 100): comm [60, 100) is hidden only for [60, 80).
  CHECK(overlap_fraction(with({event(0, "comm", 60, 40), event(0, "wait", 80, 20)}), "comm", "backward", 0, "wait") ==
        0.5);
}
