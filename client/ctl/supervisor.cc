#include "client/ctl/supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdint>
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

// ---- The supervisor (see supervisor.h). It is a fork of a multi-threaded
// process, so everything from here to its _exit is async-signal-safe: system
// calls on memory prepared before the fork, no allocation, no locks.

// The ctl asks the supervisor to stop the command with this byte. The
// supervisor sends the command's pid (pid_t; minus errno if fork failed),
// then its wait status (int) once the command and its descendants are gone.
// End of file means the other side is gone.
constexpr char kStopByte = 'T';

struct SupervisorPlan {
  const char* path;
  char* const* argv;
  char* const* envp;
  bool own_terminal;
  int channel;     // the supervisor's end of the socket pair
  int exec_error;  // the command writes a failed execve's errno here
  pid_t ctl;
  int64_t kill_grace_ms;
};

int64_t MonotonicMs() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<int64_t>(now.tv_sec) * 1000 + now.tv_nsec / 1'000'000;
}

// False if the peer is gone.
bool SendAll(int fd, const void* data, size_t size) {
  const char* next = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t sent = send(fd, next, size, MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent <= 0) return false;
    next += sent;
    size -= static_cast<size_t>(sent);
  }
  return true;
}

// False on end of file before `size` bytes.
bool ReceiveAll(int fd, void* data, size_t size) {
  char* next = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t got = recv(fd, next, size, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    next += got;
    size -= static_cast<size_t>(got);
  }
  return true;
}

void CloseRange(int first, int last) {
  if (first > last) return;
  if (close_range(static_cast<unsigned>(first), static_cast<unsigned>(last),
                  0) == 0) {
    return;
  }
  rlimit limit;
  int end = 1 << 16;
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 &&
      limit.rlim_cur != RLIM_INFINITY) {
    end = static_cast<int>(std::min<rlim_t>(limit.rlim_cur, 1 << 20));
  }
  for (int fd = first; fd <= last && fd < end; ++fd) close(fd);
}

// Closes every descriptor above stderr but `a` and `b`: the ctl's sockets
// (its gRPC connection) must close when the ctl dies, not live on here.
void CloseAllBut(int a, int b) {
  const int low = std::min(a, b);
  const int high = std::max(a, b);
  constexpr int kFirst = STDERR_FILENO + 1;
  CloseRange(kFirst, low - 1);
  CloseRange(std::max(low + 1, kFirst), high - 1);
  CloseRange(std::max(high + 1, kFirst), INT_MAX);
}

