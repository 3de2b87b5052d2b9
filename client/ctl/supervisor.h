// What `leasekeeper-ctl run` needs from the operating system: a command in a
// child process of its own process group, stopped (SIGTERM, then SIGKILL
// after a grace) when the lease ends, and the ctl's own SIGINT/SIGTERM/SIGHUP
// passed on to it.
//
// Thread-safety: SignalRelay's methods are thread-safe; RunChild must be
// called from the main thread (the child is tied to the thread that forked
// it, see PR_SET_PDEATHSIG below).
#ifndef LEASEKEEPER_CLIENT_CTL_SUPERVISOR_H_
#define LEASEKEEPER_CLIENT_CTL_SUPERVISOR_H_

#include <sys/types.h>

#include <atomic>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace leasekeeper::ctl {

// Takes SIGINT, SIGTERM and SIGHUP away from their default action: while a
// child runs they are sent on to its process group; before that, the first
// one stops interrupted() (so a waiting acquire gives up). A signal that
// arrives while a child is being started is held and sent on as soon as the
// child's process group exists.
class SignalRelay {
 public:
  // Blocks the signals in the calling thread and starts the thread that
  // takes them. REQUIRES: called in main() before any other thread exists,
  // so that every later thread inherits the blocked mask.
  SignalRelay();
  ~SignalRelay();

  SignalRelay(const SignalRelay&) = delete;
  SignalRelay& operator=(const SignalRelay&) = delete;

  // Stopped by the first signal that arrived while no child ran.
  std::stop_token interrupted() const { return interrupted_.get_token(); }
  // The last signal received; 0 if none.
  int last_signal() const;

  // A child is about to be started: from now on signals are held for it.
  // False (and nothing changes) if a signal already stopped interrupted().
  bool BeginChild();
  // The started child's process group: held signals are sent to it now,
  // later ones as they come.
  void ChildStarted(pid_t group);
  // The child is gone: signals stop interrupted() again.
  void ChildEnded();

 private:
  void Run();
  void Deliver(int signal_number);

  std::stop_source interrupted_;
  std::atomic<bool> stopping_{false};
  mutable absl::Mutex mu_;
  enum class Phase { kNoChild, kStarting, kRunning };
  Phase phase_ ABSL_GUARDED_BY(mu_) = Phase::kNoChild;
  pid_t child_group_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<int> held_ ABSL_GUARDED_BY(mu_);
  int last_signal_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

struct ChildExit {
  // The exit status as a shell reports it: the code, or 128 + the signal.
  int exit_code = 0;
  // The command could not be started (not found, not executable): the
  // reason. exit_code is then 127 (not found) or 126.
  std::string start_error;
  // RunChild signalled it because `stop` was requested.
  bool stopped = false;
};

// Runs argv (argv[0] searched in PATH unless it contains a '/') with
// `environment` added to this process's environment, in a new process group
// that also gets the terminal if this process has it in the foreground.
// Waits until it exits. Once `stop` is requested: SIGTERM to the group, and
// SIGKILL to the group if it has not exited `kill_grace` later.
// The child is killed (SIGKILL) if this process dies (PR_SET_PDEATHSIG): it
// must not go on without the lock.
// Outcomes: how it exited; INTERNAL if fork failed; CANCELLED (nothing
// started) if a signal stopped relay->interrupted() before the start.
// REQUIRES: argv is not empty.
absl::StatusOr<ChildExit> RunChild(
    const std::vector<std::string>& argv,
    const std::vector<std::pair<std::string, std::string>>& environment,
    std::stop_token stop, absl::Duration kill_grace, SignalRelay* relay);

}  // namespace leasekeeper::ctl

#endif  // LEASEKEEPER_CLIENT_CTL_SUPERVISOR_H_
