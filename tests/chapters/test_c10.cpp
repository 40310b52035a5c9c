// chapters.c10_*: the sync-vs-async chapter's verdict follows the rule of
// chapters/10_sync_vs_async/README.md from the figures it printed (async/sync throughput >= 1.5x;
// the roller coaster's swing >= 3x sync's and the one-worker control's; async's final loss <= 1.5x
// sync's); it wrote its pictures, the per-rank timelines among them, and what they show holds (sync's
// punctual ranks wait for the straggler most of the traced steps; async's fast workers push more
// gradients than it meanwhile); with --no-straggler the throughput part, and the verdict, flip.
#include <algorithm>
#include <vector>

#include "chapter_files.h"
#include "run_chapter.h"

namespace rg::chapters::test {

namespace {

struct Figures {
  double speedup, coaster_swing, sync_swing, alone_swing, async_loss, sync_loss;
};

// The verdict, recomputed from its own details by the README's rule.
Figures check_rule(const ChapterRun& run) {
  INFO(run.output);
  const Verdict verdict = finished_verdict(run, "C10");
  const Figures f{number_after(verdict.details, "async/sync throughput "),
                  number_after(verdict.details, "roller coaster "),
                  number_after(verdict.details, " vs sync "),
                  number_after(verdict.details, "one worker "),
                  number_after(verdict.details, "final loss: async "),
                  number_after(verdict.details.substr(verdict.details.find("final loss")), " vs sync ")};
  const bool faster = f.speedup >= 1.5;
  const bool swings = f.coaster_swing >= 3 * std::max(f.sync_swing, f.alone_swing);
  const bool fine = f.async_loss <= 1.5 * f.sync_loss;
  CHECK(verdict.confirmed == (faster && swings && fine));
  // The table has every run; the staleness bound held.
  for (const char* row : {"\nsync DDP ", "\nasync ", "\nSSP s=1 ", "\nasync, k=1, lr ", "\none worker, k=1, lr "})
    CHECK(run.output.find(row) != std::string::npos);
  CHECK(number_after(verdict.details, "SSP s=1 ") <= 2);  // s = 1, k = workers: at most 2s
  return f;
}

}  // namespace

TEST_CASE("chapters.c10_sync_vs_async", "[chapters]") {
  const rg::test::TempDir out("c10");
  const ChapterRun run = run_chapter("10_sync_vs_async", "--quick --out " + out.path.string());
  INFO(run.output);
  CHECK(run.output.find("backend: local, 5 rank-threads") != std::string::npos);
  CHECK(run.output.find("rank 4 sleeps 20 ms before each step") != std::string::npos);
  const Figures f = check_rule(run);
  CHECK(f.speedup >= 1.5);
  CHECK(last_verdict(run.output).confirmed);
  for (const char* svg : {"loss.svg", "throughput.svg", "staleness.svg", "timeline_sync.svg", "timeline_async.svg"})
    CHECK(is_whole_svg(out.path / svg));
  // The timelines: DDP's punctual ranks spend most of steps 1-3 waiting for the straggler (its
  // step agreement and all-reduce); in as many ms each fast async worker pushes more than it.
  CHECK(number_after(run.output, "ranks 0-3 waited for the other ranks ") >= 50);
  const std::string pushed = "gradients pushed by ranks 1-4: ";
  const size_t at = run.output.find(pushed);
  REQUIRE(at != std::string::npos);
  const std::string counts = run.output.substr(at + pushed.size());
  const std::vector<double> pushes = numbers_in(counts.substr(0, counts.find(';')));
  REQUIRE(pushes.size() == 4);
  CHECK(*std::min_element(pushes.begin(), pushes.end() - 1) > pushes.back());
  const std::string sync_svg = rg::test::read_text(out.path / "timeline_sync.svg");
  const std::string async_svg = rg::test::read_text(out.path / "timeline_async.svg");
  for (const char* label : {">rank 4 (straggler)<", ">agree<", ">straggler<"})
    CHECK(sync_svg.find(label) != std::string::npos);
  for (const char* label : {">rank 0 (server)<", ">push<", ">pull<"}) CHECK(async_svg.find(label) != std::string::npos);
}

TEST_CASE("chapters.c10_sync_vs_async_mpi", "[chapters]") {
  const rg::test::TempDir out("c10_mpi");
  const ChapterRun run = run_chapter("10_sync_vs_async", "--quick --out " + out.path.string(), 4);
  INFO(run.output);
  CHECK(run.output.find("backend: mpi, 4 processes") != std::string::npos);
  CHECK(run.output.find("async: rank 0 serves, 3 workers") != std::string::npos);
  check_rule(run);
  for (const char* svg : {"loss.svg", "timeline_sync.svg", "timeline_async.svg"}) CHECK(is_whole_svg(out.path / svg));
}

TEST_CASE("chapters.c10_sync_vs_async_flips", "[chapters]") {
  const rg::test::TempDir out("c10_flips");
  const ChapterRun run = run_chapter("10_sync_vs_async", "--quick --no-straggler --out " + out.path.string());
  INFO(run.output);
  CHECK(run.output.find("--no-straggler: every rank at full speed") != std::string::npos);
  const Figures f = check_rule(run);
  CHECK(f.speedup < 1.5);  // without a straggler, sync loses nothing by waiting
  CHECK_FALSE(last_verdict(run.output).confirmed);
}

}  // namespace rg::chapters::test
