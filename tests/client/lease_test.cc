// Leases against a real leasekeeperd: background renewal, every way a lease
// ends (and the reason Ended reports), TryAcquire leaving nothing queued,
// fencing, and which way the calls travel (session stream or unary). Timing:
// ttls of a few hundred milliseconds, and bounds with generous slack, so the
// tests are quick and stable on a loaded machine.
#include "client/lease.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/client_interceptor.h>

#include <signal.h>

#include <atomic>
#include <optional>
#include <stop_token>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "client/client.h"
#include "client/errors.h"
#include "client/lease_timer.h"
#include "gtest/gtest.h"
#include "tests/client/live_server.h"

namespace leasekeeper::client::testing {
namespace {

constexpr absl::Duration kShortTtl = absl::Milliseconds(300);

// Counts the calls made over the channels it makes, by method ("Renew"). A
// call on the session stream is part of one Session call, so only unary
// calls count under "Acquire", "Renew" and "Release".
class CallCounter {
 public:
  // REQUIRES: the counter outlives the channel.
  std::shared_ptr<grpc::Channel> NewChannel(const std::string& address) {
    return InterceptedChannel(address, std::make_unique<Factory>(*this));
  }

  int operator[](absl::string_view method) const {
    absl::MutexLock lock(&mu_);
    auto it = counts_.find(method);
    return it == counts_.end() ? 0 : it->second;
  }

 private:
  class Factory : public grpc::experimental::ClientInterceptorFactoryInterface {
   public:
    explicit Factory(CallCounter& counter) : counter_(counter) {}
    grpc::experimental::Interceptor* CreateClientInterceptor(
        grpc::experimental::ClientRpcInfo* info) override {
      absl::string_view method = info->method();
      method.remove_prefix(method.rfind('/') + 1);
      absl::MutexLock lock(&counter_.mu_);
      ++counter_.counts_[method];
      return nullptr;
    }

   private:
    CallCounter& counter_;
  };

  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, int> counts_ ABSL_GUARDED_BY(mu_);
};

class LeaseTest : public LiveServerTest {
 protected:
  static std::vector<HolderInfo> Holders(const std::string& lock) {
    absl::StatusOr<LockInfo> info = rpc().Inspect(lock);
    EXPECT_TRUE(info.ok()) << info.status();
    return info.ok() ? info->holders : std::vector<HolderInfo>{};
  }
  static size_t QueueLength(const std::string& lock) {
    absl::StatusOr<LockInfo> info = rpc().Inspect(lock);
    EXPECT_TRUE(info.ok()) << info.status();
    return info.ok() ? info->queue.size() : 0;
  }
  // A client named `client_id` whose calls `calls` counts.
  static std::unique_ptr<Client> NewCountedClient(
      CallCounter& calls, const std::string& client_id) {
    ClientOptions options;
    options.client_id = client_id;
    return NewClient(calls.NewChannel(server().address()), std::move(options));
  }
  // `quitter` (client id `quitter_id`) waits for the busy `lock` without a
  // time limit until it is queued, and is then stopped. Returns the status
  // its Acquire returned.
  static absl::Status AcquireUntilStopped(Client& quitter,
                                          const std::string& quitter_id,
                                          const std::string& lock) {
    std::stop_source stop;
    absl::Status result = absl::UnknownError("Acquire did not return");
    std::thread waiter([&] {
      AcquireOptions options;
      options.stop = stop.get_token();
      result = quitter
                   .Acquire(lock, absl::Seconds(10), absl::InfiniteDuration(),
                            options)
                   .status();
    });
    EXPECT_TRUE(Eventually([&] { return IsQueued(lock, quitter_id); }));
    stop.request_stop();
    waiter.join();
    return result;
  }
};

TEST_F(LeaseTest, BackgroundRenewalKeepsALeaseAliveAcrossTenTtls) {
  auto holder = NewClient("holder");
  auto contender = NewClient("contender");
  const std::string lock = LockName();
  absl::StatusOr<Lease> lease =
      holder->Acquire(lock, kShortTtl, absl::Seconds(1));
  ASSERT_TRUE(lease.ok()) << lease.status();

  const MonotonicTime until = MonotonicNow() + 10 * kShortTtl;
  while (MonotonicNow() < until) {
    ASSERT_TRUE(lease->IsHeld()) << LeaseEndReasonName(*lease->EndReason());
    absl::StatusOr<std::optional<Lease>> tried =
        contender->TryAcquire(lock, kShortTtl);
    ASSERT_TRUE(tried.ok()) << tried.status();
    ASSERT_FALSE(tried->has_value()) << "the lock was free while held";
    absl::SleepFor(absl::Milliseconds(100));
  }
  std::vector<HolderInfo> holders = Holders(lock);
  ASSERT_EQ(holders.size(), 1u);
  EXPECT_EQ(holders[0].client_id, "holder");
  EXPECT_EQ(holders[0].token, lease->token()) << "renewals keep the token";
  EXPECT_EQ(QueueLength(lock), 0u) << "TryAcquire left a queue entry";
  EXPECT_TRUE(lease->Release().ok());
  EXPECT_EQ(lease->EndReason(), LeaseEndReason::kReleased);
}

TEST_F(LeaseTest, OneKeepaliveRenewsEveryLeaseOfTheClient) {
  CallCounter calls;
  auto holder = NewCountedClient(calls, "many-leases");
  std::vector<Lease> leases;
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<Lease> lease = holder->Acquire(
        LockName(absl::StrCat("-", i)), kShortTtl, absl::Seconds(1));
    ASSERT_TRUE(lease.ok()) << lease.status();
    leases.push_back(*std::move(lease));
  }
  absl::SleepFor(5 * kShortTtl);
  for (const Lease& lease : leases) EXPECT_TRUE(lease.IsHeld());
  // Renewed by call, three leases would need 3 x 15 Renew calls. A few may
  // still happen when an ack is late on a loaded machine.
  EXPECT_LT(calls["Renew"], 10);
}

TEST_F(LeaseTest, WithoutASessionEachLeaseIsRenewedByItsOwnCalls) {
  ClientOptions options;
  options.client_id = "sessionless";
  options.use_session = false;
  auto holder = NewClient(options);
  const std::string lock = LockName();
  absl::StatusOr<Lease> lease =
      holder->Acquire(lock, kShortTtl, absl::Seconds(1));
  ASSERT_TRUE(lease.ok()) << lease.status();
  absl::SleepFor(6 * kShortTtl);
  EXPECT_TRUE(lease->IsHeld());
  absl::StatusOr<ClientStatus> status = rpc().Status("sessionless");
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->session, SessionState::kNone);
  ASSERT_EQ(status->holds.size(), 1u);
  EXPECT_EQ(status->holds[0].token, lease->token());
}

