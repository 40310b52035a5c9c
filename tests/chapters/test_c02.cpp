// chapters.c02_*: data parallel equals one device on the whole batch (the rule of
// chapters/02_data_parallel/README.md): gradients and float64 parameters agree to rounding,
// the sum needs lr/N; with --sum (no division by N, same lr) the verdict flips.
#include "run_chapter.h"

namespace rg::chapters::test {

namespace {

// Checks a run that averaged: confirmed, and the figures it printed say why.
void check_confirmed(const ChapterRun& run) {
  INFO(run.output);
  const Verdict verdict = finished_verdict(run, "C02");
  CHECK(verdict.confirmed);
  CHECK(number_after(verdict.details, "whole batch: max |diff| ") <= 1e-12);
  CHECK(number_after(verdict.details, "(float64), ") <= 1e-5);   // the float32 gradient, absolute
  CHECK(number_after(verdict.details, "steps: max |diff| ") <= 1e-9);
  CHECK(number_after(verdict.details, "sum at lr/4: ") <= 1e-9);
  CHECK(number_after(verdict.details, "sum at lr: ") > 1e-3);
}

}  // namespace

TEST_CASE("chapters.c02_data_parallel", "[chapters]") {
  const ChapterRun run = run_chapter("02_data_parallel", "--quick");
  CHECK(run.output.find("backend: local, 4 rank-threads") != std::string::npos);
  check_confirmed(run);
}

TEST_CASE("chapters.c02_data_parallel_mpi", "[chapters]") {
  const ChapterRun run = run_chapter("02_data_parallel", "--quick", 4);
  CHECK(run.output.find("backend: mpi, 4 processes") != std::string::npos);
  check_confirmed(run);
}

TEST_CASE("chapters.c02_data_parallel_flips", "[chapters]") {
  const ChapterRun run = run_chapter("02_data_parallel", "--quick --sum");
  INFO(run.output);
  const Verdict verdict = finished_verdict(run, "C02");
  CHECK_FALSE(verdict.confirmed);
  CHECK(number_after(verdict.details, "whole batch: max |diff| ") > 0.01);  // 4x the gradient
  CHECK(number_after(verdict.details, "steps: max |diff| ") > 1e-3);
}

}  // namespace rg::chapters::test
