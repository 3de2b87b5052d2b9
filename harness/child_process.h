// ChildProcess: a program started with its stdout on a pipe, killed
// (SIGKILL) and reaped with this object, and dying with the process that
// started it (PR_SET_PDEATHSIG). For tests and benchmarks that run real
// daemons; nothing in it fails a test.
//
// Thread-safety: an object belongs to one thread.
#ifndef LEASEKEEPER_HARNESS_CHILD_PROCESS_H_
#define LEASEKEEPER_HARNESS_CHILD_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace leasekeeper::testing {

class ChildProcess {
 public:
  // Starts `path` with `args` (argv[1..]). Check running().
  ChildProcess(const std::string& path, const std::vector<std::string>& args);
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  // Kills (SIGKILL) and reaps the child if it still runs.
  ~ChildProcess();

  bool running() const { return pid_ > 0 && !exit_status_.has_value(); }
  pid_t pid() const { return pid_; }
  // The next stdout line, waiting at most `timeout`.
  std::optional<std::string> ReadLine(std::chrono::milliseconds timeout);
  void Signal(int signal);
  // The raw wait status once the child exited within `timeout`.
  std::optional<int> WaitExit(std::chrono::milliseconds timeout);

 private:
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::string buffer_;
  std::optional<int> exit_status_;
};

}  // namespace leasekeeper::testing

#endif  // LEASEKEEPER_HARNESS_CHILD_PROCESS_H_
