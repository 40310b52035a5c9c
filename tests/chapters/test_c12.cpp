// chapters.c12_*: DataParallel against DDP (the rule of chapters/12_dataparallel_vs_ddp/README.md),
// recomputed from the bytes table the chapter prints and its verdict line: DataParallel's
// device 0 handles N - 1 times another device's bytes, DDP's ring ranks each 2 x 2(N-1)/N of
// the MLP's gradient, and the verdict follows from those figures and the copy time. With
// --ddp-star DDP all-reduces through rank 0, its ranks are no longer balanced and the verdict flips.
#include <cmath>
#include <map>
#include <sstream>

#include "chapter_files.h"
#include "run_chapter.h"

namespace rg::chapters::test {

namespace {

// The MLP 784-256-128-10: its parameters, float32, are what DDP all-reduces each step.
constexpr double kGradientKiB = (784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10) * 4 / 1024.0;

struct BytesRow {
  double dp0, dp_other, dp_ratio;
  bool has_ddp;
  double ddp0, ddp_other, ddp_ratio, ddp_spread;
};

// "N  dp0  dp-other  dp-ratio  ddp0|-  ddp-other|-  ddp-ratio|-  spread|-", by N.
std::map<int, BytesRow> bytes_table(const std::string& output) {
  static const std::regex row(
      R"(^\s*(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+|-)\s+([\d.]+|-)\s+([\d.]+|-)\s+([\d.e-]+|-)\s*$)");
  std::map<int, BytesRow> rows;
  std::istringstream lines(output.substr(0, output.find("time per step")));
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (!std::regex_match(line, m, row)) continue;
    const bool ddp = m[5] != "-";
    rows[std::stoi(m[1])] = {std::stod(m[2]),
                             std::stod(m[3]),
                             std::stod(m[4]),
                             ddp,
                             ddp ? std::stod(m[5]) : 0,
                             ddp ? std::stod(m[6]) : 0,
                             ddp ? std::stod(m[7]) : 0,
                             ddp ? std::stod(m[8]) : 0};
  }
  return rows;
}

struct Figures {
  std::map<int, BytesRow> bytes;
  double copies_growth, theta_difference;
};

// A finished --quick run: the tables are whole, the verdict agrees with the rule, the pictures are there.
Figures check_run(const ChapterRun& run, const std::filesystem::path& out, int smallest, int largest) {
  INFO(run.output);
  const Verdict verdict = finished_verdict(run, "C12");
  Figures f{bytes_table(run.output), number_after(verdict.details, "ms per step (x"),
            number_after(verdict.details, "max |theta_DP - theta_DDP| ")};
  REQUIRE(f.bytes.size() == static_cast<size_t>(largest - 1));  // N = 2..largest
  REQUIRE(f.bytes.count(largest) == 1);
  REQUIRE(f.bytes.at(largest).has_ddp);
  CHECK(std::isfinite(f.copies_growth));
  CHECK(f.theta_difference < 1e-4);  // both wrappers train the same model, up to float32 rounding
  bool central = f.bytes.at(largest).dp_ratio >= 2, balanced = true;
  for (const auto& [n, r] : f.bytes) {
    INFO("N = " << n);
    CHECK(r.has_ddp == (n >= smallest));
    central = central && r.dp_ratio >= 0.9 * (n - 1);
    if (r.has_ddp) balanced = balanced && r.ddp_spread <= 0.1;
  }
  CHECK(verdict.confirmed == (central && balanced && f.copies_growth >= 1.3));
  for (const char* picture : {"device0_bytes.svg", "bytes_per_device.svg", "step_time.svg", "dataparallel_phases.svg"}) {
    INFO(picture);
    CHECK(is_whole_svg(out / picture));
  }
  return f;
}

// What must hold exactly with the ring: DataParallel's device 0 copies N - 1 times another
// device's bytes (every copy has it at one end), and each DDP rank sends and receives
// 2(N-1)/N of the gradient (the ring's reduce-scatter, then its all-gather).
void check_exact_bytes(const Figures& f) {
  for (const auto& [n, r] : f.bytes) {
    INFO("N = " << n);
    CHECK(r.dp_ratio == Approx(n - 1).epsilon(1e-3));
    CHECK(r.dp0 == Approx((n - 1) * r.dp_other).epsilon(1e-3));
    if (!r.has_ddp) continue;
    CHECK(r.ddp0 == Approx(2 * 2.0 * (n - 1) / n * kGradientKiB).epsilon(1e-3));
    CHECK(r.ddp_spread < 1e-3);
  }
}

}  // namespace

TEST_CASE("chapters.c12_dataparallel_vs_ddp", "[chapters]") {
  rg::test::TempDir out("c12");
  const ChapterRun run = run_chapter("12_dataparallel_vs_ddp", "--quick --out " + out.path.string());
  CHECK(run.output.find("backend: local, 4 rank-threads") != std::string::npos);
  check_exact_bytes(check_run(run, out.path, 2, 4));
}

TEST_CASE("chapters.c12_dataparallel_vs_ddp_mpi", "[chapters]") {
  rg::test::TempDir out("c12_mpi");
  const ChapterRun run = run_chapter("12_dataparallel_vs_ddp", "--quick --out " + out.path.string(), 3);
  CHECK(run.output.find("backend: mpi, 3 processes") != std::string::npos);
  check_exact_bytes(check_run(run, out.path, 3, 3));  // DDP at the world size only; DataParallel at 2..3
}

TEST_CASE("chapters.c12_dataparallel_vs_ddp_flips", "[chapters]") {
  rg::test::TempDir out("c12_flips");
  const ChapterRun ring = run_chapter("12_dataparallel_vs_ddp", "--quick --out " + out.path.string());
  check_exact_bytes(check_run(ring, out.path, 2, 4));
  const ChapterRun star = run_chapter("12_dataparallel_vs_ddp", "--quick --ddp-star --out " + out.path.string());
  const Figures f = check_run(star, out.path, 2, 4);
  INFO(ring.output);
  INFO(star.output);
  CHECK(last_verdict(ring.output).confirmed);
  CHECK_FALSE(last_verdict(star.output).confirmed);
  // Through rank 0, DDP's rank 0 carries (N - 1) times another rank's bytes, as DataParallel's device 0 does.
  for (int n : {3, 4}) CHECK(f.bytes.at(n).ddp_ratio == Approx(n - 1).epsilon(1e-3));
  CHECK(f.bytes.at(4).ddp_spread > 0.1);
}

}  // namespace rg::chapters::test
