// Runs code in a forked child that can start only a few more threads, so tests can watch
// thread creation fail (as `--threads 100000` or a container's process limit make it
// fail). The limit is RLIMIT_NPROC; root ignores it, so a root child first becomes a user
// no other process runs as. The child must not touch state the parent's threads own (the
// default thread pool's workers do not exist in it): use a ThreadPoolScope or a local pool.
// Create a tensor before the fork: the CPU backend's first use sets up OpenBLAS, which may
// start a thread of its own and so take one of the child's few.
#pragma once
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>

namespace rg::test {

struct ChildResult {
  int exit_code = -1;  // the child's exit status, or -1 when it did not exit normally
  std::string output;  // what it wrote to `report`
  bool exact = false;  // the limit allowed exactly `threads` more threads (false: maybe none)
};

// Whether run_with_thread_limit's limit is exact here (as root; call it in the parent: the
// child is no longer root).
inline bool thread_limit_is_exact() { return ::geteuid() == 0; }

// Calls body(report) in a child process in which `threads` more threads may be started
// (at most that many: as a non-root user, whose other processes count too, maybe none),
// and returns its exit code (body's return value) and everything it passed to `report`.
inline ChildResult run_with_thread_limit(
    int threads, const std::function<int(const std::function<void(const std::string&)>&)>& body) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return {};
  const bool root = thread_limit_is_exact();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipe_fds[0]);
    auto report = [&](const std::string& text) { (void)!::write(pipe_fds[1], text.data(), text.size()); };
    // A uid of its own (from the pid, so parallel test processes do not share one): the
    // child is then the only task it owns, and the limit counts threads from 1.
    if (root) {
      const uid_t uid = 200000 + static_cast<uid_t>(::getpid() % 100000);
      if (::setgid(uid) != 0 || ::setuid(uid) != 0) ::_exit(98);
    }
    const rlim_t limit = root ? static_cast<rlim_t>(1 + threads) : 1;
    const rlimit nproc{limit, limit};
    if (::setrlimit(RLIMIT_NPROC, &nproc) != 0) ::_exit(99);
    const int code = body(report);
    ::_exit(code);  // no atexit handlers or static destructors: they belong to the parent
  }
  ::close(pipe_fds[1]);
  ChildResult result;
  result.exact = root;
  char buffer[4096];
  for (ssize_t n; (n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0;)
    result.output.append(buffer, static_cast<size_t>(n));
  ::close(pipe_fds[0]);
  int status = 0;
  if (pid > 0 && ::waitpid(pid, &status, 0) == pid && WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  return result;
}

}  // namespace rg::test
