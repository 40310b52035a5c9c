// chapters.c01_*: the single-device loop's --quick run ends confirmed (loss halves,
// accuracy above 5x chance: the rule of chapters/01_single_device/README.md).
#include "run_chapter.h"

namespace rg::chapters::test {

TEST_CASE("chapters.c01_single_device", "[chapters]") {
  const ChapterRun run = run_chapter("01_single_device", "--quick");
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  const Verdict verdict = last_verdict(run.output);
  REQUIRE(verdict.found);
  CHECK(verdict.claim == "C01");
  CHECK(verdict.confirmed);
  const double first = number_after(verdict.details, "loss "), last = number_after(verdict.details, "-> ");
  const double accuracy = number_after(verdict.details, "test accuracy ");
  CHECK(last < 0.5 * first);
  CHECK(accuracy > 50);
}

}  // namespace rg::chapters::test
