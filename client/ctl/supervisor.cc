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
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "client/ctl/exec_image.h"

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

// Waits for `pid` to end and reaps it; its wait status.
int Reap(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// Without a signalfd the supervisor's loop polls at this interval instead.
constexpr int kSignalPollMs = 50;

// The supervisor's first steps: its own group, every signal blocked, only
// its two descriptors open, a subreaper that learns of the ctl's death.
// Exits at once if the ctl is gone already. Returns the signalfd that
// reports SIGCHLD and SIGTERM, or -1 without one.
int DetachFromCtl(const SupervisorPlan& plan) {
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
  return signalfd(-1, &wanted, SFD_CLOEXEC | SFD_NONBLOCK);
}

// Forks the command in its own group and tells the ctl its pid; exits
// (after telling the ctl the errno) if the fork fails. The supervisor's
// standard descriptors then point to /dev/null.
pid_t StartCommand(const SupervisorPlan& plan, int signals) {
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
  return job;
}

// The supervisor's watch over a started command: reaps what exits, stops
// the group (SIGTERM, SIGKILL after the grace) on the first reason, and
// keeps the command's wait status.
class JobWatch {
 public:
  JobWatch(const SupervisorPlan& plan, pid_t job) : plan_(plan), job_(job) {}

  // Reaps every child that exited; true once none is left (the command,
  // a child, is then reaped too).
  bool ReapExited();
  // Sends the SIGKILL once the grace is over (and to late descendants
  // after it); how long the next poll may wait (-1: no limit).
  int KillDueAndTimeoutMs(int signals);
  // Reads what the ctl sent: a stop byte or its end of file.
  void ReadCtl();
  // Reads the signalfd: SIGTERM means the ctl died.
  void ReadSignals(int signals);

  bool ctl_gone() const { return ctl_gone_; }
  int job_status() const { return job_status_; }

 private:
  // SIGTERM to the group and its strays; the SIGKILL is due after the
  // grace. Once only.
  void Stop();

  const SupervisorPlan& plan_;
  const pid_t job_;
  bool ctl_gone_ = false;
  bool stopping_ = false;
  bool killed_ = false;
  int job_status_ = 0;
  int64_t kill_at_ = 0;
};

void JobWatch::Stop() {
  if (stopping_) return;
  stopping_ = true;
  // SIGCONT after the SIGTERM: a stopped process (Ctrl-Z, SIGSTOP) would
  // hold the SIGTERM pending until the SIGKILL.
  for (int signal_number : {SIGTERM, SIGCONT}) {
    kill(-job_, signal_number);
    SignalChildrenOutside(job_, signal_number);
  }
  kill_at_ = MonotonicMs() + plan_.kill_grace_ms;
}

bool JobWatch::ReapExited() {
  // The command is peeked at before it is reaped, so that its zombie still
  // holds the group's id while the group is signalled.
  while (true) {
    siginfo_t info;
    std::memset(&info, 0, sizeof(info));
    if (waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
      if (errno == EINTR) continue;
      return true;
    }
    if (info.si_pid == 0) return false;
    if (info.si_pid == job_) Stop();
    const int status = Reap(info.si_pid);
    if (info.si_pid == job_) job_status_ = status;
  }
}

int JobWatch::KillDueAndTimeoutMs(int signals) {
  const int64_t now = MonotonicMs();
  if (stopping_ && !killed_ && now >= kill_at_) {
    killed_ = true;
    kill(-job_, SIGKILL);
  }
  // Descendants outside the group keep coming as their parents die.
  if (killed_) SignalChildrenOutside(job_, SIGKILL);
  int timeout_ms = -1;
  if (stopping_ && !killed_) {
    timeout_ms = static_cast<int>(std::min<int64_t>(kill_at_ - now, INT_MAX));
  }
  if (killed_ || signals < 0) {
    timeout_ms =
        timeout_ms < 0 ? kSignalPollMs : std::min(timeout_ms, kSignalPollMs);
  }
  return timeout_ms;
}

void JobWatch::ReadCtl() {
  char bytes[16];
  const ssize_t got = recv(plan_.channel, bytes, sizeof(bytes), 0);
  if (got > 0) {
    if (std::memchr(bytes, kStopByte, static_cast<size_t>(got))) Stop();
  } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
    ctl_gone_ = true;
    Stop();
  }
}

void JobWatch::ReadSignals(int signals) {
  signalfd_siginfo received;
  while (read(signals, &received, sizeof(received)) ==
         static_cast<ssize_t>(sizeof(received))) {
    if (received.ssi_signo == SIGTERM) Stop();  // the ctl died
  }
}

[[noreturn]] void Supervise(const SupervisorPlan& plan) {
  const int signals = DetachFromCtl(plan);
  JobWatch watch(plan, StartCommand(plan, signals));
  while (!watch.ReapExited()) {
    const int timeout_ms = watch.KillDueAndTimeoutMs(signals);
    pollfd fds[2] = {{watch.ctl_gone() ? -1 : plan.channel, POLLIN, 0},
                     {signals, POLLIN, 0}};
    if (poll(fds, 2, timeout_ms) <= 0) continue;
    if (fds[0].revents != 0) watch.ReadCtl();
    if (fds[1].revents != 0) watch.ReadSignals(signals);
  }
  const int job_status = watch.job_status();
  SendAll(plan.channel, &job_status, sizeof(job_status));
  _exit(0);
}

