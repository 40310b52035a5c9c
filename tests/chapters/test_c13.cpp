// chapters.c13_*: the lecture's DDP program trains (loss halves, accuracy above 50%), each
// rank's shard is its own, every epoch's order differs from the last, and the replicas end
// identical (the rule of chapters/13_ddp_recipe/README.md); without set_epoch every epoch
// repeats the order and the verdict flips.
#include "run_chapter.h"

namespace rg::chapters::test {

namespace {

// The verdict's figures, checked against the rule the verdict applied.
void check_figures(const Verdict& verdict, bool set_epoch) {
  const double first = number_after(verdict.details, "loss "), last = number_after(verdict.details, "-> ");
  CHECK(last < 0.5 * first);
  CHECK(number_after(verdict.details, "test accuracy ") > 50);
  CHECK(number_after(verdict.details, "shard overlap ") < 0.05);
  CHECK(number_after(verdict.details, "replica max |diff| ") == 0);
  const double repeated = number_after(verdict.details, "epoch order repeated ");
  if (set_epoch) {
    CHECK(repeated < 0.5);
  } else {
    CHECK(repeated == 1);
  }
  CHECK(verdict.confirmed == set_epoch);
}

}  // namespace

TEST_CASE("chapters.c13_ddp_recipe", "[chapters]") {
  const ChapterRun run = run_chapter("13_ddp_recipe", "--quick");
  CHECK(run.output.find("backend: local, 2 rank-threads") != std::string::npos);
  check_figures(finished_verdict(run, "C13"), true);
}

TEST_CASE("chapters.c13_ddp_recipe_mpi", "[chapters]") {
  const ChapterRun run = run_chapter("13_ddp_recipe", "--quick", 2);
  CHECK(run.output.find("backend: mpi, 2 processes") != std::string::npos);
  check_figures(finished_verdict(run, "C13"), true);
}

TEST_CASE("chapters.c13_ddp_recipe_flips", "[chapters]") {
  const ChapterRun run = run_chapter("13_ddp_recipe", "--quick --no-set-epoch");
  INFO(run.output);
  check_figures(finished_verdict(run, "C13"), false);
  // The library notices too, and says so on stderr.
  CHECK(run.output.find("call sampler.set_epoch(epoch) before each epoch") != std::string::npos);
}

}  // namespace rg::chapters::test
