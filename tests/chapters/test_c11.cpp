// chapters.c11_*: a corrupted gradient is caught by DDP's consistency check at the next
// forward, which names the step, the parameter and the rank; a dropped one keeps the replicas
// identical and shows only in the loss (the rule of chapters/11_gradient_faults/README.md).
// With --no-check (check_every = 0) the corruption goes uncaught and the verdict flips.
#include "run_chapter.h"

namespace rg::chapters::test {

namespace {

// --quick: 3 ranks, 30 steps, the fault on rank 2 in step 10.
void check_confirmed(const ChapterRun& run) {
  INFO(run.output);
  const Verdict verdict = finished_verdict(run, "C11");
  CHECK(verdict.confirmed);
  // The check's own message, as printed: step, parameter (the output layer's bias, which
  // bucket 0 holds first) and the odd rank out.
  CHECK(run.output.find("the consistency check stopped the forward of step 11: ") != std::string::npos);
  CHECK(run.output.find("parameter '5.bias' differs across replicas: rank 2 (sum ") != std::string::npos);
  CHECK(run.output.find(") vs the other 2 ranks (sum ") != std::string::npos);
  CHECK(run.output.find("so it happened in step 10 ") != std::string::npos);
  // The figures the verdict follows from.
  CHECK(number_after(verdict.details, "caught at the forward of step ") == 11);
  CHECK(verdict.details.find("naming the step yes, parameter '5.bias' yes, the rank yes") != std::string::npos);
  CHECK(number_after(verdict.details, "max |p_a - p_b| ") > 0.01);  // the corrupted replica, after step 10
  CHECK(number_after(verdict.details, "dropped: the check passed, max |p_a - p_b| ") == 0);
  CHECK(number_after(verdict.details, "loss vs clean max |diff| 0 through step 10, ") > 1e-4);
  CHECK(number_after(verdict.details, "clean: max |p_a - p_b| ") == 0);
}

}  // namespace

TEST_CASE("chapters.c11_gradient_faults", "[chapters]") {
  const ChapterRun run = run_chapter("11_gradient_faults", "--quick");
  CHECK(run.output.find("backend: local, 3 rank-threads") != std::string::npos);
  check_confirmed(run);
}

TEST_CASE("chapters.c11_gradient_faults_mpi", "[chapters]") {
  const ChapterRun run = run_chapter("11_gradient_faults", "--quick", 3);
  CHECK(run.output.find("backend: mpi, 3 processes") != std::string::npos);
  check_confirmed(run);
}

TEST_CASE("chapters.c11_gradient_faults_flips", "[chapters]") {
  const ChapterRun run = run_chapter("11_gradient_faults", "--quick --no-check");
  INFO(run.output);
  const Verdict verdict = finished_verdict(run, "C11");
  CHECK_FALSE(verdict.confirmed);
  // Nothing stops the corrupted run: its replicas stay apart to the end, unnoticed.
  CHECK(run.output.find("differs across replicas") == std::string::npos);
  CHECK(verdict.details.find("corrupted: not caught (no check ran)") != std::string::npos);
  CHECK(number_after(verdict.details, "replicas apart by ") > 0.01);
  CHECK(number_after(verdict.details, "dropped: no check ran, max |p_a - p_b| ") == 0);
}

}  // namespace rg::chapters::test
