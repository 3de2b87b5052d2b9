// RunAsLeader against a real leasekeeperd: failover between two clients on
// release and on a crash (a child process SIGKILLed), contending again after
// a lost lease, and the three ways a term ends.
#include <signal.h>

#include <atomic>
#include <optional>
#include <stop_token>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "client/leader_election.h"
#include "client/lease_timer.h"
#include "gtest/gtest.h"
#include "tests/client/live_server.h"
#include "tests/client/subprocess.h"

namespace leasekeeper::client::testing {
namespace {

// Records a leader's terms for the test thread.
struct TermLog {
  absl::Mutex mu;
  std::vector<FencingToken> tokens ABSL_GUARDED_BY(mu);
  std::vector<TermEnd> ends ABSL_GUARDED_BY(mu);

  LeaderOptions Options() {
    LeaderOptions options;
    options.on_term_end = [this](const Lease&, TermEnd end) {
      absl::MutexLock lock(&mu);
      ends.push_back(end);
    };
    return options;
  }
  void Started(const Lease& lease) {
    absl::MutexLock lock(&mu);
    tokens.push_back(lease.token());
  }
  size_t terms() {
    absl::MutexLock lock(&mu);
    return tokens.size();
  }
};

// Work that leads until its term is stopped.
absl::Status LeadUntilStopped(std::stop_token term) {
  while (!term.stop_requested()) absl::SleepFor(absl::Milliseconds(5));
  return absl::OkStatus();
}

class LeaderTest : public LiveServerTest {
 protected:
  static bool IsFree(const std::string& lock) {
    absl::StatusOr<LockInfo> info = rpc().Inspect(lock);
    return info.ok() && info->holders.empty() && info->queue.empty();
  }
};

TEST_F(LeaderTest, FollowerTakesOverTheMomentTheLeaderStepsDown) {
  auto first = NewClient("leader-a");
  auto second = NewClient("leader-b");
  const std::string lock = LockName();
  TermLog first_log, second_log;
  absl::Notification first_leads, second_leads;
  std::atomic<bool> step_down{false};
  std::stop_source stop_first, stop_second;

  absl::Status first_result;
  std::thread first_thread([&] {
    first_result = RunAsLeader(
        *first, lock, absl::Seconds(2),
        [&](Lease& lease, std::stop_token term) {
          first_log.Started(lease);
          first_leads.Notify();
          while (!term.stop_requested() && !step_down) {
            absl::SleepFor(absl::Milliseconds(5));
          }
          return absl::OkStatus();
        },
        stop_first.get_token(), first_log.Options());
  });
  ASSERT_TRUE(first_leads.WaitForNotificationWithTimeout(absl::Seconds(5)));

  MonotonicTime second_led_at;
  absl::Status second_result;
  std::thread second_thread([&] {
    second_result = RunAsLeader(
        *second, lock, absl::Seconds(2),
        [&](Lease& lease, std::stop_token term) {
          second_led_at = MonotonicNow();
          second_log.Started(lease);
          second_leads.Notify();
          return LeadUntilStopped(term);
        },
        stop_second.get_token(), second_log.Options());
  });
  ASSERT_TRUE(Eventually([&] { return IsQueued(lock, "leader-b"); }));
  EXPECT_FALSE(second_leads.HasBeenNotified()) << "two leaders at once";

  const MonotonicTime stepped_down_at = MonotonicNow();
  step_down = true;  // the work returns on its own: release and return
  first_thread.join();
  EXPECT_TRUE(first_result.ok()) << first_result;
  ASSERT_TRUE(second_leads.WaitForNotificationWithTimeout(absl::Seconds(5)));
  EXPECT_LT(second_led_at - stepped_down_at, absl::Seconds(1))
      << "a release hands leadership on at once";
  {
    absl::MutexLock a(&first_log.mu);
    absl::MutexLock b(&second_log.mu);
    EXPECT_GT(second_log.tokens[0], first_log.tokens[0]);
    EXPECT_EQ(first_log.ends, std::vector<TermEnd>{TermEnd::kWorkReturned});
  }
  stop_second.request_stop();
  second_thread.join();
  EXPECT_EQ(second_result.code(), absl::StatusCode::kCancelled);
  EXPECT_TRUE(Eventually([&] { return IsFree(lock); }));
}

TEST_F(LeaderTest, FollowerTakesOverWithinTheSessionGraceOfACrashedLeader) {
  const std::string lock = LockName();
  // A lease far longer than the grace: a crash must not cost a whole ttl.
  constexpr absl::Duration kTtl = absl::Seconds(20);
  absl::StatusOr<Subprocess> crasher = Subprocess::Start(
      {BinaryDirectory() + "/client_leader_helper", server().address(), lock,
       absl::StrCat(absl::ToInt64Milliseconds(kTtl)), "crashing-leader"});
  ASSERT_TRUE(crasher.ok()) << crasher.status();
  std::optional<std::string> leading =
      crasher->WaitForLine("LEADING", absl::Seconds(10));
  ASSERT_TRUE(leading.has_value()) << crasher->Wait(absl::Seconds(1)).err;
  std::vector<std::string> words = absl::StrSplit(*leading, ' ');
  FencingToken crashed_token = 0;
  ASSERT_TRUE(absl::SimpleAtoi(words.back(), &crashed_token));

  auto follower = NewClient("survivor");
  TermLog log;
  absl::Notification leads;
  MonotonicTime led_at;
  std::stop_source stop;
  absl::Status result;
  std::thread election([&] {
    result = RunAsLeader(
        *follower, lock, kTtl,
        [&](Lease& lease, std::stop_token term) {
          led_at = MonotonicNow();
          log.Started(lease);
          leads.Notify();
          return LeadUntilStopped(term);
        },
        stop.get_token(), log.Options());
  });
  ASSERT_TRUE(Eventually([&] { return IsQueued(lock, "survivor"); }));

  const MonotonicTime crashed_at = MonotonicNow();
  crasher->Signal(SIGKILL);
  crasher->Wait(absl::Seconds(5));
  ASSERT_TRUE(leads.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_LT(led_at - crashed_at, kGrace + absl::Milliseconds(1500))
      << "takeover should take about the session grace, not the ttl";
  {
    absl::MutexLock lock_log(&log.mu);
    EXPECT_GT(log.tokens[0], crashed_token);
  }
  stop.request_stop();
  election.join();
  EXPECT_EQ(result.code(), absl::StatusCode::kCancelled);
}

TEST_F(LeaderTest, ALeaderThatLosesItsLeaseStopsItsWorkAndContendsAgain) {
  auto client = NewClient("unlucky-leader");
  Client* raw = client.get();
  const std::string lock = LockName();
  TermLog log;
  absl::Notification second_term;
  std::stop_source stop;
  absl::Status result;
  std::thread election([&] {
    result = RunAsLeader(
        *raw, lock, absl::Milliseconds(300),
        [&](Lease& lease, std::stop_token term) {
          log.Started(lease);
          if (log.terms() == 1) {
            raw->PauseRenewalsForTesting(true);  // the lease runs out
            absl::Status status = LeadUntilStopped(term);
            raw->PauseRenewalsForTesting(false);
            EXPECT_EQ(lease.EndReason(), LeaseEndReason::kExpired);
            return absl::InternalError("ignored: the lease was lost");
          }
          second_term.Notify();
          return LeadUntilStopped(term);
        },
        stop.get_token(), log.Options());
  });
  ASSERT_TRUE(second_term.WaitForNotificationWithTimeout(absl::Seconds(10)));
  stop.request_stop();
  election.join();
  EXPECT_EQ(result.code(), absl::StatusCode::kCancelled);
  absl::MutexLock lock_log(&log.mu);
  ASSERT_EQ(log.tokens.size(), 2u);
  EXPECT_GT(log.tokens[1], log.tokens[0]);
  EXPECT_EQ(log.ends,
            (std::vector<TermEnd>{TermEnd::kLeaseLost, TermEnd::kCancelled}));
}

TEST_F(LeaderTest, WorkThatFailsEndsTheElectionWithItsErrorAndReleases) {
  auto client = NewClient("failing-leader");
  const std::string lock = LockName();
  std::stop_source stop;
  absl::Status result = RunAsLeader(
      *client, lock, absl::Seconds(5),
      [](Lease&, std::stop_token) {
        return absl::DataLossError("the sweep hit a bad item");
      },
      stop.get_token());
  EXPECT_EQ(result.code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(result.message(), "the sweep hit a bad item");
  EXPECT_TRUE(IsFree(lock));
}

TEST_F(LeaderTest, StoppingTheCallerStopsTheWorkReleasesAndReturnsCancelled) {
  auto client = NewClient("stopped-leader");
  const std::string lock = LockName();
  absl::Notification leads;
  std::atomic<bool> work_saw_stop{false};
  std::stop_source stop;
  absl::Status result;
  std::thread election([&] {
    result = RunAsLeader(
        *client, lock, absl::Seconds(5),
        [&](Lease&, std::stop_token term) {
          leads.Notify();
          LeadUntilStopped(term).IgnoreError();
          work_saw_stop = true;
          return absl::OkStatus();  // whatever it returns: cancelled
        },
        stop.get_token());
  });
  ASSERT_TRUE(leads.WaitForNotificationWithTimeout(absl::Seconds(5)));
  stop.request_stop();
  election.join();
  EXPECT_TRUE(work_saw_stop);
  EXPECT_EQ(result.code(), absl::StatusCode::kCancelled);
  EXPECT_TRUE(IsFree(lock));
}

TEST_F(LeaderTest, StoppingAnElectionThatWaitsReturnsCancelledAndLeavesNoWait) {
  auto holder = NewClient("incumbent");
  auto follower = NewClient("patient");
  const std::string lock = LockName();
  absl::StatusOr<Lease> held =
      holder->Acquire(lock, absl::Seconds(10), absl::Seconds(1));
  ASSERT_TRUE(held.ok()) << held.status();
  std::atomic<bool> worked{false};
  std::stop_source stop;
  absl::Status result;
  std::thread election([&] {
    result = RunAsLeader(
        *follower, lock, absl::Seconds(10),
        [&](Lease&, std::stop_token) {
          worked = true;
          return absl::OkStatus();
        },
        stop.get_token());
  });
  ASSERT_TRUE(Eventually([&] { return IsQueued(lock, "patient"); }));
  stop.request_stop();
  election.join();
  EXPECT_EQ(result.code(), absl::StatusCode::kCancelled);
  EXPECT_FALSE(worked);
  EXPECT_TRUE(Eventually([&] { return !IsQueued(lock, "patient"); }));
}

}  // namespace
}  // namespace leasekeeper::client::testing
