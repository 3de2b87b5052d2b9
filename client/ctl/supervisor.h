// What `leasekeeper-ctl run` needs from the operating system: the command
// in a process group of its own, stopped as a whole (SIGTERM, then SIGKILL
// after a grace) when the lease ends, when the command exits while some of
// its descendants linger, and when the ctl dies, even by SIGKILL; the ctl's
// own SIGINT/SIGTERM/SIGHUP passed on to it.
//
// The mechanism. A dead ctl cannot act, so RunChild forks a supervisor, a
// small single-threaded process (named "run-supervisor") that outlives it:
//
//   leasekeeper-ctl --fork--> supervisor --fork--> command (group leader)
//        |  socket pair: "stop" one way,             `-- its descendants
//        |  the command's pid and wait status the other
//
//   1. The supervisor leaves the ctl's process group (a signal to that group,
//      `kill -9 -- -PGID` included, does not take it along), blocks every
//      signal, closes every descriptor it does not need (the ctl's gRPC
//      sockets among them, so that the server sees a dead ctl's session
//      break at once) and becomes a child subreaper (PR_SET_CHILD_SUBREAPER):
//      descendants of the command that lose their parent become its
//      children, so it knows when the last one is gone.
//   2. It learns that the ctl died in two ways: end of file on the socket
//      pair (the kernel closes a dead process's descriptors, whichever thread
//      forked) and PR_SET_PDEATHSIG(SIGTERM), read from a signalfd. It checks
//      getppid() after the prctl, so a ctl that died before is seen, and then
//      never starts the command.
//   3. It stops the command's group, SIGTERM (and SIGCONT, so that a stopped
//      process sees it) to the group and to each of its children outside the
//      group (those that left it, see below), then
//      SIGKILL to both `kill_grace` later if any descendant is left, on the
//      first of: the ctl asks (the lease ended), the ctl died, the command
//      (the group leader) exited. A command that exits is thus followed by
//      its whole group: a background process it left behind is terminated,
//      and the ctl, which holds the lease until then, exits with the
//      command's status only once no descendant is left.
//   4. It reports the command's wait status and exits once it has no child
//      left. The command itself has PR_SET_PDEATHSIG(SIGKILL) on the
//      supervisor (exact: the supervisor has one thread).
//
// Limits (where the job can still run without the lock):
//   - A descendant that leaves the group (setsid, setpgid) is signalled by
//     pid only as a child of the supervisor, i.e. once its own parent has
//     died, and only where /proc/thread-self/children exists
//     (CONFIG_PROC_CHILDREN): with the group's SIGTERM and SIGKILL, and
//     after the SIGKILL as soon as it becomes the supervisor's child. Before
//     that (its parent alive), the group's signals reach the parent, not it;
//     without that file it is waited for, not killed.
//   - A process the ctl's user may not signal (a setuid program such as
//     sudo) or one stuck in uninterruptible sleep is waited for: the
//     supervisor, and the ctl with it (renewing the lease while it can),
//     return only once it is gone.
//   - When the ctl dies its lease ends with its session, after the server's
//     session grace, while the supervisor may still be in its kill grace: a
//     job that ignores SIGTERM can outlive the lock by up to --kill-grace
//     minus the session grace. Keep --kill-grace below the session grace
//     where that matters; fenced writes (LEASEKEEPER_FENCING_TOKEN) are
//     refused once another holder has the lock either way.
//   - If the supervisor itself is killed (SIGKILL by pid, the OOM killer), the
//     command gets SIGKILL through its PR_SET_PDEATHSIG, but its descendants
//     do not; the ctl then sends SIGKILL to the group (if it is alive).
//   - PR_SET_PDEATHSIG fires when the *thread* that forked exits, not the
//     process: RunChild must be called from the thread that lives as long as
//     the process (main). The socket pair's end of file does not depend on
//     threads.
//   - Signals go to the group by its id; once the group leader has been
//     reaped and every member has left or died, that id could in principle be
//     reused by an unrelated group before the supervisor's last signal (it
//     needs a pid wrap-around within the grace).
//
// Thread-safety: SignalRelay's methods are thread-safe; RunChild must be
// called from the main thread (see PR_SET_PDEATHSIG above).
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
// `environment` added to this process's environment, under a supervisor (see
// the top of this file), in a new process group that also gets the terminal
// if this process has it in the foreground. Returns once the command and all
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
