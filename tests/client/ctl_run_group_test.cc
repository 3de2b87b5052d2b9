// `leasekeeper-ctl run` never leaves its command's processes running without
// the lock, grandchildren included: the whole process group is stopped
// (SIGTERM, then SIGKILL after --kill-grace) when the lease is lost, when the
// command exits and leaves a background process behind, and when the ctl is
// killed with SIGKILL (its supervisor does it then). Real binaries against
// a real leasekeeperd on loopback.
//
// Each command is `/bin/sh -c SCRIPT`; the scripts write the PIDs of their
// processes to files before they print "started".
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "client/lease_timer.h"
#include "gtest/gtest.h"
#include "tests/client/live_server.h"
#include "tests/client/subprocess.h"

namespace leasekeeper::client::testing {
namespace {

// True while `pid` exists (a zombie counts: it is not reaped yet).
bool Exists(pid_t pid) { return kill(pid, 0) == 0 || errno == EPERM; }

class RunGroupTest : public LiveServerTest {
 protected:
  void TearDown() override {
    // A failed test must not leave its sleeps behind.
    for (pid_t pid : pids_) {
      if (pid > 1 && Exists(pid)) kill(pid, SIGKILL);
    }
    for (const std::string& file : files_) {
      std::remove(file.c_str());
      std::remove((file + ".ready").c_str());
    }
  }

  // A fresh file path for this test, named `name`.
  std::string File(absl::string_view name) {
    const char* dir = std::getenv("TEST_TMPDIR");
    std::string path = absl::StrCat(dir != nullptr ? dir : "/tmp",
                                    "/leasekeeper_run_group_", getpid(), "_",
                                    LockName().substr(LockName().find('/') + 1),
                                    "_", name);
    std::remove(path.c_str());
    files_.push_back(path);
    return path;
  }

  // Starts `leasekeeper-ctl run LOCK FLAGS... -- /bin/sh -c SCRIPT` and
  // waits for the script's "started" line.
  absl::StatusOr<Subprocess> StartRun(const std::vector<std::string>& flags,
                                      const std::string& script) {
    std::vector<std::string> argv = {BinaryDirectory() + "/leasekeeper-ctl",
                                     "run", LockName()};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), {"--", "/bin/sh", "-c", script});
    absl::StatusOr<Subprocess> run =
        Subprocess::Start(argv, {{"LEASEKEEPER_SERVER", server().address()}});
    if (run.ok() && !run->WaitForLine("started", absl::Seconds(10))) {
      return absl::DeadlineExceededError("the command did not start");
    }
    return run;
  }

  // The PID the script wrote to `file`; 0 if none.
  pid_t PidIn(const std::string& file) {
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    int pid = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(text.str()), &pid)) {
      return 0;
    }
    pids_.push_back(pid);
    return pid;
  }

  // The server takes the lease away, as an operator's release does.
  void TakeTheLeaseFrom(const std::string& client_id) {
    absl::StatusOr<ReleaseOutcome> released =
        rpc().Release(ReleaseCall{client_id, LockName(), "", ""});
    ASSERT_TRUE(released.ok()) << released.status();
  }

 private:
  std::vector<pid_t> pids_;
  std::vector<std::string> files_;
};

// Script: waits until `file` exists (a background process made it).
std::string AwaitFile(const std::string& file) {
  return absl::StrCat("until [ -e ", file, " ]; do sleep 0.01; done; ");
}

// Script: a background process that ignores SIGTERM (`trap '' TERM` holds
// through exec, so `sleep` ignores it too), its PID in `pid_file`; the
// script goes on once the trap is set.
std::string StubbornGrandchild(const std::string& pid_file) {
  const std::string ready = pid_file + ".ready";
  return absl::StrCat("(trap '' TERM; : > ", ready, "; exec sleep 300) & ",
                      "echo $! > ", pid_file, "; ", AwaitFile(ready));
}

TEST_F(RunGroupTest, LostLeaseStopsTheGrandchildrenNotOnlyTheCommand) {
  const std::string grandchild_file = File("grandchild");
  // The shell dies of the SIGTERM; its background sleep ignores it and
  // must get the SIGKILL after the grace.
  absl::StatusOr<Subprocess> run = StartRun(
      {"--ttl", "5s", "--client", "loses-it", "--kill-grace", "1s"},
      StubbornGrandchild(grandchild_file) + "echo started; wait");
  ASSERT_TRUE(run.ok()) << run.status();
  const pid_t grandchild = PidIn(grandchild_file);
  ASSERT_GT(grandchild, 0);

  const MonotonicTime lost_at = MonotonicNow();
  TakeTheLeaseFrom("loses-it");
  ProcessResult result = run->Wait(absl::Seconds(15));
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_NE(result.err.find("lost the lease"), std::string::npos) << result.err;
  EXPECT_FALSE(Exists(grandchild))
      << "the ctl exited while the job's grandchild ran on without the lock";
  EXPECT_LT(MonotonicNow() - lost_at, absl::Seconds(1) + absl::Seconds(4));
}

