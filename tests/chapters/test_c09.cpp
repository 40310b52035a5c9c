// chapters.c09_*: the verdict follows the rule of chapters/09_library_vs_handwritten/README.md
// from the ratios it prints (library/relay >= 10x at the median size for some N, library >= the better ring at
// the largest N and size); with --library-is-ring our ring stands in for the library, the
// library/relay ratio is the ring's own and the verdict cannot be confirmed.
#include <filesystem>

#include "run_chapter.h"

namespace rg::chapters::test {

namespace {

// The verdict's two figures, and the verdict they imply.
Verdict check_rule(const ChapterRun& run) {
  INFO(run.output);
  const Verdict verdict = finished_verdict(run, "C09");
  const double vs_relay = number_after(verdict.details, "library/relay busbw ");
  const double vs_ring = number_after(verdict.details, "library/best ring ");
  CHECK(vs_relay > 0);
  CHECK(vs_ring > 0);
  CHECK(verdict.confirmed == (vs_relay >= 10 && vs_ring >= 1));
  CHECK(run.output.find("bus bandwidth, N = 2") != std::string::npos);
  return verdict;
}

}  // namespace

TEST_CASE("chapters.c09_library_vs_handwritten", "[chapters]") {
  const rg::test::TempDir out("c09");
  const ChapterRun run = run_chapter("09_library_vs_handwritten", "--quick --out " + out.path.string());
  CHECK(run.output.find("backend: local, 2 rank-threads") != std::string::npos);
  check_rule(run);
  CHECK(std::filesystem::file_size(out.path / "busbw_vs_size.svg") > 1000);
}

TEST_CASE("chapters.c09_library_vs_handwritten_mpi", "[chapters]") {
  const rg::test::TempDir out("c09_mpi");
  const ChapterRun run = run_chapter("09_library_vs_handwritten", "--quick --out " + out.path.string(), 2);
  CHECK(run.output.find("backend: mpi, 2 processes") != std::string::npos);
  check_rule(run);
}

TEST_CASE("chapters.c09_library_vs_handwritten_flips", "[chapters]") {
  const rg::test::TempDir out("c09_flips");
  const ChapterRun run =
      run_chapter("09_library_vs_handwritten", "--quick --library-is-ring --out " + out.path.string());
  INFO(run.output);
  const Verdict verdict = check_rule(run);
  CHECK_FALSE(verdict.confirmed);
  // The "library" is our ring now, so library/relay is the ring's own ratio to the relay and
  // stays far below 10x. library/best ring compares the ring with itself: a timing ratio near 1
  // that one disturbed 1 MiB round on a shared machine moves to 2 (CI saw 2.07), so it is not
  // asserted.
  CHECK(run.output.find("--library-is-ring: our ring runs in its place") != std::string::npos);
  CHECK(number_after(verdict.details, "library/relay busbw ") < 10);
}

}  // namespace rg::chapters::test
