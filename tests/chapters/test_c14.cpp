// chapters.c14_*: a hand edit of one replica's parameter after wrapping leaves the replicas
// apart at every later step and ruins the training; DDP's check (check_every), the debug
// switch and the replaced-parameter check each catch it naming '3.weight' and the edited rank
// (the rule of chapters/14_edit_after_wrap/README.md). With --no-check nothing catches it: the verdict flips.
#include "run_chapter.h"

namespace rg::chapters::test {

namespace {

// --quick: the edit right after step 5, check_every 5, 2 ranks (rank 1 edits).
void check_caught(const ChapterRun& run) {
  INFO(run.output);
  const Verdict verdict = finished_verdict(run, "C14");
  CHECK(verdict.confirmed);
  CHECK(number_after(verdict.details, "max |diff| at the end ") > 0);
  CHECK(number_after(verdict.details, "at the end: rank 0 ") > 2 * number_after(verdict.details, "without the edit "));
  CHECK(number_after(verdict.details, "check_every 5: caught at forward ") == 10);
  CHECK(number_after(verdict.details, "debug switch: caught at forward ") == 6);
  CHECK(number_after(verdict.details, "replaced parameter: caught at forward ") == 6);
  CHECK(run.output.find("parameter '3.weight' differs across replicas: rank 0 (sum") != std::string::npos);
  CHECK(run.output.find("rank 1: parameter '3.weight' was replaced by another Variable after wrapping: the model "
                        "no longer holds the wrapped Variables") != std::string::npos);
}

}  // namespace

TEST_CASE("chapters.c14_edit_after_wrap", "[chapters]") {
  const ChapterRun run = run_chapter("14_edit_after_wrap", "--quick");
  CHECK(run.output.find("backend: local, 2 rank-threads") != std::string::npos);
  check_caught(run);
}

TEST_CASE("chapters.c14_edit_after_wrap_mpi", "[chapters]") {
  const ChapterRun run = run_chapter("14_edit_after_wrap", "--quick", 2);
  CHECK(run.output.find("backend: mpi, 2 processes") != std::string::npos);
  check_caught(run);
}

TEST_CASE("chapters.c14_edit_after_wrap_flips", "[chapters]") {
  const ChapterRun run = run_chapter("14_edit_after_wrap", "--quick --no-check");
  INFO(run.output);
  const Verdict verdict = finished_verdict(run, "C14");
  CHECK_FALSE(verdict.confirmed);
  CHECK(number_after(verdict.details, "max |diff| at the end ") > 0);  // the replicas are still apart ...
  CHECK(verdict.details.find("check_every 0: not caught") != std::string::npos);  // ... and nobody says so
  CHECK(verdict.details.find("debug switch: not caught") != std::string::npos);
}

}  // namespace rg::chapters::test
