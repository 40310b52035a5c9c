// What every chapter shares, written once: its command line (--quick, --backend, --workers,
// --out and the chapter's own flags), the world of ranks it runs on (rank-threads of this
// process, or this process's rank under mpirun), and the verdict line it ends with.
// Chapters are read for their own idea; this file is the plumbing around it.
#pragma once
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "parallel/process_group.h"

namespace rg::chapters {

struct Flags {
  bool quick = false;             // seconds, for the tests; else the full run (minutes at most)
  std::string backend = "local";  // local: rank-threads of this process | mpi: under mpirun
  int workers = 0;                // ranks: the chapter's default, or the mpirun world size
  std::filesystem::path out;      // where the chapter writes its pictures and report.html
};

// The chapter's command line. Shared flags come first; a chapter adds its own:
//   Cli cli("chapter_02_data_parallel", "averaged gradients equal the big batch's", 4);
//   bool sum = false;
//   cli.add_flag("--sum", sum, "sum the gradients without dividing by N");
//   Flags flags = cli.parse(argc, argv);
class Cli {
 public:
  Cli(std::string program, std::string description, int default_workers);
  ~Cli();
  void add_flag(const std::string& name, bool& value, const std::string& help);
  void add_option(const std::string& name, int& value, const std::string& help);
  void add_option(const std::string& name, double& value, const std::string& help);
  void add_option(const std::string& name, std::string& value, const std::string& help);
  // Exits the program after --help (0) or a bad flag (2, with one line naming it).
  Flags parse(int argc, char** argv);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Runs fn(group) on every rank: flags.workers rank-threads (local), or this process as one
// rank of the mpirun job (mpi). Rank 0 says which, first.
void run_ranks(const Flags& flags, int argc, char** argv,
               const std::function<void(std::shared_ptr<parallel::ProcessGroup>)>& fn);

// The last line: "verdict C02: confirmed — <details>" or "verdict C02: not reproduced —
// <details>". `confirmed` must come from the chapter's measurements by the rule its README
// states. Writes OUT/report.html first (chapters/common/report_page.h) and names it.
void print_verdict(const std::string& claim, bool confirmed, const std::string& details);

// Runs the chapter, turning an rg::Error into "error: ..." and exit code 1.
int guarded(const std::function<int()>& chapter);

// "1.23e-07", "0.0421", "1234": compact numbers for tables and verdicts.
std::string number(double value, int significant = 3);

// The value as number() prints it. A verdict that compares a printed figure with its threshold
// compares this, so that a reader (and the test) checking the printed line reaches the same
// verdict: 1.2996 prints as "1.3", and "1.3 >= 1.3" must say confirmed.
double as_printed(double value, int significant = 3);

}  // namespace rg::chapters