// ---- The ctl's side of RunChild.

// The running supervisor as the ctl holds it: its pid, the ctl's end of the
// socket pair and the read end of the command's exec-error pipe.
struct SupervisorHandle {
  pid_t pid;
  int channel;
  int exec_error;
  bool own_terminal;  // the command was given the terminal
};

absl::Status SystemError(absl::string_view what, int error) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(error)));
}

// Forks the supervisor, which starts `image` (at `path`).
// Outcomes: its handle; INTERNAL (socketpair, pipe or fork failed).
absl::StatusOr<SupervisorHandle> StartSupervisor(const std::string& path,
                                                 const ExecImage& image,
                                                 absl::Duration kill_grace) {
  int channel[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, channel) != 0) {
    return SystemError("socketpair", errno);
  }
  // The command reports a failed exec through this pipe (closed on exec).
  int exec_error[2];
  if (pipe2(exec_error, O_CLOEXEC) != 0) {
    const int error = errno;
    close(channel[0]);
    close(channel[1]);
    return SystemError("pipe", error);
  }
  const SupervisorPlan plan{
      .path = path.c_str(),
      .argv = image.argv(),
      .envp = image.envp(),
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
    return SystemError("fork", fork_error);
  }
  return SupervisorHandle{supervisor, channel[0], exec_error[0],
                          plan.own_terminal};
}

// The command's pid, once the supervisor started it. Outcomes: the pid;
// INTERNAL if the supervisor could not fork it or ended first (its
// descriptors are then closed and it is reaped).
absl::StatusOr<pid_t> ReceiveJob(const SupervisorHandle& supervisor,
                                 const std::string& command) {
  pid_t job = 0;
  if (ReceiveAll(supervisor.channel, &job, sizeof(job)) && job > 0) return job;
  close(supervisor.channel);
  close(supervisor.exec_error);
  const int status = Reap(supervisor.pid);
  if (job < 0) {
    return absl::InternalError(absl::StrCat("fork: ", std::strerror(-job)));
  }
  return absl::InternalError(absl::StrCat("the supervisor ended (status ",
                                          ShellExitCode(status),
                                          ") before starting ", command));
}

// The errno of the command's failed execve, or nullopt once it exec'd.
// Closes the pipe.
std::optional<int> ReadExecError(int exec_error) {
  int child_errno = 0;
  ssize_t got;
  do {
    got = read(exec_error, &child_errno, sizeof(child_errno));
  } while (got < 0 && errno == EINTR);
  close(exec_error);
  if (got != sizeof(child_errno)) return std::nullopt;
  return child_errno;
}

// What the supervisor reported at its end.
struct SupervisorReport {
  bool reported = false;  // the command's wait status came (else it died)
  int wait_status = 0;
  int supervisor_status = 0;
  bool signalled = false;  // `stop` came first: the command was stopped
};

// Waits for the supervisor's report (it comes once the command and all its
// descendants are gone) or for `stop`, which it passes on; then for the
// report. Reaps the supervisor and closes the channel.
SupervisorReport AwaitReport(const SupervisorHandle& supervisor,
                             std::stop_token stop) {
  // A thread waits for the report; this one for it or for the stop.
  absl::Mutex mu;
  bool done = false;
  bool stop_requested = false;
  SupervisorReport report;
  std::thread waiter([&] {
    int status = 0;
    const bool received =
        ReceiveAll(supervisor.channel, &status, sizeof(status));
    const int ended = Reap(supervisor.pid);
    absl::MutexLock lock(&mu);
    report.reported = received;
    report.wait_status = status;
    report.supervisor_status = ended;
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
    SendAll(supervisor.channel, &kStopByte, 1);
    absl::MutexLock lock(&mu);
    mu.Await(absl::Condition(&done));
  }
  waiter.join();
  close(supervisor.channel);
  report.signalled = signalled;
  return report;
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
  const ExecImage image(argv, environment);
  if (relay != nullptr && !relay->BeginChild()) {
    return absl::CancelledError("interrupted before the command started");
  }
  auto child_ended = [relay] {
    if (relay != nullptr) relay->ChildEnded();
  };
  absl::StatusOr<SupervisorHandle> supervisor =
      StartSupervisor(path, image, kill_grace);
  if (!supervisor.ok()) {
    child_ended();
    return supervisor.status();
  }
  absl::StatusOr<pid_t> job = ReceiveJob(*supervisor, argv[0]);
  if (!job.ok()) {
    child_ended();
    return job.status();
  }
  if (relay != nullptr) relay->ChildStarted(*job);
  const std::optional<int> exec_errno = ReadExecError(supervisor->exec_error);
  const SupervisorReport report = AwaitReport(*supervisor, stop);
  child_ended();
  if (supervisor->own_terminal) GiveTerminalTo(getpgrp());

  if (!report.reported) {
    // What is left of the group must not run on without a supervisor.
    kill(-*job, SIGKILL);
    return absl::InternalError(
        absl::StrCat("the supervisor of ", argv[0], " died (status ",
                     ShellExitCode(report.supervisor_status),
                     "); its process group was killed"));
  }
  result.exit_code = ShellExitCode(report.wait_status);
  result.stopped = report.signalled;
  if (exec_errno.has_value()) {
    result.start_error =
        absl::StrCat(argv[0], ": ", std::strerror(*exec_errno));
  }
  return result;
}

}  // namespace leasekeeper::ctl
