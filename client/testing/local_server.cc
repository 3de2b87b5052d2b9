#include "client/testing/local_server.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "client/channel.h"
#include "client/lease_timer.h"

namespace leasekeeper::client::testing {
namespace {

constexpr absl::string_view kListeningPrefix = "leasekeeperd listening on ";
constexpr absl::string_view kLoopbackPrefix = "127.0.0.1:";

bool IsExecutable(const std::string& path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
         access(path.c_str(), X_OK) == 0;
}

std::string DirectoryOfExecutable() {
  char buffer[4096];
  const ssize_t n = readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  if (n <= 0) return ".";
  std::string path(buffer, static_cast<size_t>(n));
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::string DescribeWaitStatus(int status) {
  if (WIFEXITED(status))
    return absl::StrCat("exit status ", WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return absl::StrCat("killed by signal ", WTERMSIG(status));
  return absl::StrCat("wait status ", status);
}

// Waits up to `timeout` for `pid` to exit; its wait status, or nullopt.
std::optional<int> WaitForExit(pid_t pid, absl::Duration timeout) {
  const MonotonicTime deadline = MonotonicNow() + timeout;
  while (true) {
    int status = 0;
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) return status;
    if (done < 0 && errno != EINTR) return 0;  // not our child any more
    if (MonotonicNow() >= deadline) return std::nullopt;
    absl::SleepFor(absl::Milliseconds(5));
  }
}

// leasekeeperd's command line for `options`, at `binary`.
std::vector<std::string> DaemonArguments(const LocalServerOptions& options,
                                         const std::string& binary) {
  std::vector<std::string> args = {
      binary,
      "--listen=127.0.0.1:0",
      absl::StrCat("--session-grace=",
                   absl::ToInt64Milliseconds(options.session_grace), "ms"),
      absl::StrCat("--log-level=", options.log_level),
  };
  // leasekeeperd persists to ./data by default; a test server keeps
  // nothing (and shares no directory) unless the caller names a --data-dir.
  if (std::none_of(options.extra_flags.begin(), options.extra_flags.end(),
                   [](const std::string& flag) {
                     return absl::StartsWith(flag, "--data-dir");
                   })) {
    args.push_back("--data-dir=");
  }
  args.insert(args.end(), options.extra_flags.begin(),
              options.extra_flags.end());
  return args;
}

// A started child process and the read end of a pipe from its stdout.
struct Spawned {
  pid_t pid;
  int stdout_fd;
};

// Starts args[0] (a path) with its stdout into a pipe; the child is killed
// when this process dies. Outcomes: the child; INTERNAL (pipe or fork).
absl::StatusOr<Spawned> SpawnWithStdoutPipe(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    close(out[0]);
    close(out[1]);
    return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  }
  if (pid == 0) {
    // Child: async-signal-safe calls only until exec.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // the parent died already
    dup2(out[1], STDOUT_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(out[1]);
  return Spawned{pid, out[0]};
}

// Reads from `fd` until a newline, end of file (`eof`) or `timeout`;
// what was read. Closes `fd`.
std::string ReadFirstLine(int fd, absl::Duration timeout, bool& eof) {
  std::string line;
  const MonotonicTime deadline = MonotonicNow() + timeout;
  eof = false;
  while (line.find('\n') == std::string::npos && !eof) {
    const absl::Duration left = deadline - MonotonicNow();
    if (left <= absl::ZeroDuration()) break;
    pollfd readable{fd, POLLIN, 0};
    const int ready = poll(
        &readable, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    char buffer[256];
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      eof = true;
      break;
    }
    line.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  return line;
}

// Kills (SIGKILL) a daemon that failed to start; `status` with its exit
// status added if it had ended by itself.
absl::Status KillFailedStart(pid_t pid, const absl::Status& status) {
  kill(pid, SIGKILL);
  std::optional<int> exit = WaitForExit(pid, absl::Seconds(5));
  if (exit.has_value() && !(WIFSIGNALED(*exit) && WTERMSIG(*exit) == SIGKILL)) {
    return absl::InternalError(absl::StrCat(status.message(), " (leasekeeperd ",
                                            DescribeWaitStatus(*exit), ")"));
  }
  return status;
}

}  // namespace

absl::StatusOr<std::string> FindLeasekeeperd() {
  std::vector<std::string> tried;
  if (const char* env = std::getenv("LEASEKEEPERD_BINARY");
      env != nullptr && env[0] != '\0') {
    if (IsExecutable(env)) return std::string(env);
    tried.push_back(absl::StrCat("$LEASEKEEPERD_BINARY=", env));
  }
  const std::string dir = DirectoryOfExecutable();
  for (const std::string& candidate :
       {absl::StrCat(dir, "/leasekeeperd"),
        absl::StrCat(dir, "/../bin/leasekeeperd")}) {
    if (IsExecutable(candidate)) return candidate;
    tried.push_back(candidate);
  }
  return absl::NotFoundError(
      absl::StrCat("no leasekeeperd binary; tried ", absl::StrJoin(tried, ", "),
                   " (build the leasekeeperd target or set "
                   "LEASEKEEPERD_BINARY)"));
}

absl::StatusOr<std::unique_ptr<LocalServer>> LocalServer::Start(
    LocalServerOptions options) {
  for (const std::string& flag : options.extra_flags) {
    if (absl::StartsWith(flag, "--listen")) {
      return absl::InvalidArgumentError(
          "LocalServer picks the address itself; do not pass --listen");
    }
  }
  std::string binary = options.binary;
  if (binary.empty()) {
    absl::StatusOr<std::string> found = FindLeasekeeperd();
    if (!found.ok()) return found.status();
    binary = *found;
  }
  absl::StatusOr<Spawned> spawned =
      SpawnWithStdoutPipe(DaemonArguments(options, binary));
  if (!spawned.ok()) return spawned.status();
  const pid_t pid = spawned->pid;

  // Read "leasekeeperd listening on 127.0.0.1:PORT\n".
  bool eof = false;
  const std::string line =
      ReadFirstLine(spawned->stdout_fd, options.start_timeout, eof);
  const size_t newline = line.find('\n');
  if (newline == std::string::npos) {
    if (eof) {
      return KillFailedStart(
          pid, absl::InternalError(absl::StrCat(
                   binary, " exited without printing its address")));
    }
    return KillFailedStart(
        pid, absl::DeadlineExceededError(
                 absl::StrCat(binary, " did not serve within ",
                              absl::FormatDuration(options.start_timeout))));
  }
  absl::string_view address(line.data(), newline);
  if (!absl::ConsumePrefix(&address, kListeningPrefix) ||
      !absl::StartsWith(address, kLoopbackPrefix)) {
    return KillFailedStart(pid, absl::InternalError(absl::StrCat(
                                    "unexpected first line from leasekeeperd: ",
                                    line.substr(0, newline))));
  }
  int port = 0;
  if (!absl::SimpleAtoi(address.substr(kLoopbackPrefix.size()), &port) ||
      port <= 0) {
    return KillFailedStart(
        pid, absl::InternalError(
                 absl::StrCat("no port in leasekeeperd's address ", address)));
  }
  return std::unique_ptr<LocalServer>(
      new LocalServer(pid, std::string(address), port));
}

LocalServer::LocalServer(pid_t pid, std::string address, int port)
    : pid_(pid), address_(std::move(address)), port_(port) {}

LocalServer::~LocalServer() { (void)Stop(); }

std::shared_ptr<grpc::Channel> LocalServer::NewChannel() const {
  return MakeChannel(address_);
}

absl::Status LocalServer::Stop(absl::Duration grace) {
  if (pid_ < 0) return absl::OkStatus();
  kill(pid_, SIGTERM);
  std::optional<int> status = WaitForExit(pid_, grace);
  if (!status.has_value()) {
    kill(pid_, SIGKILL);
    status = WaitForExit(pid_, absl::Seconds(10));
  }
  pid_ = -1;
  if (status.has_value() && WIFEXITED(*status) && WEXITSTATUS(*status) == 0) {
    return absl::OkStatus();
  }
  return absl::InternalError(absl::StrCat("leasekeeperd did not stop cleanly: ",
                                          status.has_value()
                                              ? DescribeWaitStatus(*status)
                                              : std::string("still running")));
}

void LocalServer::Kill() {
  if (pid_ < 0) return;
  kill(pid_, SIGKILL);
  (void)WaitForExit(pid_, absl::Seconds(10));
  pid_ = -1;
}

}  // namespace leasekeeper::client::testing