TEST_F(LeaseTest, EndedSaysExpiredWhenRenewalsStopAndAnotherClientTakesOver) {
  auto holder = NewClient("stalled-holder");
  auto contender = NewClient("next-holder");
  const std::string lock = LockName();
  absl::StatusOr<Lease> first =
      holder->Acquire(lock, kShortTtl, absl::Seconds(1));
  ASSERT_TRUE(first.ok()) << first.status();

  std::optional<absl::StatusOr<Lease>> second;
  std::thread waiter([&] {
    second = contender->Acquire(lock, absl::Seconds(5), absl::Seconds(10));
  });
  ASSERT_TRUE(Eventually([&] { return IsQueued(lock, "next-holder"); }));

  holder->PauseRenewalsForTesting(true);
  EXPECT_EQ(first->WaitForEnd(absl::Seconds(5)), LeaseEndReason::kExpired);
  EXPECT_TRUE(first->Ended().stop_requested());
  waiter.join();
  ASSERT_TRUE(second.has_value() && second->ok())
      << (second.has_value() ? second->status() : absl::UnknownError("none"));
  EXPECT_EQ((*second)->token(), first->token() + 1);
  EXPECT_EQ(Holders(lock)[0].client_id, "next-holder");
  holder->PauseRenewalsForTesting(false);
  EXPECT_EQ(first->Renew().code(), absl::StatusCode::kFailedPrecondition)
      << "losing a lease is final";
}

TEST_F(LeaseTest, EndedSaysForcedWhenTheServerEndedTheLeaseBeforeItsDeadline) {
  auto holder = NewClient("released-behind-its-back");
  const std::string lock = LockName();
  absl::StatusOr<Lease> lease =
      holder->Acquire(lock, absl::Milliseconds(600), absl::Seconds(1));
  ASSERT_TRUE(lease.ok()) << lease.status();
  // An operator releases it with the holder's client id.
  absl::StatusOr<ReleaseOutcome> released =
      rpc().Release(ReleaseCall{"released-behind-its-back", lock, "", ""});
  ASSERT_TRUE(released.ok()) << released.status();
  EXPECT_EQ(lease->WaitForEnd(absl::Seconds(3)), LeaseEndReason::kForced);
  EXPECT_EQ(LeaseEndReasonName(LeaseEndReason::kForced), "forced")
      << "the word leasekeeper-ctl and the Python client use";
}