TEST_F(RunGroupTest, CommandExitTerminatesWhatItLeftBehindBeforeTheRelease) {
  const std::string grandchild_file = File("grandchild");
  const std::string ready_file = File("ready");
  const std::string during_file = File("held-while-it-ran");
  // The shell exits at once with 4; its background sleep lingers. When the
  // sleep gets its SIGTERM the lock must still be held: the trap asks the
  // server (through leasekeeper-ctl inspect) and notes the answer.
  const std::string inspect =
      absl::StrCat(BinaryDirectory(), "/leasekeeper-ctl inspect ", LockName(),
                   " > ", during_file);
  absl::StatusOr<Subprocess> run =
      StartRun({"--client", "leaves-one", "--kill-grace", "30s"},
               absl::StrCat("(trap '", inspect, "; exit 0' TERM; : > ",
                            ready_file, "; while :; do sleep 0.1; done) & ",
                            "echo $! > ", grandchild_file, "; ",
                            AwaitFile(ready_file), "echo started; exit 4"));
  ASSERT_TRUE(run.ok()) << run.status();
  const pid_t grandchild = PidIn(grandchild_file);
  ASSERT_GT(grandchild, 0);

  const MonotonicTime exited_at = MonotonicNow();
  ProcessResult result = run->Wait(absl::Seconds(20));
  EXPECT_EQ(result.exit_code, 4) << "the command's own status; " << result.err;
  EXPECT_FALSE(Exists(grandchild)) << "left running after the ctl's exit";
  EXPECT_LT(MonotonicNow() - exited_at, absl::Seconds(15))
      << "SIGTERM first, not the SIGKILL after the 30 s grace";
  std::ifstream during(during_file);
  std::stringstream seen;
  seen << during.rdbuf();
  EXPECT_NE(seen.str().find("leaves-one"), std::string::npos)
      << "the lock was not held while the leftover process ran: "
      << seen.str();
  absl::StatusOr<LockInfo> after = rpc().Inspect(LockName());
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_TRUE(after->holders.empty()) << "released once all were gone";
}

TEST_F(RunGroupTest, KilledCtlStillStopsTheWholeGroupAfterTheGrace) {
  const std::string grandchild_file = File("grandchild");
  const std::string shell_file = File("shell");
  constexpr absl::Duration kKillGrace = absl::Seconds(1);
  absl::StatusOr<Subprocess> run =
      StartRun({"--kill-grace", "1s"},
               absl::StrCat("echo $$ > ", shell_file, "; ",
                            StubbornGrandchild(grandchild_file),
                            "echo started; wait"));
  ASSERT_TRUE(run.ok()) << run.status();
  const pid_t shell = PidIn(shell_file);
  const pid_t grandchild = PidIn(grandchild_file);
  ASSERT_GT(shell, 0);
  ASSERT_GT(grandchild, 0);

  const MonotonicTime killed_at = MonotonicNow();
  run->Signal(SIGKILL);
  EXPECT_TRUE(Eventually([&] { return !Exists(shell); }, absl::Seconds(5)))
      << "the command outlived the ctl";
  // The grandchild ignores the SIGTERM and lives on until the SIGKILL, a
  // grace after the ctl's death (checked only if this thread got here
  // well within the grace).
  if (MonotonicNow() - killed_at < kKillGrace - absl::Milliseconds(300)) {
    EXPECT_TRUE(Exists(grandchild)) << "SIGKILL before the grace was over";
  }
  EXPECT_TRUE(Eventually([&] { return !Exists(grandchild); },
                         kKillGrace + absl::Seconds(4)))
      << "the grandchild outlived the ctl by more than the kill grace";
  EXPECT_LT(MonotonicNow() - killed_at, kKillGrace + absl::Seconds(4));
  EXPECT_EQ(run->Wait(absl::Seconds(5)).exit_code, 128 + SIGKILL);
}

