#include "tests/client/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/ctl/exec_image.h"
#include "client/lease_timer.h"

namespace leasekeeper::client::testing {

std::string BinaryDirectory() {
  char buffer[4096];
  const ssize_t n = readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  if (n <= 0) return ".";
  std::string path(buffer, static_cast<size_t>(n));
  return path.substr(0, path.rfind('/'));
}

absl::StatusOr<Subprocess> Subprocess::Start(
    const std::vector<std::string>& argv,
    const std::vector<std::pair<std::string, std::string>>& environment) {
  const ctl::ExecImage image(argv, environment);
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  const pid_t pid = fork();
  if (pid < 0) {
    return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execve(image.argv()[0], image.argv(), image.envp());
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  return Subprocess(pid, out[0], err[0]);
}

Subprocess::Subprocess(pid_t pid, int out_fd, int err_fd)
    : pid_(pid), out_fd_(out_fd), err_fd_(err_fd) {}

Subprocess::Subprocess(Subprocess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      out_fd_(std::exchange(other.out_fd_, -1)),
      err_fd_(std::exchange(other.err_fd_, -1)),
      out_(std::move(other.out_)),
      err_(std::move(other.err_)),
      scanned_lines_(other.scanned_lines_),
      exit_code_(other.exit_code_) {}

Subprocess::~Subprocess() {
  if (pid_ > 0 && !exit_code_.has_value()) {
    kill(pid_, SIGKILL);
    int status;
    waitpid(pid_, &status, 0);
  }
  if (out_fd_ >= 0) close(out_fd_);
  if (err_fd_ >= 0) close(err_fd_);
}

bool Subprocess::Pump(absl::Duration timeout) {
  pollfd fds[2] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}};
  const int n = poll(fds, 2,
                     static_cast<int>(absl::ToInt64Milliseconds(
                         std::max(timeout, absl::ZeroDuration()))));
  if (n <= 0) return false;
  bool any = false;
  for (int i = 0; i < 2; ++i) {
    if ((fds[i].revents & (POLLIN | POLLHUP)) == 0) continue;
    char buffer[4096];
    const ssize_t got = read(fds[i].fd, buffer, sizeof(buffer));
    if (got > 0) {
      (i == 0 ? out_ : err_).append(buffer, static_cast<size_t>(got));
      any = true;
    } else if (got == 0) {
      close(fds[i].fd);
      (i == 0 ? out_fd_ : err_fd_) = -1;
    }
  }
  return any;
}

std::optional<std::string> Subprocess::WaitForLine(absl::string_view needle,
                                                   absl::Duration timeout) {
  const MonotonicTime deadline = MonotonicNow() + timeout;
  while (true) {
    std::vector<std::string> lines = absl::StrSplit(out_, '\n');
    // The last element is an incomplete line (or empty).
    for (size_t i = scanned_lines_; i + 1 < lines.size(); ++i) {
      if (absl::StrContains(lines[i], needle)) {
        scanned_lines_ = i + 1;
        return lines[i];
      }
    }
    if (out_fd_ < 0) return std::nullopt;
    const absl::Duration left = deadline - MonotonicNow();
    if (left <= absl::ZeroDuration()) return std::nullopt;
    Pump(std::min(left, absl::Milliseconds(50)));
  }
}

void Subprocess::Signal(int signal) {
  if (pid_ > 0 && !exit_code_.has_value()) kill(pid_, signal);
}

ProcessResult Subprocess::Wait(absl::Duration timeout) {
  const MonotonicTime deadline = MonotonicNow() + timeout;
  while (!exit_code_.has_value()) {
    int status = 0;
    const pid_t done = waitpid(pid_, &status, WNOHANG);
    if (done == pid_) {
      exit_code_ = ctl::ShellExitCode(status);
      break;
    }
    if (MonotonicNow() >= deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      exit_code_ = 128 + SIGKILL;
      break;
    }
    Pump(absl::Milliseconds(20));
  }
  // Drain what is left (the pipes close when every writer is gone).
  const MonotonicTime drain_deadline = MonotonicNow() + absl::Seconds(2);
  while ((out_fd_ >= 0 || err_fd_ >= 0) && MonotonicNow() < drain_deadline) {
    Pump(absl::Milliseconds(20));
  }
  return ProcessResult{*exit_code_, out_, err_};
}

ProcessResult RunProcess(
    const std::vector<std::string>& argv,
    const std::vector<std::pair<std::string, std::string>>& environment,
    absl::Duration timeout) {
  absl::StatusOr<Subprocess> process = Subprocess::Start(argv, environment);
  if (!process.ok()) {
    return ProcessResult{-1, "", std::string(process.status().message())};
  }
  return process->Wait(timeout);
}

}  // namespace leasekeeper::client::testing
