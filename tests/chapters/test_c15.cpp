// chapters.c15_*: the capstone's verdict follows the rule of chapters/15_capstone/README.md
// from the figures it printed (shards even and random, the consistency check silent, test
// accuracy >= 50%, sync share of a step <= 0.5 at the largest N); it wrote the timeline, the
// flow picture and the efficiency chart; with --no-sync the check fires and the verdict flips.
#include <thread>

#include "chapter_files.h"
#include "run_chapter.h"

namespace rg::chapters::test {

namespace {

// The verdict, recomputed from its own details by the README's rule.
Verdict check_rule(const ChapterRun& run) {
  INFO(run.output);
  const Verdict verdict = finished_verdict(run, "C15");
  const bool even = verdict.details.find("sharding even and random") != std::string::npos;
  const bool silent = verdict.details.find("consistency check passed") != std::string::npos;
  const double accuracy = number_after(verdict.details, "test accuracy ");
  const double share = number_after(verdict.details, "sync share ");
  CHECK(verdict.confirmed == (even && silent && accuracy >= 50 && share <= 0.5));
  CHECK(run.output.find("cores: " + std::to_string(std::thread::hardware_concurrency())) != std::string::npos);
  return verdict;
}

}  // namespace

TEST_CASE("chapters.c15_capstone", "[chapters]") {
  const rg::test::TempDir out("c15");
  const ChapterRun run = run_chapter("15_capstone", "--quick --out " + out.path.string());
  INFO(run.output);
  CHECK(run.output.find("backend: local, 4 rank-threads") != std::string::npos);
  const Verdict verdict = check_rule(run);
  CHECK(verdict.confirmed);
  CHECK(number_after(verdict.details, "at N = ") == 4);
  // The scaling table has N = 1, 2, 4; the cost model predicts 8..1024.
  for (const char* row : {"\n1 ", "\n2 ", "\n4 ", "\n   8 ", "\n1024 "}) CHECK(run.output.find(row) != std::string::npos);
  CHECK(run.output.find("this machine's fit: alpha ") != std::string::npos);
  for (const char* svg : {"timeline.svg", "flow.svg", "efficiency.svg"}) CHECK(is_whole_svg(out.path / svg));
}

TEST_CASE("chapters.c15_capstone_mpi", "[chapters]") {
  const rg::test::TempDir out("c15_mpi");
  const ChapterRun run = run_chapter("15_capstone", "--quick --out " + out.path.string(), 4);
  INFO(run.output);
  CHECK(run.output.find("backend: mpi, 4 processes") != std::string::npos);
  const Verdict verdict = check_rule(run);
  CHECK(number_after(verdict.details, "at N = ") == 4);
  CHECK(verdict.details.find("consistency check passed") != std::string::npos);
  CHECK(is_whole_svg(out.path / "flow.svg"));
}

TEST_CASE("chapters.c15_capstone_flips", "[chapters]") {
  const rg::test::TempDir out("c15_flips");
  const ChapterRun run = run_chapter("15_capstone", "--quick --no-sync --out " + out.path.string());
  INFO(run.output);
  const Verdict verdict = check_rule(run);
  CHECK_FALSE(verdict.confirmed);
  CHECK(verdict.details.find("consistency check fired at step 10") != std::string::npos);
  CHECK(run.output.find("check_consistency: parameter '") != std::string::npos);
}

}  // namespace rg::chapters::test