TEST_F(RunGroupTest, KilledCtlsLockPassesOnAfterTheSessionGraceNotTheKill) {
  // The supervisor must not keep the dead ctl's connection open: the
  // server frees the lock after its session grace even while the
  // supervisor still waits out a long kill grace.
  const std::string grandchild_file = File("grandchild");
  absl::StatusOr<Subprocess> run = StartRun(
      {"--ttl", "30s", "--kill-grace", "20s"},
      StubbornGrandchild(grandchild_file) + "echo started; wait");
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_GT(PidIn(grandchild_file), 0);
  auto next = NewClient("next-in-line");
  const MonotonicTime killed_at = MonotonicNow();
  run->Signal(SIGKILL);
  absl::StatusOr<Lease> lease =
      next->Acquire(LockName(), absl::Seconds(5), absl::Seconds(10));
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_LT(MonotonicNow() - killed_at, kGrace + absl::Milliseconds(1500));
}

TEST_F(RunGroupTest, KillGraceSeparatesSigtermFromSigkill) {
  const std::string terms_file = File("terms");
  constexpr absl::Duration kKillGrace = absl::Seconds(2);
  // The command notes each SIGTERM and goes on; only SIGKILL ends it.
  absl::StatusOr<Subprocess> run = StartRun(
      {"--ttl", "5s", "--client", "stubborn", "--kill-grace", "2s"},
      absl::StrCat("trap 'echo term >> ", terms_file,
                   "' TERM; echo started; while :; do sleep 0.1; done"));
  ASSERT_TRUE(run.ok()) << run.status();

  const MonotonicTime lost_at = MonotonicNow();
  TakeTheLeaseFrom("stubborn");
  ProcessResult result = run->Wait(absl::Seconds(20));
  const absl::Duration took = MonotonicNow() - lost_at;
  EXPECT_EQ(result.exit_code, 1) << result.err;
  std::ifstream terms(terms_file);
  std::string first;
  std::getline(terms, first);
  EXPECT_EQ(first, "term") << "SIGTERM came first";
  EXPECT_GE(took, kKillGrace - absl::Milliseconds(100))
      << "SIGKILL before the grace was over";
  EXPECT_LT(took, kKillGrace + absl::Seconds(5));
}

// The state letter of `pid` (R, S, T for stopped, ...); '?' if none.
char StateOf(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string stat((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  const size_t close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size()
             ? stat[close + 2]
             : '?';
}

TEST_F(RunGroupTest, StoppedCommandIsContinuedToSeeTheSigterm) {
  const std::string shell_file = File("shell");
  absl::StatusOr<Subprocess> run = StartRun(
      {"--ttl", "5s", "--client", "suspended", "--kill-grace", "30s"},
      absl::StrCat("echo $$ > ", shell_file,
                   "; echo started; kill -STOP $$; sleep 300"));
  ASSERT_TRUE(run.ok()) << run.status();
  const pid_t shell = PidIn(shell_file);
  ASSERT_GT(shell, 0);
  ASSERT_TRUE(Eventually([&] { return StateOf(shell) == 'T'; }));

  const MonotonicTime lost_at = MonotonicNow();
  TakeTheLeaseFrom("suspended");
  ProcessResult result = run->Wait(absl::Seconds(25));
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_LT(MonotonicNow() - lost_at, absl::Seconds(10))
      << "the stopped command waited for the SIGKILL after the 30 s grace";
  EXPECT_FALSE(Exists(shell));
}

TEST_F(RunGroupTest, DescendantThatLeftTheGroupIsStoppedOnceItsParentIsGone) {
  const std::string escaped_file = File("escaped");
  // setsid(1) puts the sleep in a session (and group) of its own; the
  // shell waits until it is there (field 5 of /proc/PID/stat: the group),
  // then exits, so the sleep is the supervisor's child then.
  absl::StatusOr<Subprocess> run = StartRun(
      {"--kill-grace", "30s"},
      absl::StrCat("setsid sleep 300 & echo $! > ", escaped_file,
                   "; until [ \"$(cut -d' ' -f5 /proc/$!/stat)\" != $$ ]; ",
                   "do sleep 0.01; done; echo started"));
  ASSERT_TRUE(run.ok()) << run.status();
  const pid_t escaped = PidIn(escaped_file);
  ASSERT_GT(escaped, 0);
  // The shell waited for the sleep to leave its group before it exited,
  // and the supervisor may already have stopped the sleep by now: gone
  // (ESRCH) is as good as a group of its own, the command's group is not.
  const pid_t group = getpgid(escaped);
  ASSERT_TRUE(group == escaped || (group == -1 && errno == ESRCH))
      << "not out of the command's group: " << group;
  ProcessResult result = run->Wait(absl::Seconds(20));
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_FALSE(Exists(escaped)) << "a process outside the group ran on";
}

}  // namespace
}  // namespace leasekeeper::client::testing
