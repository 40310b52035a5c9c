// chapters.c07_*: the star's rank 0 carries (N-1)·S each way, every ring rank 2(N-1)/N·S (the
// rule of chapters/07_parameter_server_vs_ring/README.md, from the exact counters); the cost
// model's check is reported and must agree with its own figures; with --star-everywhere the
// ring's counters become the star's and the verdict flips.
#include <filesystem>

#include "run_chapter.h"

namespace rg::chapters::test {

namespace {

// The counters decide the verdict; the cost model's line agrees with its numbers.
void check_run(const ChapterRun& run, int smallest_n, int largest_n) {
  INFO(run.output);
  const Verdict verdict = finished_verdict(run, "C07");
  CHECK(verdict.confirmed);
  CHECK(number_after(verdict.details, "counters vs formulas: ") == 0);
  CHECK(number_after(verdict.details, "traffic grows ") == Approx((largest_n - 1.0) / (smallest_n - 1.0)));
  CHECK(number_after(verdict.details, "ring per rank within ") < 0.1);  // percent
  const size_t check = run.output.find("cost model check: ");
  REQUIRE(check != std::string::npos);
  const std::string line = run.output.substr(check, run.output.find('\n', check) - check);
  const bool passes = line.find("cost model check: passes") != std::string::npos;
  // "k of n within 25%" for the star, then the ring: the check passes when k == n for both.
  static const std::regex within(R"(([0-9]+) of ([0-9]+) within 25%)");
  int parts = 0;
  bool all_within = true;
  for (auto it = std::sregex_iterator(line.begin(), line.end(), within); it != std::sregex_iterator(); ++it, ++parts)
    all_within = all_within && (*it)[1] == (*it)[2];
  CHECK(parts == 2);
  CHECK(passes == all_within);
  CHECK(verdict.details.find(passes ? "cost model passes" : "cost model fails") != std::string::npos);
}

}  // namespace

TEST_CASE("chapters.c07_parameter_server_vs_ring", "[chapters]") {
  const rg::test::TempDir out("c07");
  const ChapterRun run = run_chapter("07_parameter_server_vs_ring", "--quick --out " + out.path.string());
  CHECK(run.output.find("backend: local, 4 rank-threads") != std::string::npos);
  check_run(run, 2, 4);
  for (const char* svg : {"traffic_per_rank.svg", "rank0_traffic.svg", "time_vs_ranks.svg", "time_vs_size.svg",
                          "extrapolation.svg"})
    CHECK(std::filesystem::file_size(out.path / svg) > 1000);
}

TEST_CASE("chapters.c07_parameter_server_vs_ring_mpi", "[chapters]") {
  const rg::test::TempDir out("c07_mpi");
  const ChapterRun run = run_chapter("07_parameter_server_vs_ring", "--quick --out " + out.path.string(), 4);
  CHECK(run.output.find("backend: mpi, 4 processes") != std::string::npos);
  check_run(run, 4, 4);
}

TEST_CASE("chapters.c07_parameter_server_vs_ring_flips", "[chapters]") {
  const rg::test::TempDir out("c07_flips");
  const ChapterRun run =
      run_chapter("07_parameter_server_vs_ring", "--quick --star-everywhere --out " + out.path.string());
  INFO(run.output);
  const Verdict verdict = finished_verdict(run, "C07");
  CHECK_FALSE(verdict.confirmed);
  CHECK(number_after(verdict.details, "counters vs formulas: ") > 0);  // the "ring" ranks now carry the star's traffic
}

}  // namespace rg::chapters::test
