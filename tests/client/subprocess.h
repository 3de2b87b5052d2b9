// Test helper: runs a program as a child process, with its stdout and stderr
// captured, and lets the test wait for a line of its output or kill it.
//
// Thread-safety: one owner per Subprocess.
#ifndef LEASEKEEPER_TESTS_CLIENT_SUBPROCESS_H_
#define LEASEKEEPER_TESTS_CLIENT_SUBPROCESS_H_

#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace leasekeeper::client::testing {

// The directory of the running test binary (build/bin, next to
// leasekeeper-ctl, leasekeeperd and the test helpers).
std::string BinaryDirectory();

struct ProcessResult {
  int exit_code = -1;  // 128 + signal if killed
  std::string out;
  std::string err;
};

class Subprocess {
 public:
  // Starts argv[0] (a path) with `environment` added to this process's.
  static absl::StatusOr<Subprocess> Start(
      const std::vector<std::string>& argv,
      const std::vector<std::pair<std::string, std::string>>& environment = {});

  Subprocess(Subprocess&& other) noexcept;
  Subprocess& operator=(Subprocess&&) = delete;
  // Kills (SIGKILL) and reaps the process if it still runs.
  ~Subprocess();

  pid_t pid() const { return pid_; }

  // Waits up to `timeout` until stdout has a line containing `needle`;
  // returns that line, or nullopt (timeout or end of output).
  std::optional<std::string> WaitForLine(absl::string_view needle,
                                         absl::Duration timeout);

  // Sends `signal` to the process.
  void Signal(int signal);

  // Waits up to `timeout` for the exit; kills it (SIGKILL) if it is still
  // running then. Collects the rest of its output.
  ProcessResult Wait(absl::Duration timeout);

 private:
  Subprocess(pid_t pid, int out_fd, int err_fd);
  // Reads what is available (waiting up to `timeout` for something).
  bool Pump(absl::Duration timeout);

  pid_t pid_;
  int out_fd_;
  int err_fd_;
  std::string out_;
  std::string err_;
  size_t scanned_lines_ = 0;
  std::optional<int> exit_code_;
};

// Runs to completion (killed after `timeout`).
ProcessResult RunProcess(
    const std::vector<std::string>& argv,
    const std::vector<std::pair<std::string, std::string>>& environment = {},
    absl::Duration timeout = absl::Seconds(30));

}  // namespace leasekeeper::client::testing

#endif  // LEASEKEEPER_TESTS_CLIENT_SUBPROCESS_H_
