// The chapters' shared plumbing: CLI11 for the flags, the local world or MPI for the ranks.
#include "chapters/common/chapter.h"

#include "chapters/common/report_page.h"
#include "parallel/launch.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>

namespace rg::chapters {

namespace {
// mpirun tells each process the job's size before MPI starts; 0 outside mpirun.
int mpirun_world_size() {
  const auto placement = parallel::mpirun_placement();
  return placement ? placement->world_size : 0;
}
}  // namespace

struct Cli::Impl {
  CLI::App app;
  Flags flags;
  std::string out;
};

Cli::Cli(std::string program, std::string description, int default_workers) : impl_(std::make_unique<Impl>()) {
  impl_->app.name(std::move(program));
  impl_->app.description(std::move(description));
  impl_->flags.workers = default_workers;
  impl_->flags.backend = mpirun_world_size() > 0 ? "mpi" : "local";
  impl_->out = "runs/" + impl_->app.get_name();
  impl_->app.add_flag("--quick", impl_->flags.quick, "a few seconds (what the tests run)");
  impl_->app.add_option("--backend", impl_->flags.backend, "local (rank-threads of this process) | mpi (under mpirun)")
      ->check(CLI::IsMember({"local", "mpi"}))
      ->capture_default_str();
  impl_->app.add_option("--workers", impl_->flags.workers, "ranks of the local world")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  impl_->app.add_option("--out", impl_->out, "folder for the pictures")->capture_default_str();
}

Cli::~Cli() = default;

void Cli::add_flag(const std::string& name, bool& value, const std::string& help) {
  impl_->app.add_flag(name, value, help);
}
void Cli::add_option(const std::string& name, int& value, const std::string& help) {
  impl_->app.add_option(name, value, help)->capture_default_str();
}
void Cli::add_option(const std::string& name, double& value, const std::string& help) {
  impl_->app.add_option(name, value, help)->capture_default_str();
}
void Cli::add_option(const std::string& name, std::string& value, const std::string& help) {
  impl_->app.add_option(name, value, help)->capture_default_str();
}

Flags Cli::parse(int argc, char** argv) {
  try {
    impl_->app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::exit(impl_->app.exit(e) == 0 ? 0 : 2);
  }
  Flags flags = impl_->flags;
  if (flags.backend == "mpi") {
    if (mpirun_world_size() == 0) {
      std::cerr << "error: --backend mpi: run the chapter under mpirun (mpirun -n 4 " << impl_->app.get_name()
                << ")" << std::endl;
      std::exit(2);
    }
    flags.workers = mpirun_world_size();
  }
  flags.out = impl_->out;
  std::filesystem::create_directories(flags.out);
  start_report(impl_->app.get_name(), impl_->app.get_description(), flags, argc, argv);
  return flags;
}

void run_ranks(const Flags& flags, int argc, char** argv,
               const std::function<void(std::shared_ptr<parallel::ProcessGroup>)>& fn) {
  if (flags.backend == "local") std::printf("backend: local, %d rank-threads in one process\n", flags.workers);
  parallel::run_world({.group = {.backend = flags.backend}, .local_world_size = flags.workers}, argc, argv,
                      [&](std::shared_ptr<parallel::ProcessGroup> pg) {
                        if (flags.backend == "mpi" && pg->rank() == 0)
                          std::printf("backend: mpi, %d processes\n", pg->size());
                        fn(pg);
                      });
}

void print_verdict(const std::string& claim, bool confirmed, const std::string& details) {
  const std::string verdict =
      "verdict " + claim + ": " + (confirmed ? "confirmed" : "not reproduced") + " — " + details;
  const std::filesystem::path page = write_report(verdict);
  if (!page.empty()) std::printf("report: %s\n", page.string().c_str());
  std::printf("%s\n", verdict.c_str());
  std::fflush(stdout);
}

int guarded(const std::function<int()>& chapter) {
  try {
    return chapter();
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << std::endl;
    return 1;
  }
}

std::string number(double value, int significant) {
  std::ostringstream out;
  out.precision(significant);
  out << value;
  return out.str();
}

double as_printed(double value, int significant) { return std::stod(number(value, significant)); }

}  // namespace rg::chapters
