#include "client/ctl/supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <map>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"

extern char** environ;

namespace leasekeeper::ctl {
namespace {

sigset_t RelayedSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  return set;
}

// argv[0] as execve needs it: a path. Empty if not found in PATH.
std::string ResolveCommand(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  for (absl::string_view dir :
       absl::StrSplit(path != nullptr ? path : "/usr/bin:/bin", ':')) {
    std::string candidate = absl::StrCat(dir.empty() ? "." : dir, "/", name);
    struct stat info;
    if (stat(candidate.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
        access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return "";
}

int ShellExitCode(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

// Hands the terminal to `group` (or back) if this process has it in the
// foreground; SIGTTOU must not stop us while doing so.
void GiveTerminalTo(pid_t group) {
  sigset_t ttou, old;
  sigemptyset(&ttou);
  sigaddset(&ttou, SIGTTOU);
  pthread_sigmask(SIG_BLOCK, &ttou, &old);
  tcsetpgrp(STDIN_FILENO, group);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

}  // namespace

SignalRelay::SignalRelay() {
  sigset_t set = RelayedSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  thread_ = std::thread([this] { Run(); });
}

SignalRelay::~SignalRelay() {
  stopping_.store(true);
  thread_.join();
}

void SignalRelay::Run() {
  const sigset_t set = RelayedSignals();
  while (!stopping_.load()) {
    const timespec poll_interval{0, 100 * 1000 * 1000};
    const int signal_number = sigtimedwait(&set, nullptr, &poll_interval);
    if (signal_number > 0) Deliver(signal_number);
  }
}

void SignalRelay::Deliver(int signal_number) {
  bool interrupt = false;
  {
    absl::MutexLock lock(&mu_);
    last_signal_ = signal_number;
    switch (phase_) {
      case Phase::kNoChild:
        interrupt = true;
        break;
      case Phase::kStarting:
        held_.push_back(signal_number);
        break;
      case Phase::kRunning:
        kill(-child_group_, signal_number);
        break;
    }
  }
  if (interrupt) interrupted_.request_stop();
}

int SignalRelay::last_signal() const {
  absl::MutexLock lock(&mu_);
  return last_signal_;
}

bool SignalRelay::BeginChild() {
  absl::MutexLock lock(&mu_);
  if (interrupted_.stop_requested()) return false;
  phase_ = Phase::kStarting;
  return true;
}

void SignalRelay::ChildStarted(pid_t group) {
  absl::MutexLock lock(&mu_);
  phase_ = Phase::kRunning;
  child_group_ = group;
  for (int signal_number : held_) kill(-group, signal_number);
  held_.clear();
}

void SignalRelay::ChildEnded() {
  absl::MutexLock lock(&mu_);
  phase_ = Phase::kNoChild;
  child_group_ = 0;
  held_.clear();
}

absl::StatusOr<ChildExit> RunChild(
    const std::vector<std::string>& argv,
    const std::vector<std::pair<std::string, std::string>>& environment,
    std::stop_token stop, absl::Duration kill_grace, SignalRelay* relay) {
  ChildExit result;
  const std::string path = ResolveCommand(argv[0]);
  if (path.empty()) {
    result.exit_code = 127;
    result.start_error = absl::StrCat(argv[0], ": command not found");
    return result;
  }

  // Everything the child needs is prepared before fork: after it, only
  // async-signal-safe calls.
  std::map<std::string, std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    absl::string_view text(*entry);
    const size_t equals = text.find('=');
    if (equals == absl::string_view::npos) continue;
    env[std::string(text.substr(0, equals))] =
        std::string(text.substr(equals + 1));
  }
  for (const auto& [name, value] : environment) env[name] = value;
  std::vector<std::string> env_strings;
  for (const auto& [name, value] : env) {
    env_strings.push_back(absl::StrCat(name, "=", value));
  }
  std::vector<char*> envp;
  for (std::string& entry : env_strings) envp.push_back(entry.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> argvp;
  for (std::string& arg : args) argvp.push_back(arg.data());
  argvp.push_back(nullptr);

  if (relay != nullptr && !relay->BeginChild()) {
    return absl::CancelledError("interrupted before the command started");
  }
  const bool own_terminal =
      isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
  // The child reports a failed exec through this pipe (closed on exec).
  int exec_error[2];
  if (pipe2(exec_error, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    close(exec_error[0]);
    close(exec_error[1]);
    if (relay != nullptr) relay->ChildEnded();
    return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  }
  if (pid == 0) {
    close(exec_error[0]);
    setpgid(0, 0);
    if (own_terminal) GiveTerminalTo(getpid());
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(126);
    struct sigaction default_action;
    std::memset(&default_action, 0, sizeof(default_action));
    default_action.sa_handler = SIG_DFL;
    sigaction(SIGPIPE, &default_action, nullptr);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execve(path.c_str(), argvp.data(), envp.data());
    const int error = errno;
    (void)!write(exec_error[1], &error, sizeof(error));
    _exit(error == ENOENT ? 127 : 126);
  }
  setpgid(pid, pid);  // also here, so that kill(-pid) works at once
  if (relay != nullptr) relay->ChildStarted(pid);
  close(exec_error[1]);
  int child_errno = 0;
  ssize_t got;
  do {
    got = read(exec_error[0], &child_errno, sizeof(child_errno));
  } while (got < 0 && errno == EINTR);
  close(exec_error[0]);

  // A reaper thread waits for the child; this thread waits for it or for
  // the stop.
  absl::Mutex mu;
  bool exited = false;
  bool stop_requested = false;
  int wait_status = 0;
  std::thread reaper([&] {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    absl::MutexLock lock(&mu);
    wait_status = status;
    exited = true;
  });
  {
    std::stop_callback on_stop(stop, [&] {
      absl::MutexLock lock(&mu);
      stop_requested = true;
    });
    auto exited_or_stopped = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
      return exited || stop_requested;
    };
    absl::MutexLock lock(&mu);
    mu.Await(absl::Condition(&exited_or_stopped));
  }
  bool signalled = false;
  {
    absl::MutexLock lock(&mu);
    if (!exited) {
      signalled = true;
      kill(-pid, SIGTERM);
      if (!mu.AwaitWithTimeout(absl::Condition(&exited), kill_grace)) {
        kill(-pid, SIGKILL);
        mu.Await(absl::Condition(&exited));
      }
    }
  }
  reaper.join();
  if (relay != nullptr) relay->ChildEnded();
  if (own_terminal) GiveTerminalTo(getpgrp());

  result.exit_code = ShellExitCode(wait_status);
  result.stopped = signalled;
  if (got == sizeof(child_errno)) {
    result.start_error =
        absl::StrCat(argv[0], ": ", std::strerror(child_errno));
  }
  return result;
}

}  // namespace leasekeeper::ctl