TEST_F(LeaseTest, EndedSaysSessionLostWhenTheSessionIsCutLongerThanTheGrace) {
  auto holder = NewClient("cut-off");
  auto contender = NewClient("successor");
  const std::string lock = LockName();
  // A ttl far longer than the grace: the lock must pass on with the session.
  absl::StatusOr<Lease> lease =
      holder->Acquire(lock, absl::Seconds(3), absl::Seconds(1));
  ASSERT_TRUE(lease.ok()) << lease.status();

  holder->SuspendSessionForTesting(absl::Seconds(2));
  const MonotonicTime cut_at = MonotonicNow();
  absl::StatusOr<Lease> next =
      contender->Acquire(lock, absl::Seconds(3), absl::Seconds(10));
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_LT(MonotonicNow() - cut_at, kGrace + absl::Milliseconds(1500))
      << "the lock should pass on after the session grace, not the ttl";
  EXPECT_EQ(lease->WaitForEnd(absl::Seconds(5)), LeaseEndReason::kSessionLost);
}

TEST_F(LeaseTest, EndedSaysSessionLostWhenANewerSessionReplacesIt) {
  auto holder = NewClient("same-id");
  const std::string lock = LockName();
  absl::StatusOr<Lease> lease =
      holder->Acquire(lock, absl::Seconds(5), absl::Seconds(1));
  ASSERT_TRUE(lease.ok()) << lease.status();
  // Another process with the same client id opens its own session.
  auto impostor = NewClient("same-id");
  absl::StatusOr<std::optional<Lease>> other =
      impostor->TryAcquire(LockName("-other"), absl::Seconds(5));
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(lease->WaitForEnd(absl::Seconds(3)), LeaseEndReason::kSessionLost);
  EXPECT_TRUE(Holders(lock).empty());
}

TEST_F(LeaseTest, EndedSaysDeadlockVictimForTheYoungerClientOnACycle) {
  auto older = NewClient("older");
  auto younger = NewClient("younger");
  const std::string first_lock = LockName("-1");
  const std::string second_lock = LockName("-2");
  absl::StatusOr<Lease> older_first =
      older->Acquire(first_lock, absl::Seconds(10), absl::Seconds(1));
  ASSERT_TRUE(older_first.ok()) << older_first.status();
  absl::StatusOr<Lease> younger_second =
      younger->Acquire(second_lock, absl::Seconds(10), absl::Seconds(1));
  ASSERT_TRUE(younger_second.ok()) << younger_second.status();

  std::optional<absl::StatusOr<Lease>> younger_first;
  std::thread waiter([&] {
    younger_first =
        younger->Acquire(first_lock, absl::Seconds(10), absl::Seconds(10));
  });
  ASSERT_TRUE(Eventually([&] { return IsQueued(first_lock, "younger"); }));

  // Closes the cycle older -> younger -> older: the younger is aborted.
  absl::StatusOr<Lease> older_second =
      older->Acquire(second_lock, absl::Seconds(10), absl::Seconds(10));
  ASSERT_TRUE(older_second.ok()) << older_second.status();
  waiter.join();
  ASSERT_TRUE(younger_first.has_value());
  EXPECT_EQ(younger_first->status().code(), absl::StatusCode::kAborted);
  EXPECT_TRUE(
      HasErrorReason(younger_first->status(), ErrorReason::kDeadlockVictim));
  EXPECT_EQ(younger_second->WaitForEnd(absl::Seconds(3)),
            LeaseEndReason::kDeadlockVictim);
  EXPECT_TRUE(older_first->IsHeld());
  EXPECT_EQ(older_second->token(), younger_second->token() + 1);
}

