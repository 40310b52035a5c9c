// The chapter's report page. What the chapter printed is caught by pointing stdout at a pipe
// whose reader thread passes every byte on to the real stdout and keeps a copy: that catches
// printf and std::cout alike, from every rank-thread, without the chapters printing through
// a special stream.
#include "chapters/common/report_page.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "chapters/common/machine.h"
#include "report/html_page.h"

namespace rg::chapters {

namespace {

void write_all(int fd, const char* bytes, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, bytes, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the terminal went away: the copy for the page goes on
    bytes += n;
    size -= static_cast<size_t>(n);
  }
}

// stdout, copied as it passes. stop() puts the real stdout back and returns the copy.
class StdoutCopy {
 public:
  StdoutCopy() {
    std::cout.flush();
    std::fflush(stdout);
    int pipe_ends[2];
    terminal_ = ::dup(STDOUT_FILENO);
    if (terminal_ < 0 || ::pipe(pipe_ends) != 0) return;  // no copy: the page says so
    ::dup2(pipe_ends[1], STDOUT_FILENO);
    ::close(pipe_ends[1]);
    read_end_ = pipe_ends[0];
    // stdout is a pipe now, which the C library would fully buffer: keep a terminal's lines.
    if (::isatty(terminal_)) std::setvbuf(stdout, nullptr, _IOLBF, 0);
    copier_ = std::thread([this] { copy(); });
  }
  StdoutCopy(const StdoutCopy&) = delete;
  StdoutCopy& operator=(const StdoutCopy&) = delete;
  ~StdoutCopy() { stop(); }

  std::string stop() {
    if (copier_.joinable()) {
      std::cout.flush();
      std::fflush(stdout);
      ::dup2(terminal_, STDOUT_FILENO);  // closes the pipe's only write end: the copier reads EOF
      copier_.join();
      ::close(read_end_);
    }
    if (terminal_ >= 0) ::close(terminal_);
    terminal_ = -1;
    return text_;
  }

 private:
  void copy() {
    char buffer[4096];
    for (;;) {
      const ssize_t n = ::read(read_end_, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      write_all(terminal_, buffer, static_cast<size_t>(n));
      text_.append(buffer, static_cast<size_t>(n));
    }
  }

  int terminal_ = -1;
  int read_end_ = -1;
  std::thread copier_;
  std::string text_;
};

struct Recording {
  std::string program, description, command;
  Flags flags;
  std::filesystem::file_time_type started_files;
  std::chrono::system_clock::time_point started;
  StdoutCopy output;
};

// One chapter per process, so one recording: started by Cli::parse, ended by print_verdict.
std::unique_ptr<Recording>& recording() {
  static std::unique_ptr<Recording> instance;
  return instance;
}

std::string utc_time(std::chrono::system_clock::time_point t) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(t);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S UTC", &utc);
  return text;
}

// The pictures this run saved in OUT, in the order it saved them (older files are a
// previous run's).
std::vector<std::filesystem::path> pictures_since(const std::filesystem::path& out,
                                                  std::filesystem::file_time_type since) {
  std::vector<std::pair<std::filesystem::file_time_type, std::filesystem::path>> found;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(out, error)) {
    if (entry.path().extension() != ".svg") continue;
    const auto written = entry.last_write_time(error);
    if (!error && written >= since) found.emplace_back(written, entry.path());
  }
  std::sort(found.begin(), found.end());
  std::vector<std::filesystem::path> paths;
  for (auto& [written, path] : found) paths.push_back(std::move(path));
  return paths;
}

std::string file_text(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

}  // namespace

void start_report(const std::string& program, const std::string& description, const Flags& flags, int argc,
                  char** argv) {
  auto r = std::make_unique<Recording>();
  r->program = program;
  r->description = description;
  r->flags = flags;
  for (int i = 0; i < argc; ++i) {
    if (i > 0) r->command += ' ';
    r->command += argv[i];
  }
  r->started_files = std::filesystem::file_time_type::clock::now();
  r->started = std::chrono::system_clock::now();
  recording() = std::move(r);
}

std::filesystem::path write_report(const std::string& verdict_line) {
  const std::unique_ptr<Recording> r = std::move(recording());
  if (!r) return {};
  const std::string printed = r->output.stop();
  const double seconds = std::chrono::duration<double>(std::chrono::system_clock::now() - r->started).count();
  report::HtmlPage page(r->program + ": " + r->description);
  page.heading("Verdict").preformatted(verdict_line);
  page.heading("How it ran")
      .facts({{"command", r->command},
              {"mode", r->flags.quick ? "--quick (seconds, what the tests run)" : "full"},
              {"backend", r->flags.backend + ", " + std::to_string(r->flags.workers) + " ranks"},
              {"started", utc_time(r->started)},
              {"took", number(seconds) + " s"},
              {"cores", std::to_string(hardware_cores())},
              {"load average at the end", load_average() + " (1, 5, 15 min)"}});
  const auto pictures = pictures_since(r->flags.out, r->started_files);
  if (!pictures.empty()) page.heading("Pictures");
  for (const auto& path : pictures) page.svg(file_text(path), path.filename().string());
  page.heading("What it printed").preformatted(printed.empty() ? "(nothing was recorded)" : printed);
  page.save(r->flags.out / "report.html");
  return r->flags.out / "report.html";
}

}  // namespace rg::chapters
