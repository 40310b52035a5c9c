// Helpers for the chapters' tests: run a chapter's program (under mpiexec when asked), read
// its verdict line and the numbers in it. A chapter's test checks that the verdict follows
// from the figures it printed, by the rule the chapter's README states.
#pragma once
#include <catch2/catch.hpp>

#include <regex>
#include <string>
#include <vector>

#include "chapter_index.h"
#include "run_command.h"
#include "temp_dir.h"

namespace rg::chapters::test {

using ChapterRun = rg::test::CommandRun;

inline ChapterRun run_chapter(const std::string& name, const std::string& args, int mpi_ranks = 0);

struct Verdict {
  std::string claim;      // "C02"
  bool confirmed = false;
  std::string details;    // what follows the dash
  bool found = false;
};

// The verdict on the output's last non-empty line: "verdict C02: confirmed — <details>".
inline Verdict last_verdict(const std::string& output) {
  static const std::regex line(R"(verdict (C[0-9]{2}): (confirmed|not reproduced) — (.*))");
  const size_t end = output.find_last_not_of('\n');
  if (end == std::string::npos) return {};
  const size_t start = output.rfind('\n', end);
  const std::string last = output.substr(start == std::string::npos ? 0 : start + 1, end - (start == std::string::npos ? 0 : start + 1) + 1);
  std::smatch m;
  if (!std::regex_match(last, m, line)) return {};
  return {m[1], m[2] == "confirmed", m[3], true};
}

// A chapter's plain --quick run (local backend, no flag but --out) gives the verdict its row of
// the index records (chapters/README.md): the check rides on the chapter tests' own runs. Not
// for a verdict that rests on timings (chapter_index.h says why).
inline void check_against_index(const std::string& name, const std::string& args, const ChapterRun& run) {
  static const std::regex plain_quick(R"(--quick( --out \S+)?)");
  if (!std::regex_match(args, plain_quick) || verdict_rests_on_timings(name)) return;
  const std::string recorded = index_verdict(name);  // none: chapters.index_lists_every_chapter fails instead
  const Verdict verdict = last_verdict(run.output);
  if (recorded.empty() || !verdict.found) return;
  INFO("chapters/README.md records '" << recorded << "' for " << name << "; its --quick run printed: " << run.output);
  CHECK((verdict.confirmed ? "confirmed" : "not reproduced") == recorded);
}

// Runs build/bin/chapter_<name> with `args`; with mpi_ranks > 0 under mpiexec as that many
// processes (--oversubscribe, allowed as root), so the chapter picks the mpi backend itself.
inline ChapterRun run_chapter(const std::string& name, const std::string& args, int mpi_ranks) {
  std::string command = (rg::test::bin_dir() / ("chapter_" + name)).string() + " " + args;
  if (mpi_ranks > 0)
    command = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " + std::string(RINGGRAD_MPIEXEC) + " -n " +
              std::to_string(mpi_ranks) + " --oversubscribe " + command;
  ChapterRun run = rg::test::run_command(command);
  if (mpi_ranks == 0) check_against_index(name, args, run);
  return run;
}

// The verdict of a run that must have finished (exit code 0) with a verdict line for `claim`.
inline Verdict finished_verdict(const ChapterRun& run, const std::string& claim) {
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  const Verdict verdict = last_verdict(run.output);
  REQUIRE(verdict.found);
  CHECK(verdict.claim == claim);
  return verdict;
}

// Every number in `text`, in order ("loss 0.31 -> 0.12, 87.5%" gives 0.31, 0.12, 87.5).
inline std::vector<double> numbers_in(const std::string& text) {
  static const std::regex number(R"([-+]?(?:[0-9]*\.[0-9]+|[0-9]+)(?:[eE][-+]?[0-9]+)?)");
  std::vector<double> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), number); it != std::sregex_iterator(); ++it)
    out.push_back(std::stod(it->str()));
  return out;
}

// The number right after `label` in `text` (e.g. "max |diff| " in "... max |diff| 3e-08 ..."); NaN if absent.
inline double number_after(const std::string& text, const std::string& label) {
  const size_t at = text.find(label);
  if (at == std::string::npos) return std::nan("");
  const auto found = numbers_in(text.substr(at + label.size()));
  return found.empty() ? std::nan("") : found.front();
}

}  // namespace rg::chapters::test