// Sends `signal_number` to each child of this process outside `group`:
// descendants that left the command's group and came to this subreaper
// when their parent died. Nothing if /proc/thread-self/children is missing.
void SignalChildrenOutside(pid_t group, int signal_number) {
  const int fd = open("/proc/thread-self/children", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  auto signal_child = [&](pid_t child) {
    if (child != group && getpgid(child) != group) kill(child, signal_number);
  };
  char buffer[4096];
  pid_t child = 0;
  bool in_number = false;
  while (true) {
    const ssize_t got = read(fd, buffer, sizeof(buffer));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    for (ssize_t i = 0; i < got; ++i) {
      if (buffer[i] >= '0' && buffer[i] <= '9') {
        child = child * 10 + (buffer[i] - '0');
        in_number = true;
      } else if (in_number) {
        signal_child(child);
        child = 0;
        in_number = false;
      }
    }
  }
  if (in_number) signal_child(child);
  close(fd);
}

// The command, in the supervisor's child: its own group (and the
// terminal), killed if the supervisor dies, then execve.
[[noreturn]] void ExecCommand(const SupervisorPlan& plan, pid_t supervisor) {
  setpgid(0, 0);
  if (plan.own_terminal) GiveTerminalTo(getpid());
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != supervisor) _exit(126);
  struct sigaction default_action;
  std::memset(&default_action, 0, sizeof(default_action));
  default_action.sa_handler = SIG_DFL;
  sigaction(SIGPIPE, &default_action, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  execve(plan.path, plan.argv, plan.envp);
  const int error = errno;
  (void)!write(plan.exec_error, &error, sizeof(error));
  _exit(error == ENOENT ? 127 : 126);
}

[[noreturn]] void Supervise(const SupervisorPlan& plan) {
  setpgid(0, 0);
  sigset_t all;
  sigfillset(&all);
  sigprocmask(SIG_SETMASK, &all, nullptr);
  CloseAllBut(plan.channel, plan.exec_error);
  prctl(PR_SET_NAME, "run-supervisor");
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  // The ctl died before the prctl took effect: start nothing.
  if (getppid() != plan.ctl) _exit(0);
  sigset_t wanted;
  sigemptyset(&wanted);
  sigaddset(&wanted, SIGCHLD);
  sigaddset(&wanted, SIGTERM);
  // Without a signalfd the loop polls (kSignalPollMs) instead.
  const int signals = signalfd(-1, &wanted, SFD_CLOEXEC | SFD_NONBLOCK);
  constexpr int kSignalPollMs = 50;

  const pid_t self = getpid();
  const pid_t job = fork();
  if (job == 0) {
    close(plan.channel);
    if (signals >= 0) close(signals);
    ExecCommand(plan, self);
  }
  if (job < 0) {
    const pid_t error = -errno;
    SendAll(plan.channel, &error, sizeof(error));
    _exit(0);
  }
  setpgid(job, job);  // also here, so that kill(-job) works at once
  close(plan.exec_error);
  // The command's output and terminal must not stay open because of us.
  const int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null_fd >= 0) {
    for (int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) {
      if (fd != plan.channel) dup2(null_fd, fd);
    }
    if (null_fd > STDERR_FILENO) close(null_fd);
  }
  SendAll(plan.channel, &job, sizeof(job));

  bool ctl_gone = false;
  bool stopping = false;
  bool killed = false;
  int job_status = 0;
  int64_t kill_at = 0;
  // SIGCONT after the SIGTERM: a stopped process (Ctrl-Z, SIGSTOP) would
  // hold the SIGTERM pending until the SIGKILL.
  auto stop = [&] {
    if (stopping) return;
    stopping = true;
    for (int signal_number : {SIGTERM, SIGCONT}) {
      kill(-job, signal_number);
      SignalChildrenOutside(job, signal_number);
    }
    kill_at = MonotonicMs() + plan.kill_grace_ms;
  };
  while (true) {
    // Reap what exited. The command is peeked at before it is reaped, so
    // that its zombie still holds the group's id while the group is
    // signalled.
    bool childless = false;
    while (true) {
      siginfo_t info;
      std::memset(&info, 0, sizeof(info));
      if (waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
        if (errno == EINTR) continue;
        childless = true;
        break;
      }
      if (info.si_pid == 0) break;
      if (info.si_pid == job) stop();
      int status = 0;
      while (waitpid(info.si_pid, &status, 0) < 0 && errno == EINTR) {
      }
      if (info.si_pid == job) job_status = status;
    }
    if (childless) break;  // the command was a child, so it is reaped too

    const int64_t now = MonotonicMs();
    if (stopping && !killed && now >= kill_at) {
      killed = true;
      kill(-job, SIGKILL);
    }
    // Descendants outside the group keep coming as their parents die.
    if (killed) SignalChildrenOutside(job, SIGKILL);
    int timeout_ms = -1;
    if (stopping && !killed) {
      timeout_ms = static_cast<int>(std::min<int64_t>(kill_at - now, INT_MAX));
    }
    if (killed || signals < 0) {
      timeout_ms = timeout_ms < 0 ? kSignalPollMs
                                  : std::min(timeout_ms, kSignalPollMs);
    }
    pollfd fds[2] = {{ctl_gone ? -1 : plan.channel, POLLIN, 0},
                     {signals, POLLIN, 0}};
    if (poll(fds, 2, timeout_ms) <= 0) continue;
    if (fds[0].revents != 0) {
      char bytes[16];
      const ssize_t got = recv(plan.channel, bytes, sizeof(bytes), 0);
      if (got > 0) {
        if (std::memchr(bytes, kStopByte, static_cast<size_t>(got))) stop();
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        ctl_gone = true;
        stop();
      }
    }
    if (fds[1].revents != 0) {
      signalfd_siginfo received;
      while (read(signals, &received, sizeof(received)) ==
             static_cast<ssize_t>(sizeof(received))) {
        if (received.ssi_signo == SIGTERM) stop();  // the ctl died
      }
    }
  }
  SendAll(plan.channel, &job_status, sizeof(job_status));
  _exit(0);
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

  // Everything the supervisor and the command need is prepared before
  // fork: after it, only async-signal-safe calls.
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
  auto fail = [&](absl::string_view what, int error) {
    if (relay != nullptr) relay->ChildEnded();
    return absl::InternalError(absl::StrCat(what, ": ", std::strerror(error)));
  };
  int channel[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, channel) != 0) {
    return fail("socketpair", errno);
  }
  // The command reports a failed exec through this pipe (closed on exec).
  int exec_error[2];
  if (pipe2(exec_error, O_CLOEXEC) != 0) {
    const int error = errno;
    close(channel[0]);
    close(channel[1]);
    return fail("pipe", error);
  }
  const SupervisorPlan plan{
      .path = path.c_str(),
      .argv = argvp.data(),
      .envp = envp.data(),
      .own_terminal =
          isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp(),
      .channel = channel[1],
      .exec_error = exec_error[1],
      .ctl = getpid(),
      .kill_grace_ms = absl::ToInt64Milliseconds(kill_grace),
  };
  const pid_t supervisor = fork();
  if (supervisor == 0) {
    close(channel[0]);
    close(exec_error[0]);
    Supervise(plan);
  }
  const int fork_error = errno;
  close(channel[1]);
  close(exec_error[1]);
  if (supervisor < 0) {
    close(channel[0]);
    close(exec_error[0]);
    return fail("fork", fork_error);
  }
  auto reap_supervisor = [supervisor] {
    int status = 0;
    while (waitpid(supervisor, &status, 0) < 0 && errno == EINTR) {
    }
    return status;
  };

  pid_t job = 0;
  if (!ReceiveAll(channel[0], &job, sizeof(job)) || job <= 0) {
    close(channel[0]);
    close(exec_error[0]);
    const int status = reap_supervisor();
    if (relay != nullptr) relay->ChildEnded();
    if (job < 0) {
      return absl::InternalError(absl::StrCat("fork: ", std::strerror(-job)));
    }
    return absl::InternalError(
        absl::StrCat("the supervisor ended (status ", ShellExitCode(status),
                     ") before starting ", argv[0]));
  }
  if (relay != nullptr) relay->ChildStarted(job);
  int child_errno = 0;
  ssize_t got;
  do {
    got = read(exec_error[0], &child_errno, sizeof(child_errno));
  } while (got < 0 && errno == EINTR);
  close(exec_error[0]);

  // A thread waits for the supervisor's report (it comes once the command
  // and all its descendants are gone); this one for it or for the stop.
  absl::Mutex mu;
  bool done = false;
  bool stop_requested = false;
  bool reported = false;
  int wait_status = 0;
  int supervisor_status = 0;
  std::thread waiter([&] {
    int status = 0;
    const bool received = ReceiveAll(channel[0], &status, sizeof(status));
    const int ended = reap_supervisor();
    absl::MutexLock lock(&mu);
    reported = received;
    wait_status = status;
    supervisor_status = ended;
    done = true;
  });
  bool signalled = false;
  {
    std::stop_callback on_stop(stop, [&] {
      absl::MutexLock lock(&mu);
      stop_requested = true;
    });
    auto done_or_stopped = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
      return done || stop_requested;
    };
    absl::MutexLock lock(&mu);
    mu.Await(absl::Condition(&done_or_stopped));
    signalled = !done;
  }
  if (signalled) {
    // The supervisor sends SIGTERM, and SIGKILL after the grace.
    SendAll(channel[0], &kStopByte, 1);
    absl::MutexLock lock(&mu);
    mu.Await(absl::Condition(&done));
  }
  waiter.join();
  close(channel[0]);
  if (relay != nullptr) relay->ChildEnded();
  if (plan.own_terminal) GiveTerminalTo(getpgrp());

  if (!reported) {
    // What is left of the group must not run on without a supervisor.
    kill(-job, SIGKILL);
    return absl::InternalError(absl::StrCat(
        "the supervisor of ", argv[0], " died (status ",
        ShellExitCode(supervisor_status), "); its process group was killed"));
  }
  result.exit_code = ShellExitCode(wait_status);
  result.stopped = signalled;
  if (got == sizeof(child_errno)) {
    result.start_error =
        absl::StrCat(argv[0], ": ", std::strerror(child_errno));
  }
  return result;
}

}  // namespace leasekeeper::ctl
