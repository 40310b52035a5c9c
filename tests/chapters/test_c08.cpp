// chapters.c08_*: the ring all-reduce is exact for any N and any length (the rule of
// chapters/08_ring_allreduce/README.md); with --wrong-chunk the chapter's own ring sends one
// chunk too far along in the reduce-scatter and the verdict flips.
#include "run_chapter.h"

namespace rg::chapters::test {

namespace {

void check_confirmed(const ChapterRun& run) {
  INFO(run.output);
  const Verdict verdict = finished_verdict(run, "C08");
  CHECK(verdict.confirmed);
  CHECK(number_after(verdict.details, "not divisible by N): ") == 0);
  CHECK(number_after(verdict.details, "the chapter's ring: ") == 0);
  CHECK(verdict.details.find("same chunks as the library's at every step: yes") != std::string::npos);
  CHECK(verdict.details.find("in every chunk: yes") != std::string::npos);
  // The trace shows who sends which chunk, step by step, and the replay agrees with the values sent.
  CHECK(run.output.find("reduce-scatter step 1/3  rank 0: sends chunk 3 [7,10) { 1 1 1 } to rank 1") != std::string::npos);
  CHECK(run.output.find("the values sent agree: yes") != std::string::npos);
}

}  // namespace

TEST_CASE("chapters.c08_ring_allreduce", "[chapters]") {
  const ChapterRun run = run_chapter("08_ring_allreduce", "--quick");
  CHECK(run.output.find("backend: local, 5 rank-threads") != std::string::npos);
  check_confirmed(run);
  CHECK(number_after(last_verdict(run.output).details, "for N = ") == 1);  // N = 1, 2, ...
}

TEST_CASE("chapters.c08_ring_allreduce_mpi", "[chapters]") {
  const ChapterRun run = run_chapter("08_ring_allreduce", "--quick", 4);
  CHECK(run.output.find("backend: mpi, 4 processes") != std::string::npos);
  check_confirmed(run);
}

TEST_CASE("chapters.c08_ring_allreduce_flips", "[chapters]") {
  const ChapterRun run = run_chapter("08_ring_allreduce", "--quick --wrong-chunk");
  INFO(run.output);
  const Verdict verdict = finished_verdict(run, "C08");
  CHECK_FALSE(verdict.confirmed);
  CHECK(number_after(verdict.details, "not divisible by N): ") == 0);  // the library's ring is untouched
  CHECK(number_after(verdict.details, "the chapter's ring: ") > 0);
  CHECK(verdict.details.find("same chunks as the library's at every step: no") != std::string::npos);
}

}  // namespace rg::chapters::test
