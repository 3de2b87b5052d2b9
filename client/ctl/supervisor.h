// What `leasekeeper-ctl run` needs from the operating system: the command
// in a process group of its own, stopped as a whole (SIGTERM, then SIGKILL
// after a grace) when the lease ends, when the command exits while some of
// its descendants linger, and when the ctl dies, even by SIGKILL; the ctl's
// own SIGINT/SIGTERM/SIGHUP passed on to it. RunChild forks a supervisor
// process that outlives the ctl for this. The mechanism, and the limits
// where a job can still run without the lock: docs/design/clients.md
// ("leasekeeper-ctl run's supervisor").
//
// Thread-safety: SignalRelay's methods are thread-safe; RunChild must be
// called from the main thread (PR_SET_PDEATHSIG fires when the thread that
// forked exits, not the process).
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
  // `stop` was requested before the command exited (so it was signalled).
  bool stopped = false;
};

// Runs argv (argv[0] searched in PATH unless it contains a '/') with
// `environment` added to this process's environment, under a supervisor (a
// process of its own that outlives this one), in a new process group that
// also gets the terminal if this process has it in the foreground. A job
// that ignores SIGTERM can outlive a dead ctl's lock by up to kill_grace
// minus the server's session grace. Returns once the command and all
// its descendants are gone. Once `stop` is requested: SIGTERM to the group,
// and SIGKILL `kill_grace` later if any of it is left; the same follows the
// command's own exit if it leaves descendants behind. If this process dies,
// the supervisor does the same on its own.
// Outcomes: how the command exited; INTERNAL if a fork failed or the
// supervisor died (the group then gets SIGKILL); CANCELLED (nothing started)
// if a signal stopped relay->interrupted() before the start.
// REQUIRES: argv is not empty; called from the main thread.
absl::StatusOr<ChildExit> RunChild(
    const std::vector<std::string>& argv,
    const std::vector<std::pair<std::string, std::string>>& environment,
    std::stop_token stop, absl::Duration kill_grace, SignalRelay* relay);

}  // namespace leasekeeper::ctl

#endif  // LEASEKEEPER_CLIENT_CTL_SUPERVISOR_H_
