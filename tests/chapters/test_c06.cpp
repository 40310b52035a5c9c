// chapters.c06_*: the linear-scaling rule (the rule of chapters/06_learning_rate_scaling/README.md),
// recomputed here from the table the chapter prints: confirmed when at some batch above the
// base the scaled run stays within 1 point of the base batch's accuracy while the unscaled
// one is >= 1 point behind it, and at some larger batch the scaled lr does worse than the base
// lr. With --no-scaling the scaled runs keep the base lr: nothing to gain, nothing to break,
// and the verdict flips.
#include <map>
#include <sstream>

#include "chapter_files.h"
#include "run_chapter.h"

namespace rg::chapters::test {

namespace {

struct Row {
  double unscaled, scaled;  // test accuracy (%); a diverged run counts as chance, 10%
  bool holds, breaks;       // as printed
};

double accuracy_cell(const std::string& cell) { return cell == "diverged" ? 10.0 : std::stod(cell); }

// The table's rows by global batch: "batch steps lr none linear no-warm-up holds breaks".
std::map<int64_t, Row> table_of(const std::string& output) {
  static const std::regex row(R"(^\s*(\d+)\s+\d+\s+\S+\s+(\S+)\s+(\S+)\s+\S+\s+(yes|no)\s+(yes|no)\s*$)");
  std::map<int64_t, Row> rows;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_match(line, m, row))
      rows[std::stoll(m[1])] = {accuracy_cell(m[2]), accuracy_cell(m[3]), m[4] == "yes", m[5] == "yes"};
  }
  return rows;
}

// A finished --quick run: the table is whole, its yes/no columns and the verdict follow from
// its accuracies, and the pictures are there. Returns the verdict.
Verdict check_run(const ChapterRun& run, const std::filesystem::path& out) {
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  const Verdict verdict = last_verdict(run.output);
  REQUIRE(verdict.found);
  CHECK(verdict.claim == "C06");
  const std::map<int64_t, Row> rows = table_of(run.output);
  REQUIRE(rows.size() == 4);  // --quick: global batches 32, 128, 512, 2048
  REQUIRE(rows.begin()->first == 32);
  const double base = rows.begin()->second.scaled;
  CHECK(base > 50);
  CHECK(number_after(verdict.details, "base batch 32: ") == Approx(base).margin(0.01));
  int64_t helps_at = 0, breaks_at = 0;
  for (const auto& [batch, r] : rows) {
    INFO("batch " << batch);
    CHECK(r.holds == (base - r.scaled <= 1.0));
    CHECK(r.breaks == (r.scaled < r.unscaled));
    if (batch == 32) continue;
    if (r.holds && r.scaled - r.unscaled >= 1.0 && helps_at == 0) helps_at = batch;
    if (r.breaks && breaks_at == 0) breaks_at = batch;
  }
  CHECK(verdict.confirmed == (helps_at > 0 && breaks_at > helps_at));
  if (breaks_at > 0) CHECK(number_after(verdict.details, "breaks at batch ") == breaks_at);
  for (const char* picture : {"accuracy.svg", "loss.svg"}) {
    INFO(picture);
    CHECK(is_whole_svg(out / picture));
  }
  return verdict;
}

}  // namespace

TEST_CASE("chapters.c06_learning_rate_scaling", "[chapters]") {
  rg::test::TempDir out("c06");
  check_run(run_chapter("06_learning_rate_scaling", "--quick --out " + out.path.string()), out.path);
}

TEST_CASE("chapters.c06_learning_rate_scaling_flips", "[chapters]") {
  rg::test::TempDir out("c06_flips");
  const Verdict scaled = check_run(run_chapter("06_learning_rate_scaling", "--quick --out " + out.path.string()), out.path);
  const ChapterRun removed = run_chapter("06_learning_rate_scaling", "--quick --no-scaling --out " + out.path.string());
  const Verdict unscaled = check_run(removed, out.path);
  INFO(removed.output);
  CHECK(scaled.confirmed);
  CHECK_FALSE(unscaled.confirmed);
  CHECK(unscaled.details.find("scaling helps at no batch") != std::string::npos);
}

}  // namespace rg::chapters::test
