// chapters.c05_*: data that are not a random mix (the rule of chapters/05_shuffling/README.md).
// The verdict must follow from the figures it prints: confirmed when (b) the class-sorted order
// and (a) the class-sorted shards with per-device BatchNorm each lose >= 5 test-accuracy points
// against the shuffled run. With --interleave-classes the lists stay unshuffled but mix the
// classes: nothing breaks and the verdict flips.
#include <cmath>

#include "chapter_files.h"
#include "run_chapter.h"

namespace rg::chapters::test {

namespace {

struct Figures {
  double sorted, shards_batchnorm, shards, same_order, shuffled_percent;
};

Figures figures_of(const Verdict& v) {
  return {number_after(v.details, "sorted order "), number_after(v.details, "shards with BatchNorm "),
          number_after(v.details, ", without "), number_after(v.details, "no set_epoch "),
          number_after(v.details, "(shuffled: ")};
}

// A finished --quick run: its verdict agrees with its figures and the pictures are there.
Verdict check_run(const ChapterRun& run, const std::filesystem::path& out) {
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  const Verdict verdict = last_verdict(run.output);
  REQUIRE(verdict.found);
  CHECK(verdict.claim == "C05");
  const Figures f = figures_of(verdict);
  for (double v : {f.sorted, f.shards_batchnorm, f.shards, f.same_order, f.shuffled_percent}) CHECK(std::isfinite(v));
  CHECK(f.shuffled_percent > 50);  // the baseline learned
  CHECK(verdict.confirmed == (f.sorted >= 5 && f.shards_batchnorm >= 5));
  // (c) repeats the first epoch's order: the sampler counts it (--quick runs 2 epochs).
  CHECK(run.output.find("the sampler counted 1 epochs that repeated") != std::string::npos);
  for (const char* picture : {"loss.svg", "loss_batchnorm.svg", "accuracy.svg"}) {
    INFO(picture);
    CHECK(is_whole_svg(out / picture));
  }
  return verdict;
}

}  // namespace

TEST_CASE("chapters.c05_shuffling", "[chapters]") {
  rg::test::TempDir out("c05");
  const ChapterRun run = run_chapter("05_shuffling", "--quick --out " + out.path.string());
  CHECK(run.output.find("backend: local, 2 rank-threads") != std::string::npos);
  check_run(run, out.path);
}

TEST_CASE("chapters.c05_shuffling_mpi", "[chapters]") {
  rg::test::TempDir out("c05_mpi");
  const ChapterRun run = run_chapter("05_shuffling", "--quick --out " + out.path.string(), 2);
  CHECK(run.output.find("backend: mpi, 2 processes") != std::string::npos);
  check_run(run, out.path);
}

TEST_CASE("chapters.c05_shuffling_flips", "[chapters]") {
  rg::test::TempDir out("c05_flips");
  const Verdict sorted = check_run(run_chapter("05_shuffling", "--quick --out " + out.path.string()), out.path);
  const ChapterRun mixed = run_chapter("05_shuffling", "--quick --interleave-classes --out " + out.path.string());
  const Verdict interleaved = check_run(mixed, out.path);
  INFO(mixed.output);
  CHECK(sorted.confirmed);
  CHECK_FALSE(interleaved.confirmed);
  const Figures f = figures_of(interleaved);
  CHECK(f.sorted < 5);
  CHECK(f.shards_batchnorm < 5);
}

}  // namespace rg::chapters::test