TEST_F(LeaseTest, ReleaseEndsTheLeaseAndRunsItsCallbacks) {
  auto holder = NewClient("releaser");
  const std::string lock = LockName();
  absl::StatusOr<Lease> lease =
      holder->Acquire(lock, absl::Seconds(5), absl::Seconds(1));
  ASSERT_TRUE(lease.ok()) << lease.status();
  std::atomic<bool> called{false};
  std::optional<LeaseEndReason> reason_in_callback;
  std::stop_callback on_end(lease->Ended(), [&] {
    reason_in_callback = lease->EndReason();
    called = true;
  });
  EXPECT_FALSE(called);
  ASSERT_TRUE(lease->Release().ok());
  EXPECT_TRUE(called) << "Ended fires before Release returns";
  EXPECT_EQ(reason_in_callback, LeaseEndReason::kReleased);
  EXPECT_EQ(lease->Release().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(lease->Renew().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Holders(lock).empty());
  // A callback registered after the end runs at once.
  bool late = false;
  std::stop_callback late_callback(lease->Ended(), [&] { late = true; });
  EXPECT_TRUE(late);
}

TEST_F(LeaseTest, DestroyingALeaseReleasesTheLock) {
  auto holder = NewClient("scoped");
  const std::string lock = LockName();
  {
    absl::StatusOr<Lease> lease =
        holder->Acquire(lock, absl::Seconds(5), absl::Seconds(1));
    ASSERT_TRUE(lease.ok()) << lease.status();
    EXPECT_EQ(Holders(lock).size(), 1u);
  }
  EXPECT_TRUE(Holders(lock).empty());
}

TEST_F(LeaseTest, TryAcquireOfABusyLockSaysBusyAndLeavesNothingQueued) {
  auto holder = NewClient("busy-holder");
  auto trier = NewClient("trier");
  const std::string lock = LockName();
  absl::StatusOr<Lease> lease =
      holder->Acquire(lock, absl::Seconds(5), absl::Seconds(1));
  ASSERT_TRUE(lease.ok()) << lease.status();

  absl::StatusOr<std::optional<Lease>> tried =
      trier->TryAcquire(lock, absl::Seconds(5));
  ASSERT_TRUE(tried.ok()) << tried.status();
  EXPECT_FALSE(tried->has_value());
  EXPECT_EQ(QueueLength(lock), 0u);
  absl::StatusOr<ClientStatus> status = rpc().Status("trier");
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->waiting_for, "");

  // A bounded wait that runs out leaves nothing behind either.
  absl::StatusOr<Lease> waited =
      trier->Acquire(lock, absl::Seconds(5), absl::Milliseconds(200));
  EXPECT_EQ(waited.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(QueueLength(lock), 0u);

  // And the trier can take the lock once it is free.
  ASSERT_TRUE(lease->Release().ok());
  tried = trier->TryAcquire(lock, absl::Seconds(5));
  ASSERT_TRUE(tried.ok()) << tried.status();
  ASSERT_TRUE(tried->has_value());
  EXPECT_EQ((*tried)->token(), lease->token() + 1);
}

TEST_F(LeaseTest, WaitingAcquireIsGrantedTheMomentTheHolderReleases) {
  auto holder = NewClient("first");
  auto waiter_client = NewClient("second");
  const std::string lock = LockName();
  absl::StatusOr<Lease> lease =
      holder->Acquire(lock, absl::Seconds(10), absl::Seconds(1));
  ASSERT_TRUE(lease.ok()) << lease.status();

  std::optional<absl::StatusOr<Lease>> granted;
  MonotonicTime granted_at;
  std::thread waiter([&] {
    granted =
        waiter_client->Acquire(lock, absl::Seconds(10), absl::Seconds(20));
    granted_at = MonotonicNow();
  });
  ASSERT_TRUE(Eventually([&] { return IsQueued(lock, "second"); }));
  const MonotonicTime released_at = MonotonicNow();
  ASSERT_TRUE(lease->Release().ok());
  waiter.join();
  ASSERT_TRUE(granted.has_value() && granted->ok());
  EXPECT_LT(granted_at - released_at, absl::Seconds(1))
      << "a release hands the lock on at once, no polling";
  EXPECT_EQ((*granted)->token(), lease->token() + 1);
}

TEST_F(LeaseTest, StoppingAWaitingAcquireWithdrawsIt) {
  auto holder = NewClient("stays");
  auto quitter = NewClient("quitter");
  const std::string lock = LockName();
  absl::StatusOr<Lease> lease =
      holder->Acquire(lock, absl::Seconds(10), absl::Seconds(1));
  ASSERT_TRUE(lease.ok()) << lease.status();

  EXPECT_EQ(AcquireUntilStopped(*quitter, "quitter", lock).code(),
            absl::StatusCode::kCancelled);
  EXPECT_TRUE(Eventually([&] { return QueueLength(lock) == 0; }));
}

TEST_F(LeaseTest, FencedWritesRefuseTheOlderHolder) {
  auto first = NewClient("writer-1");
  auto second = NewClient("writer-2");
  const std::string lock = LockName();
  absl::StatusOr<Lease> old_lease =
      first->Acquire(lock, absl::Seconds(5), absl::Seconds(1));
  ASSERT_TRUE(old_lease.ok()) << old_lease.status();
  ASSERT_TRUE(first->Write(*old_lease, "part-1", "a:rows 1-100").ok());
  ASSERT_TRUE(first->Write(*old_lease, "part-2", "a:rows 101-200").ok())
      << "one token may write several keys";
  const FencingToken old_token = old_lease->token();
  ASSERT_TRUE(old_lease->Release().ok());

  absl::StatusOr<Lease> new_lease =
      second->Acquire(lock, absl::Seconds(5), absl::Seconds(1));
  ASSERT_TRUE(new_lease.ok()) << new_lease.status();
  EXPECT_GT(new_lease->token(), old_token);
  ASSERT_TRUE(second->Write(*new_lease, "part-1", "b:rows 1-100").ok());

  // The old holder, stalled past its lease, writes late: refused, by the
  // token rule alone and by the holder check.
  absl::Status late = rpc().Write(WriteCall{.lock = lock,
                                            .key = "part-1",
                                            .value = "a:late",
                                            .token = old_token,
                                            .client_id = "writer-1",
                                            .require_held = false});
  EXPECT_TRUE(HasErrorReason(late, ErrorReason::kStaleToken)) << late;
  late = rpc().Write(WriteCall{.lock = lock,
                               .key = "part-1",
                               .value = "a:late",
                               .token = old_token,
                               .client_id = "writer-1"});
  EXPECT_TRUE(HasErrorReason(late, ErrorReason::kNotHolder)) << late;
  // Through the client, a lease known to be over is not even sent.
  EXPECT_EQ(first->Write(*old_lease, "part-1", "a:late").code(),
            absl::StatusCode::kFailedPrecondition);
  absl::StatusOr<std::optional<std::string>> value =
      second->Read(lock, "part-1");
  ASSERT_TRUE(value.ok()) << value.status();
  EXPECT_EQ(*value, "b:rows 1-100");
  value = second->Read(lock, "never-written");
  ASSERT_TRUE(value.ok());
  EXPECT_FALSE(value->has_value());
}

TEST_F(LeaseTest, DeleteIsFencedLikeAWriteAndListKeysShowsWhatIsLeft) {
  auto first = NewClient("deleter-1");
  auto second = NewClient("deleter-2");
  const std::string lock = LockName();
  absl::StatusOr<Lease> old_lease =
      first->Acquire(lock, absl::Seconds(5), absl::Seconds(1));
  ASSERT_TRUE(old_lease.ok()) << old_lease.status();
  for (const char* key : {"part-1", "part-2", "part-3"}) {
    ASSERT_TRUE(first->Write(*old_lease, key, "a").ok()) << key;
  }
  absl::StatusOr<bool> existed = first->Delete(*old_lease, "part-2");
  ASSERT_TRUE(existed.ok()) << existed.status();
  EXPECT_TRUE(*existed);
  existed = first->Delete(*old_lease, "part-2");
  ASSERT_TRUE(existed.ok()) << existed.status();
  EXPECT_FALSE(*existed) << "nothing left to delete, and not an error";
  const FencingToken old_token = old_lease->token();
  ASSERT_TRUE(old_lease->Release().ok());

  // Through the client, a lease known to be over is not even sent.
  EXPECT_EQ(first->Delete(*old_lease, "part-1").status().code(),
            absl::StatusCode::kFailedPrecondition);
  // The server refuses the stalled holder.
  absl::StatusOr<bool> late = rpc().Delete(DeleteCall{.lock = lock,
                                                      .key = "part-1",
                                                      .token = old_token,
                                                      .client_id = "deleter-1"});
  EXPECT_TRUE(HasErrorReason(late.status(), ErrorReason::kNotHolder))
      << late.status();

  absl::StatusOr<Lease> new_lease =
      second->Acquire(lock, absl::Seconds(5), absl::Seconds(1));
  ASSERT_TRUE(new_lease.ok()) << new_lease.status();
  absl::StatusOr<KeysPage> page = second->ListKeys(lock, "", 1);
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_EQ(page->keys, std::vector<std::string>{"part-1"});
  EXPECT_EQ(page->next_after, "part-1");
  page = second->ListKeys(lock, page->next_after);
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_EQ(page->keys, std::vector<std::string>{"part-3"});
  EXPECT_EQ(page->next_after, "");
}

TEST_F(LeaseTest, SharedLeasesAreHeldTogetherAndAnExclusiveOneWaits) {
  auto reader_1 = NewClient("reader-1");
  auto reader_2 = NewClient("reader-2");
  auto writer = NewClient("writer");
  const std::string lock = LockName();
  AcquireOptions shared;
  shared.mode = LockMode::kShared;
  absl::StatusOr<Lease> r1 =
      reader_1->Acquire(lock, absl::Seconds(5), absl::Seconds(1), shared);
  absl::StatusOr<Lease> r2 =
      reader_2->Acquire(lock, absl::Seconds(5), absl::Seconds(1), shared);
  ASSERT_TRUE(r1.ok() && r2.ok());
  EXPECT_EQ(r1->mode(), LockMode::kShared);
  EXPECT_EQ(Holders(lock).size(), 2u);
  absl::StatusOr<std::optional<Lease>> w =
      writer->TryAcquire(lock, absl::Seconds(5));
  ASSERT_TRUE(w.ok());
  EXPECT_FALSE(w->has_value());
}

TEST_F(LeaseTest, AcquireSemaphoreGrantsUpToNPermitsEachWithItsOwnToken) {
  auto a = NewClient("permit-a");
  auto b = NewClient("permit-b");
  auto c = NewClient("permit-c");
  const std::string lock = LockName();
  absl::StatusOr<Lease> first =
      a->AcquireSemaphore(lock, 2, absl::Seconds(5), absl::Seconds(1));
  absl::StatusOr<Lease> second =
      b->AcquireSemaphore(lock, 2, absl::Seconds(5), absl::Seconds(1));
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->mode(), LockMode::kSemaphore);
  EXPECT_EQ(first->token(), 1u);
  EXPECT_EQ(second->token(), 2u);
  EXPECT_EQ(Holders(lock).size(), 2u);
  absl::StatusOr<Lease> full =
      c->AcquireSemaphore(lock, 2, absl::Seconds(5), absl::Milliseconds(50));
  EXPECT_EQ(full.status().code(), absl::StatusCode::kDeadlineExceeded);
  absl::StatusOr<Lease> other_n =
      c->AcquireSemaphore(lock, 3, absl::Seconds(5), absl::Seconds(1));
  EXPECT_TRUE(HasErrorReason(other_n.status(), ErrorReason::kCapacityMismatch))
      << other_n.status();
  absl::StatusOr<Lease> plain = c->Acquire(lock, absl::Seconds(5),
                                           absl::ZeroDuration());
  EXPECT_TRUE(HasErrorReason(plain.status(), ErrorReason::kModeMismatch))
      << plain.status();
  EXPECT_EQ(c->AcquireSemaphore(lock, 0, absl::Seconds(5), absl::Seconds(1))
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(first->Release().ok());
  absl::StatusOr<Lease> third =
      c->AcquireSemaphore(lock, 2, absl::Seconds(5), absl::Seconds(1));
  ASSERT_TRUE(third.ok()) << third.status();
  EXPECT_EQ(third->token(), 3u);
}

TEST_F(LeaseTest, HolderLabelIsShownToOperators) {
  ClientOptions options;
  options.client_id = "labelled";
  options.holder_label = "pod-7";
  auto holder = NewClient(options);
  const std::string lock = LockName();
  absl::StatusOr<Lease> lease =
      holder->Acquire(lock, absl::Seconds(5), absl::Seconds(1));
  ASSERT_TRUE(lease.ok()) << lease.status();
  std::vector<HolderInfo> holders = Holders(lock);
  ASSERT_EQ(holders.size(), 1u);
  EXPECT_EQ(holders[0].holder_label, "pod-7");
}

TEST_F(LeaseTest, RenewOnDemandCountsTheDeadlineFromItsSend) {
  auto holder = NewClient("renewer");
  const std::string lock = LockName();
  absl::StatusOr<Lease> lease =
      holder->Acquire(lock, absl::Seconds(3), absl::Seconds(1));
  ASSERT_TRUE(lease.ok()) << lease.status();
  absl::SleepFor(absl::Milliseconds(400));
  EXPECT_LT(lease->TimeLeft(), absl::Milliseconds(2700));
  ASSERT_TRUE(lease->Renew().ok());
  EXPECT_GT(lease->TimeLeft(), absl::Milliseconds(2700));
  EXPECT_LE(lease->TimeLeft(), absl::Seconds(3));
}

TEST_F(LeaseTest, AcquiringALockTheClientAlreadyHoldsIsClientBusy) {
  auto holder = NewClient("greedy");
  const std::string lock = LockName();
  absl::StatusOr<Lease> lease =
      holder->Acquire(lock, absl::Seconds(5), absl::Seconds(1));
  ASSERT_TRUE(lease.ok()) << lease.status();
  absl::StatusOr<Lease> again =
      holder->Acquire(lock, absl::Seconds(5), absl::Seconds(1));
  EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(lease->IsHeld());
}

TEST_F(LeaseTest, DestroyingTheClientReleasesItsLeases) {
  const std::string lock = LockName();
  auto holder = NewClient("short-lived");
  absl::StatusOr<Lease> lease =
      holder->Acquire(lock, absl::Seconds(30), absl::Seconds(1));
  ASSERT_TRUE(lease.ok()) << lease.status();
  holder.reset();
  EXPECT_EQ(lease->EndReason(), LeaseEndReason::kReleased);
  EXPECT_TRUE(Holders(lock).empty());
}

TEST_F(LeaseTest, BadArgumentsAreRefusedBeforeAnyCall) {
  auto holder = NewClient("careless");
  EXPECT_EQ(
      holder->Acquire("", absl::Seconds(1), absl::Seconds(1)).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(holder->Acquire("L", absl::ZeroDuration(), absl::Seconds(1))
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      holder->Acquire("L", absl::Hours(25), absl::Seconds(1)).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      holder->Acquire("L", absl::Seconds(1), -absl::Seconds(1)).status().code(),
      absl::StatusCode::kInvalidArgument);
}

// Which way the calls travel (client/internal/client_core.h): on the
// session stream while it is connected, unary otherwise.

TEST_F(LeaseTest,
       WithAConnectedSessionAcquireRenewAndReleaseTravelOnTheStream) {
  CallCounter calls;
  auto client = NewCountedClient(calls, "on-the-stream");
  auto holder = NewClient("stream-busy-holder");
  const std::string lock = LockName();
  const std::string busy = LockName("-busy");
  absl::StatusOr<Lease> held =
      holder->Acquire(busy, absl::Seconds(10), absl::Seconds(1));
  ASSERT_TRUE(held.ok()) << held.status();

  absl::StatusOr<Lease> lease =
      client->Acquire(lock, absl::Seconds(10), absl::Seconds(1));
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_TRUE(lease->Renew().ok());
  // A busy TryAcquire and its withdrawal, and a wait the server times out.
  absl::StatusOr<std::optional<Lease>> tried =
      client->TryAcquire(busy, absl::Seconds(10));
  ASSERT_TRUE(tried.ok()) << tried.status();
  EXPECT_FALSE(tried->has_value());
  absl::StatusOr<Lease> waited =
      client->Acquire(busy, absl::Seconds(10), absl::Milliseconds(200));
  EXPECT_TRUE(HasErrorReason(waited.status(), ErrorReason::kWaitTimeout))
      << waited.status();
  EXPECT_TRUE(lease->Release().ok());

  EXPECT_TRUE(Holders(lock).empty());
  EXPECT_EQ(QueueLength(busy), 0u);
  EXPECT_EQ(calls["Session"], 1);
  EXPECT_EQ(calls["Acquire"], 0);
  EXPECT_EQ(calls["Renew"], 0);
  EXPECT_EQ(calls["Release"], 0);
}

TEST_F(LeaseTest, WithoutASessionAcquireRenewAndReleaseAreUnaryCalls) {
  CallCounter calls;
  ClientOptions options;
  options.client_id = "unary-only";
  options.use_session = false;
  auto client = NewClient(calls.NewChannel(server().address()), options);
  absl::StatusOr<Lease> lease =
      client->Acquire(LockName(), absl::Seconds(10), absl::Seconds(1));
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_TRUE(lease->Renew().ok());
  EXPECT_TRUE(lease->Release().ok());
  EXPECT_EQ(calls["Session"], 0);
  EXPECT_EQ(calls["Acquire"], 1);
  EXPECT_EQ(calls["Renew"], 1);
  EXPECT_EQ(calls["Release"], 1);
}

TEST_F(LeaseTest, StoppingAnAcquireWaitingOnTheStreamLeavesNothingQueued) {
  CallCounter calls;
  auto quitter = NewCountedClient(calls, "stream-quitter");
  auto holder = NewClient("stream-stays");
  const std::string lock = LockName();
  absl::StatusOr<Lease> lease =
      holder->Acquire(lock, absl::Seconds(10), absl::Seconds(1));
  ASSERT_TRUE(lease.ok()) << lease.status();

  EXPECT_EQ(AcquireUntilStopped(*quitter, "stream-quitter", lock).code(),
            absl::StatusCode::kCancelled);
  // Withdrawn before Acquire returned, not eventually.
  EXPECT_EQ(QueueLength(lock), 0u);
  absl::StatusOr<ClientStatus> status = rpc().Status("stream-quitter");
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->waiting_for, "");
  EXPECT_EQ(calls["Acquire"], 0) << "the wait was not on the stream";

  // Nothing was granted to nobody, and nothing left behind can end the
  // client's next lease of the lock.
  ASSERT_TRUE(lease->Release().ok());
  EXPECT_TRUE(Holders(lock).empty());
  absl::StatusOr<Lease> next =
      quitter->Acquire(lock, absl::Seconds(10), absl::Seconds(1));
  ASSERT_TRUE(next.ok()) << next.status();
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_TRUE(next->IsHeld());
  ASSERT_EQ(Holders(lock).size(), 1u);
  EXPECT_EQ(Holders(lock)[0].token, next->token());
}

// The server is frozen (SIGSTOP) while a stream Acquire waits, so no answer
// comes within the client's own deadline (the wait plus a call timeout):
// Acquire fails instead of hanging, and once the server runs again the
// withdrawal it sent has left nothing queued and nothing granted.
TEST_F(LeaseTest, AStreamAcquireTheServerNeverAnswersFailsAndLeavesNothingQueued) {
  ClientOptions options;
  options.client_id = "stream-unanswered";
  options.call_timeout = absl::Milliseconds(300);
  auto waiter = NewClient(options);
  auto holder = NewClient("stream-unanswered-holder");
  const std::string lock = LockName();
  absl::StatusOr<Lease> held =
      holder->Acquire(lock, absl::Seconds(30), absl::Seconds(1));
  ASSERT_TRUE(held.ok()) << held.status();
  // The waiter's session is open before the server freezes.
  absl::StatusOr<Lease> warm =
      waiter->Acquire(LockName("/warm"), absl::Seconds(10), absl::Seconds(1));
  ASSERT_TRUE(warm.ok()) << warm.status();
  ASSERT_TRUE(warm->Release().ok());

  ASSERT_EQ(::kill(server().pid(), SIGSTOP), 0);
  std::jthread thaw([pid = server().pid()] {
    absl::SleepFor(absl::Seconds(2));
    ::kill(pid, SIGCONT);
  });
  const absl::Time started = absl::Now();
  absl::StatusOr<Lease> waited =
      waiter->Acquire(lock, absl::Seconds(10), absl::Milliseconds(200));
  const absl::Duration took = absl::Now() - started;
  EXPECT_TRUE(absl::IsDeadlineExceeded(waited.status())) << waited.status();
  // The wait, a call timeout for the answer and one for the withdrawal
  // (800 ms here), before the server thaws: the client did not wait for it.
  EXPECT_LT(took, absl::Milliseconds(1800));
  thaw.join();

  EXPECT_TRUE(Eventually([&] {
    absl::StatusOr<ClientStatus> status = rpc().Status("stream-unanswered");
    return QueueLength(lock) == 0 && status.ok() &&
           status->waiting_for.empty();
  }));
  std::vector<HolderInfo> holders = Holders(lock);
  ASSERT_EQ(holders.size(), 1u);
  EXPECT_EQ(holders[0].token, held->token());
  EXPECT_TRUE(held->Release().ok());
  EXPECT_TRUE(Holders(lock).empty());
}

TEST_F(LeaseTest, AnErrorOnTheStreamIsTheStatusAndReasonOfTheUnaryCall) {
  CallCounter calls;
  auto on_stream = NewCountedClient(calls, "errors-on-the-stream");
  ClientOptions options;
  options.client_id = "errors-by-unary-calls";
  options.use_session = false;
  auto unary = NewClient(options);
  auto holder = NewClient("errors-holder");
  const std::string lock = LockName();
  absl::StatusOr<Lease> held =
      holder->Acquire(lock, absl::Seconds(10), absl::Seconds(1));
  ASSERT_TRUE(held.ok()) << held.status();

  // A server limit (the detail names it and its value) ...
  const std::string too_long(300, 'x');
  const absl::Status limit =
      on_stream->Acquire(too_long, absl::Seconds(5), absl::Seconds(1)).status();
  EXPECT_FALSE(limit.ok());
  EXPECT_EQ(
      limit,
      unary->Acquire(too_long, absl::Seconds(5), absl::Seconds(1)).status());
  // ... and a wait the server timed out.
  const absl::Status timed_out =
      on_stream->Acquire(lock, absl::Seconds(5), absl::Milliseconds(100))
          .status();
  EXPECT_TRUE(HasErrorReason(timed_out, ErrorReason::kWaitTimeout))
      << timed_out;
  EXPECT_EQ(
      timed_out,
      unary->Acquire(lock, absl::Seconds(5), absl::Milliseconds(100)).status());
  EXPECT_EQ(calls["Acquire"], 0);
}

TEST_F(LeaseTest, AStreamDroppedMidCallFallsBackToAUnaryRetryGrantedOnce) {
  CallCounter calls;
  auto waiter_client = NewCountedClient(calls, "drop-waiter");
  auto holder = NewClient("drop-holder");
  const std::string lock = LockName();
  absl::StatusOr<Lease> lease =
      holder->Acquire(lock, absl::Seconds(10), absl::Seconds(1));
  ASSERT_TRUE(lease.ok()) << lease.status();

  std::optional<absl::StatusOr<Lease>> granted;
  std::thread waiter([&] {
    granted =
        waiter_client->Acquire(lock, absl::Seconds(10), absl::Seconds(20));
  });
  ASSERT_TRUE(Eventually([&] { return IsQueued(lock, "drop-waiter"); }));
  ASSERT_EQ(calls["Acquire"], 0);
  // Shorter than the grace: the session is resumed, not lost.
  waiter_client->SuspendSessionForTesting(absl::Milliseconds(200));
  // Retried at once as a unary call with the same request id; it waits.
  ASSERT_TRUE(Eventually([&] { return calls["Acquire"] == 1; }));
  absl::SleepFor(absl::Milliseconds(200));
  ASSERT_TRUE(IsQueued(lock, "drop-waiter"));

  ASSERT_TRUE(lease->Release().ok());
  waiter.join();
  ASSERT_TRUE(granted.has_value() && granted->ok())
      << (granted.has_value() ? granted->status() : absl::UnknownError("none"));
  EXPECT_EQ((*granted)->token(), lease->token() + 1) << "granted once";
  EXPECT_EQ(calls["Acquire"], 1);
  // The resumed session keeps the lease.
  absl::SleepFor(kGrace + absl::Milliseconds(300));
  EXPECT_TRUE((*granted)->IsHeld());
  absl::StatusOr<ClientStatus> status = rpc().Status("drop-waiter");
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->session, SessionState::kOpen);
  ASSERT_EQ(status->holds.size(), 1u);
  EXPECT_EQ(status->holds[0].token, (*granted)->token());
}

}  // namespace
}  // namespace leasekeeper::client::testing
