// chapters.c03_*: replicas stay bit-identical after every step (the rule of
// chapters/03_replica_consistency/README.md); with --no-broadcast (init_sync off, one rank
// from another seed) the fingerprints differ and the verdict flips.
#include "run_chapter.h"

namespace rg::chapters::test {

namespace {

void check_confirmed(const ChapterRun& run, int ranks) {
  INFO(run.output);
  const Verdict verdict = finished_verdict(run, "C03");
  CHECK(verdict.confirmed);
  CHECK(number_after(verdict.details, "tensors on ") == ranks);
  CHECK(number_after(verdict.details, "differing in ") == 0);
  CHECK(number_after(verdict.details, "broadcast): differing in 0 at worst, max |p_a - p_b| ") == 0);
  // The contrast run without the broadcast: every tensor differs, from the start.
  CHECK(number_after(verdict.details, "without the broadcast: ") > 0);
  CHECK(number_after(verdict.details, "at step 0, ") > 0.01);
  CHECK(run.output.find("DDP's check_consistency() after the last step: passes") != std::string::npos);
}

}  // namespace

TEST_CASE("chapters.c03_replica_consistency", "[chapters]") {
  const ChapterRun run = run_chapter("03_replica_consistency", "--quick");
  CHECK(run.output.find("backend: local, 4 rank-threads") != std::string::npos);
  check_confirmed(run, 4);
}

TEST_CASE("chapters.c03_replica_consistency_mpi", "[chapters]") {
  const ChapterRun run = run_chapter("03_replica_consistency", "--quick", 2);
  CHECK(run.output.find("backend: mpi, 2 processes") != std::string::npos);
  check_confirmed(run, 2);
}

TEST_CASE("chapters.c03_replica_consistency_flips", "[chapters]") {
  const ChapterRun run = run_chapter("03_replica_consistency", "--quick --no-broadcast");
  INFO(run.output);
  const Verdict verdict = finished_verdict(run, "C03");
  CHECK_FALSE(verdict.confirmed);
  CHECK(number_after(verdict.details, "differing in ") > 0);
  CHECK(number_after(verdict.details, "at worst, max |p_a - p_b| ") > 0.01);
  // DDP's own check names the first parameter that differs.
  CHECK(run.output.find("check_consistency: parameter '") != std::string::npos);
}

}  // namespace rg::chapters::test
