#include "storage/durable_store.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "storage/log.h"
#include "storage/snapshot_file.h"
#include "storage_test_util.h"

namespace leasekeeper::storage {
namespace {

using testing::CanonicalState;
using testing::CountFiles;
using testing::OperationGenerator;
using testing::Slurp;
using testing::Spit;
using testing::TempDir;

std::unique_ptr<DurableStore> OpenStore(const std::string& dir,
                                        StateMachine& machine,
                                        DurableStoreOptions options = {}) {
  absl::StatusOr<std::unique_ptr<DurableStore>> store =
      DurableStore::Open(dir, std::move(options), machine);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? *std::move(store) : nullptr;
}

// Applies and appends, as the server does under its core lock, and hands in
// snapshots when due. Returns the last position.
LogPosition ApplyAndAppend(DurableStore& store, StateMachine& machine,
                           const std::vector<Operation>& ops, size_t from,
                           size_t to) {
  LogPosition last = store.last_position();
  for (size_t i = from; i < to; ++i) {
    machine.Apply(ops[i]).status().IgnoreError();
    absl::StatusOr<LogPosition> position = store.Append(ops[i]);
    EXPECT_TRUE(position.ok()) << position.status();
    last = *position;
    if (store.SnapshotDue()) store.SubmitSnapshot(machine.Snapshot(), last);
    // Clients wait for their replies, so groups stay small.
    if (i % 16 == 15) {
      EXPECT_TRUE(store.WaitDurable(last).ok());
    }
  }
  return last;
}

std::string StateAfter(const std::vector<Operation>& ops, size_t n) {
  StateMachine machine;
  for (size_t i = 0; i < n; ++i) machine.Apply(ops[i]).status().IgnoreError();
  return CanonicalState(machine);
}

TEST(DurableStore, NewDataDirRecoversNothingAndStartsTheClockAtZero) {
  TempDir dir;
  StateMachine machine;
  std::unique_ptr<DurableStore> store =
      OpenStore(dir.path() + "/data", machine);
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(store->recovery().fresh);
  EXPECT_EQ(store->recovery().resume_tick, 0);
  EXPECT_EQ(store->last_position(), 0u);
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/data/LOCK"));
}

TEST(DurableStore, RecoveryRebuildsTheSameStateOnRandomStreams) {
  for (uint32_t seed = 1; seed <= 4; ++seed) {
    SCOPED_TRACE(absl::StrCat("seed ", seed));
    TempDir dir;
    const std::vector<Operation> ops = OperationGenerator(seed).Take(4000);
    DurableStoreOptions options;
    options.snapshot_every_records = 700;
    options.segment_bytes = 8192;
    // A restart within one process sees every write; fsyncs would only
    // slow the test down (the kill -9 test below covers them).
    options.fsync = FsyncPolicy::kNever;
    StateMachine before;
    {
      std::unique_ptr<DurableStore> store =
          OpenStore(dir.path(), before, options);
      // Three "sessions" with restarts in between.
      const LogPosition last = ApplyAndAppend(*store, before, ops, 0, 1500);
      ASSERT_TRUE(store->WaitDurable(last).ok());
    }
    {
      StateMachine middle;
      std::unique_ptr<DurableStore> store =
          OpenStore(dir.path(), middle, options);
      ASSERT_EQ(CanonicalState(middle), CanonicalState(before));
      EXPECT_GT(store->recovery().snapshot_position, 0u);
      EXPECT_LT(store->recovery().records_replayed, 1500u);
      ApplyAndAppend(*store, middle, ops, 1500, 4000);
      for (size_t i = 1500; i < 4000; ++i) {
        before.Apply(ops[i]).status().IgnoreError();
      }
      ASSERT_TRUE(store->WaitForSnapshot().ok());
    }
    StateMachine after;
    std::unique_ptr<DurableStore> store = OpenStore(dir.path(), after, options);
    EXPECT_EQ(store->recovery().last_position, 4000u);
    EXPECT_EQ(CanonicalState(after), CanonicalState(before));
    EXPECT_EQ(CanonicalState(after), StateAfter(ops, 4000));
    EXPECT_TRUE(after.table().CheckInvariants().ok());
    EXPECT_LE(CountFiles(dir.path(), "snap-"), 2u);
    // Old segments were cut: the log no longer starts at 1.
    EXPECT_FALSE(std::filesystem::exists(dir.path() + "/" +
                                         FileLog::SegmentName(1)));
  }
}

TEST(DurableStore, CallbacksRunInOrderOnlyOnceDurableUnderEveryPolicy) {
  for (FsyncPolicy policy :
       {FsyncPolicy::kAlways, FsyncPolicy::kBatch, FsyncPolicy::kNever}) {
    SCOPED_TRACE(FsyncPolicyName(policy));
    TempDir dir;
    DurableStoreOptions options;
    options.fsync = policy;
    StateMachine machine;
    std::unique_ptr<DurableStore> store =
        OpenStore(dir.path(), machine, options);
    const std::vector<Operation> ops = OperationGenerator(4).Take(300);
    absl::Mutex mu;
    std::vector<LogPosition> acknowledged;
    for (const Operation& op : ops) {
      absl::StatusOr<LogPosition> position = store->Append(op);
      ASSERT_TRUE(position.ok());
      store->OnDurable(*position, [&, p = *position,
                                   s = store.get()](absl::Status status) {
        EXPECT_TRUE(status.ok()) << status;
        EXPECT_GE(s->durable_position(), p);
        absl::MutexLock lock(&mu);
        acknowledged.push_back(p);
      });
    }
    ASSERT_TRUE(store->WaitDurable(300).ok());
    ASSERT_TRUE(store->Close().ok());
    ASSERT_EQ(acknowledged.size(), 300u);
    for (size_t i = 0; i < acknowledged.size(); ++i) {
      EXPECT_EQ(acknowledged[i], i + 1);
    }
    const DurableStoreStats stats = store->stats();
    EXPECT_EQ(stats.records_appended, 300u);
    EXPECT_EQ(stats.durable_position, 300u);
    if (policy == FsyncPolicy::kAlways) {
      EXPECT_EQ(stats.fsyncs, 300u);
    } else if (policy == FsyncPolicy::kNever) {
      EXPECT_EQ(stats.fsyncs, 0u);
    } else {
      EXPECT_LE(stats.fsyncs, 300u);
    }
    uint64_t groups = 0;
    for (uint64_t n : stats.group_records) groups += n;
    EXPECT_EQ(groups, stats.groups);
    EXPECT_EQ(stats.group_records_sum, 300u);
  }
}

TEST(DurableStore, ConcurrentAppendersShareFsyncsInBatchMode) {
  TempDir dir;
  StateMachine machine;
  std::unique_ptr<DurableStore> store = OpenStore(dir.path(), machine);
  absl::Mutex core_mu;  // the server's core lock: apply + append together
  std::atomic<int> acknowledged{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 16; ++t) {
    clients.emplace_back([&, t] {
      for (int i = 0; i < 100; ++i) {
        absl::Notification done;
        {
          absl::MutexLock lock(&core_mu);
          Operation op{0, op::Write{"L", absl::StrCat("k", t), "v", 1}};
          machine.Apply(op).status().IgnoreError();
          absl::StatusOr<LogPosition> position = store->Append(op);
          ASSERT_TRUE(position.ok());
          store->OnDurable(*position, [&](absl::Status status) {
            EXPECT_TRUE(status.ok());
            ++acknowledged;
            done.Notify();
          });
        }
        done.WaitForNotification();
      }
    });
  }
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(acknowledged.load(), 1600);
  const DurableStoreStats stats = store->stats();
  EXPECT_LT(stats.fsyncs, 1600u);  // shared
  EXPECT_GT(stats.group_records_sum / stats.groups, 1u);
}

TEST(DurableStore, FailedFsyncRefusesEverythingAfterWithUnavailable) {
  TempDir dir;
  auto plan = std::make_shared<testing::FaultPlan>();
  DurableStoreOptions options;
  options.open_file = testing::FaultyFactory(plan);
  const std::vector<Operation> ops = OperationGenerator(6).Take(50);
  StateMachine machine;
  std::unique_ptr<DurableStore> store =
      OpenStore(dir.path(), machine, options);
  const LogPosition good = ApplyAndAppend(*store, machine, ops, 0, 40);
  ASSERT_TRUE(store->WaitDurable(good).ok());

  plan->syncs_ok = plan->syncs.load();  // the disk fails now
  absl::StatusOr<LogPosition> doomed = store->Append(ops[40]);
  ASSERT_TRUE(doomed.ok());
  absl::Notification notified;
  absl::Status outcome;
  store->OnDurable(*doomed, [&](absl::Status status) {
    outcome = status;
    notified.Notify();
  });
  notified.WaitForNotification();
  EXPECT_EQ(outcome.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(outcome.message().find("Input/output error"),
            std::string::npos)
      << outcome;

  const absl::StatusOr<LogPosition> refused = store->Append(ops[41]);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(refused.status().message().find("Input/output error"),
            std::string::npos);
  EXPECT_EQ(store->health().code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(store->SnapshotDue());
  EXPECT_EQ(store->WaitDurable(*doomed).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(store->durable_position(), good);
  // Already-durable records still report OK.
  absl::Notification old_notified;
  store->OnDurable(good, [&](absl::Status status) {
    EXPECT_TRUE(status.ok());
    old_notified.Notify();
  });
  old_notified.WaitForNotification();
  store.reset();

  // After the disk is fixed, everything acknowledged is back.
  StateMachine recovered;
  store = OpenStore(dir.path(), recovered);
  ASSERT_NE(store, nullptr);
  EXPECT_GE(store->recovery().last_position, good);
  EXPECT_EQ(CanonicalState(recovered),
            StateAfter(ops, store->recovery().last_position));
}

TEST(DurableStore, InNeverModeARecordIsDurableWhenAppendReturns) {
  TempDir dir;
  DurableStoreOptions options;
  options.fsync = FsyncPolicy::kNever;
  StateMachine machine;
  std::unique_ptr<DurableStore> store =
      OpenStore(dir.path(), machine, options);
  for (const Operation& op : OperationGenerator(7).Take(50)) {
    absl::StatusOr<LogPosition> position = store->Append(op);
    ASSERT_TRUE(position.ok());
    EXPECT_EQ(store->durable_position(), *position);
  }
  const DurableStoreStats stats = store->stats();
  EXPECT_EQ(stats.fsyncs, 0u);
  EXPECT_EQ(stats.groups, 50u);
  store.reset();
  StateMachine recovered;
  store = OpenStore(dir.path(), recovered);
  EXPECT_EQ(store->recovery().last_position, 50u);
}

TEST(DurableStore, FailedWriteInNeverModeRefusesEverythingAfter) {
  TempDir dir;
  auto plan = std::make_shared<testing::FaultPlan>();
  DurableStoreOptions options;
  options.fsync = FsyncPolicy::kNever;
  options.open_file = testing::FaultyFactory(plan);
  StateMachine machine;
  std::unique_ptr<DurableStore> store =
      OpenStore(dir.path(), machine, options);
  plan->writes_ok = plan->writes.load();
  absl::StatusOr<LogPosition> position =
      store->Append(Operation{1, op::Advance{}});
  ASSERT_TRUE(position.ok());
  EXPECT_EQ(store->WaitDurable(*position).code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(store->Append(Operation{2, op::Advance{}}).status().code(),
            absl::StatusCode::kUnavailable);
  store.reset();
  // The half-written record is a torn tail at the next start.
  StateMachine recovered;
  store = OpenStore(dir.path(), recovered);
  EXPECT_TRUE(store->recovery().tail_dropped);
  EXPECT_EQ(store->recovery().last_position, 0u);
}

// A full disk under every policy: the record that found it full waits in
// memory, AdmitsMutations names the data dir, the log resumes by itself once
// space is freed, and recovery has every record exactly once.
TEST(DurableStore, FullDiskRefusesMutationsUntilSpaceIsFreedThenResumes) {
  for (FsyncPolicy policy :
       {FsyncPolicy::kAlways, FsyncPolicy::kBatch, FsyncPolicy::kNever}) {
    SCOPED_TRACE(FsyncPolicyName(policy));
    TempDir dir;
    auto plan = std::make_shared<testing::FaultPlan>();
    plan->out_of_space = true;
    absl::Mutex mu;
    std::vector<absl::Status> changes;
    DurableStoreOptions options;
    options.fsync = policy;
    options.open_file = testing::FaultyFactory(plan);
    options.out_of_space_retry_ms = 5;
    options.on_space_change = [&](const absl::Status& status) {
      absl::MutexLock lock(&mu);
      changes.push_back(status);
    };
    const std::vector<Operation> ops = OperationGenerator(11).Take(30);
    StateMachine machine;
    std::unique_ptr<DurableStore> store =
        OpenStore(dir.path(), machine, options);
    const LogPosition good = ApplyAndAppend(*store, machine, ops, 0, 20);
    ASSERT_TRUE(store->WaitDurable(good).ok());

    plan->writes_ok = plan->writes.load();  // the disk is full now
    absl::StatusOr<LogPosition> waiting = store->Append(ops[20]);
    ASSERT_TRUE(waiting.ok());
    absl::Notification written;
    absl::Status outcome;
    store->OnDurable(*waiting, [&](absl::Status status) {
      outcome = status;
      written.Notify();
    });
    auto full = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu) {
      return !changes.empty();
    };
    {
      absl::MutexLock lock(&mu);
      mu.Await(absl::Condition(&full));
      EXPECT_EQ(changes[0].code(), absl::StatusCode::kUnavailable);
      EXPECT_NE(changes[0].message().find(dir.path()), std::string::npos)
          << changes[0];
      EXPECT_NE(changes[0].message().find("No space left on device"),
                std::string::npos)
          << changes[0];
    }
    const absl::Status refused = store->AdmitsMutations();
    EXPECT_EQ(refused.code(), absl::StatusCode::kUnavailable);
    EXPECT_NE(refused.message().find("is full"), std::string::npos);
    EXPECT_TRUE(store->health().ok());  // nothing is lost: not failed
    EXPECT_FALSE(store->SnapshotDue());
    EXPECT_FALSE(written.HasBeenNotified());
    EXPECT_EQ(store->durable_position(), good);
    // A change already made (a lapse, a server record) still goes in.
    ASSERT_TRUE(store->Append(ops[21]).ok());

    plan->writes_ok = 1 << 30;  // space is freed
    written.WaitForNotification();
    EXPECT_TRUE(outcome.ok()) << outcome;
    ASSERT_TRUE(store->WaitDurable(*waiting + 1).ok());
    EXPECT_TRUE(store->AdmitsMutations().ok());
    {
      absl::MutexLock lock(&mu);
      ASSERT_EQ(changes.size(), 2u);
      EXPECT_TRUE(changes[1].ok());
    }
    EXPECT_EQ(store->stats().out_of_space_episodes, 1u);
    const LogPosition last = ApplyAndAppend(*store, machine, ops, 22, 30);
    ASSERT_TRUE(store->WaitDurable(last).ok());
    store.reset();

    StateMachine recovered;
    store = OpenStore(dir.path(), recovered);
    ASSERT_NE(store, nullptr);
    EXPECT_FALSE(store->recovery().tail_dropped);
    EXPECT_EQ(store->recovery().last_position, 30u);
    EXPECT_EQ(CanonicalState(recovered), StateAfter(ops, 30));
  }
}

// The log found no room for its next quarter segment: mutations are
// refused at once, yet what was taken is written and becomes durable (so
// nothing waits in memory and reads behind it go on), and the store resumes
// by itself once the room is there.
TEST(DurableStore, ShortRoomRefusesMutationsWhileWhatWasTakenBecomesDurable) {
  for (FsyncPolicy policy :
       {FsyncPolicy::kAlways, FsyncPolicy::kBatch, FsyncPolicy::kNever}) {
    SCOPED_TRACE(FsyncPolicyName(policy));
    TempDir dir;
    auto plan = std::make_shared<testing::FaultPlan>();
    absl::Mutex mu;
    std::vector<absl::Status> changes;
    DurableStoreOptions options;
    options.fsync = policy;
    options.segment_bytes = 4096;
    options.preallocate_log_segments = true;
    options.open_file = testing::FaultyFactory(plan);
    options.out_of_space_retry_ms = 5;
    options.on_space_change = [&](const absl::Status& status) {
      absl::MutexLock lock(&mu);
      changes.push_back(status);
    };
    const std::vector<Operation> ops = OperationGenerator(12).Take(400);
    StateMachine machine;
    std::unique_ptr<DurableStore> store =
        OpenStore(dir.path(), machine, options);
    plan->preallocations_ok = plan->preallocations.load();  // disk full
    size_t next = 0;
    while (store->AdmitsMutations().ok()) {
      ASSERT_LT(next, 300u) << "room never ran short";
      const LogPosition last =
          ApplyAndAppend(*store, machine, ops, next, next + 1);
      ASSERT_TRUE(store->WaitDurable(last).ok());
      ++next;
    }
    const absl::Status refused = store->AdmitsMutations();
    EXPECT_EQ(refused.code(), absl::StatusCode::kUnavailable);
    EXPECT_NE(refused.message().find("is full"), std::string::npos) << refused;
    EXPECT_NE(refused.message().find(dir.path()), std::string::npos) << refused;
    EXPECT_TRUE(store->health().ok());
    // A change already made (a lapse, a server record) is written at once.
    const LogPosition taken =
        ApplyAndAppend(*store, machine, ops, next, next + 1);
    ++next;
    EXPECT_TRUE(store->WaitDurable(taken).ok());
    EXPECT_EQ(store->durable_position(), taken);
    EXPECT_FALSE(store->AdmitsMutations().ok());

    plan->preallocations_ok = 1 << 30;  // space is freed
    const absl::Time give_up = absl::Now() + absl::Seconds(5);
    while (!store->AdmitsMutations().ok() && absl::Now() < give_up) {
      absl::SleepFor(absl::Milliseconds(5));
    }
    EXPECT_TRUE(store->AdmitsMutations().ok());
    {
      absl::MutexLock lock(&mu);
      ASSERT_EQ(changes.size(), 2u);
      EXPECT_EQ(changes[0].code(), absl::StatusCode::kUnavailable);
      EXPECT_TRUE(changes[1].ok());
    }
    const LogPosition last = ApplyAndAppend(*store, machine, ops, next, 400);
    ASSERT_TRUE(store->WaitDurable(last).ok());
    store.reset();

    StateMachine recovered;
    store = OpenStore(dir.path(), recovered);
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->recovery().last_position, 400u);
    EXPECT_EQ(CanonicalState(recovered), StateAfter(ops, 400));
  }
}

TEST(DurableStore, CloseWhileTheDiskIsFullFailsTheWaitingRecords) {
  TempDir dir;
  auto plan = std::make_shared<testing::FaultPlan>();
  plan->out_of_space = true;
  DurableStoreOptions options;
  options.open_file = testing::FaultyFactory(plan);
  options.out_of_space_retry_ms = 5;
  StateMachine machine;
  std::unique_ptr<DurableStore> store =
      OpenStore(dir.path(), machine, options);
  plan->writes_ok = plan->writes.load();
  absl::StatusOr<LogPosition> waiting =
      store->Append(Operation{1, op::Advance{}});
  ASSERT_TRUE(waiting.ok());
  EXPECT_EQ(store->Close().code(), absl::StatusCode::kUnavailable);
  const absl::Status never = store->WaitDurable(*waiting);
  EXPECT_EQ(never.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(never.message().find("was full"), std::string::npos) << never;
}

TEST(DurableStore, SecondOpenerOfTheSameDirIsRefused) {
  TempDir dir;
  StateMachine a;
  std::unique_ptr<DurableStore> first = OpenStore(dir.path(), a);
  StateMachine b;
  absl::StatusOr<std::unique_ptr<DurableStore>> second =
      DurableStore::Open(dir.path(), {}, b);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(second.status().message().find("in use"), std::string::npos);
  first.reset();
  StateMachine c;
  EXPECT_NE(OpenStore(dir.path(), c), nullptr);
}

// A holder alive across a restart can renew within the grace; the grace is
// logged, so a second restart replays that renew successfully too.
TEST(DurableStore, RestartGraceLetsALivingHolderRenewAndIsReplayed) {
  TempDir dir;
  DurableStoreOptions options;
  options.restart_grace_ticks = 1000;
  options.snapshot_every_records = 0;  // replay everything
  StateMachine live;
  {
    std::unique_ptr<DurableStore> store = OpenStore(dir.path(), live, options);
    ApplyAndAppend(*store, live,
                   {Operation{0, op::Acquire{"holder", "L", 100}},
                    Operation{10, op::Acquire{"waiter", "L", 100}},
                    Operation{20, op::Acquire{"other", "M", 30}},
                    Operation{40, op::Write{"L", "k", "v1", 1}}},
                   0, 4);
  }
  // Crash at tick 40; the restart comes "much later" in real time.
  std::string after_second_start;
  {
    StateMachine machine;
    std::unique_ptr<DurableStore> store =
        OpenStore(dir.path(), machine, options);
    const RecoveryReport& r = store->recovery();
    EXPECT_EQ(r.last_tick, 40);
    EXPECT_EQ(r.resume_tick, 41);
    EXPECT_EQ(r.leases_graced, 2u);  // holder (100) and other (50) < 1040
    absl::StatusOr<LockView> view = machine.Inspect(41, "L");
    ASSERT_TRUE(view.ok());
    ASSERT_EQ(view->holders.size(), 1u);
    EXPECT_EQ(view->holders[0].client, "holder");
    EXPECT_EQ(view->holders[0].token, 1u);
    EXPECT_EQ(view->holders[0].expires_at, 1040);
    // Beyond its original expiry (100), the holder renews.
    const std::vector<Operation> more = {
        Operation{500, op::Renew{"holder", "L", 100}},
        Operation{550, op::Write{"L", "k", "v2", 1}}};
    ApplyAndAppend(*store, machine, more, 0, 2);
    EXPECT_EQ(machine.Inspect(550, "L")->holders[0].expires_at, 600);
    after_second_start = CanonicalState(machine);
  }
  StateMachine replayed;
  options.restart_grace_ticks = 0;
  std::unique_ptr<DurableStore> store =
      OpenStore(dir.path(), replayed, options);
  EXPECT_EQ(store->recovery().graces_replayed, 1u);
  EXPECT_EQ(CanonicalState(replayed), after_second_start);
  EXPECT_EQ(*replayed.Read(551, "L", "k"), std::optional<std::string>("v2"));
}

TEST(DurableStore, GraceFoldedIntoASnapshotKeepsTheNextStartCheap) {
  TempDir dir;
  DurableStoreOptions options;
  options.restart_grace_ticks = 1000;
  {
    StateMachine machine;
    std::unique_ptr<DurableStore> store =
        OpenStore(dir.path(), machine, options);
    ApplyAndAppend(*store, machine,
                   {Operation{0, op::Acquire{"a", "L", 100}}}, 0, 1);
  }
  std::string expected;
  {
    StateMachine machine;
    std::unique_ptr<DurableStore> store =
        OpenStore(dir.path(), machine, options);
    ASSERT_TRUE(store->SnapshotDue());
    ASSERT_TRUE(
        store->SubmitSnapshot(machine.Snapshot(), store->last_position()));
    ASSERT_TRUE(store->WaitForSnapshot().ok());
    EXPECT_FALSE(store->SnapshotDue());
    expected = CanonicalState(machine);
  }
  StateMachine machine;
  options.restart_grace_ticks = 0;
  std::unique_ptr<DurableStore> store = OpenStore(dir.path(), machine, options);
  EXPECT_EQ(store->recovery().records_replayed, 0u);
  EXPECT_EQ(store->recovery().graces_replayed, 0u);
  EXPECT_EQ(CanonicalState(machine), expected);
}

// The common restart: a snapshot, then only the grace. Open folds the
// grace into a new snapshot by itself, from the data it restored.
TEST(DurableStore, GraceRightAfterASnapshotIsFoldedByOpenItself) {
  TempDir dir;
  DurableStoreOptions options;
  options.restart_grace_ticks = 1000;
  {
    StateMachine machine;
    std::unique_ptr<DurableStore> store =
        OpenStore(dir.path(), machine, options);
    ApplyAndAppend(*store, machine,
                   {Operation{0, op::Acquire{"a", "L", 100}},
                    Operation{5, op::Acquire{"b", "L", 100}}},
                   0, 2);
    ASSERT_TRUE(store->SubmitSnapshot(machine.Snapshot(), 2));
    ASSERT_TRUE(store->WaitForSnapshot().ok());
  }
  std::string expected;
  {
    StateMachine machine;
    std::unique_ptr<DurableStore> store =
        OpenStore(dir.path(), machine, options);
    EXPECT_EQ(store->recovery().leases_graced, 1u);
    EXPECT_FALSE(store->SnapshotDue());
    ASSERT_TRUE(store->WaitForSnapshot().ok());
    EXPECT_EQ(store->stats().last_snapshot_position, 3u);  // the grace entry
    expected = CanonicalState(machine);
  }
  StateMachine machine;
  options.restart_grace_ticks = 0;
  std::unique_ptr<DurableStore> store = OpenStore(dir.path(), machine, options);
  EXPECT_EQ(store->recovery().snapshot_position, 3u);
  EXPECT_EQ(store->recovery().graces_replayed, 0u);
  EXPECT_EQ(CanonicalState(machine), expected);
}

TEST(DurableStore, DamagedNewestSnapshotFallsBackToTheOlderOne) {
  TempDir dir;
  DurableStoreOptions options;
  options.snapshot_every_records = 200;
  const std::vector<Operation> ops = OperationGenerator(9).Take(1000);
  {
    StateMachine machine;
    std::unique_ptr<DurableStore> store =
        OpenStore(dir.path(), machine, options);
    for (size_t i = 0; i < ops.size(); i += 100) {
      ApplyAndAppend(*store, machine, ops, i, i + 100);
      ASSERT_TRUE(store->WaitForSnapshot().ok());
    }
  }
  std::vector<std::string> snapshots;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    if (e.path().filename().string().rfind("snap-", 0) == 0) {
      snapshots.push_back(e.path());
    }
  }
  std::sort(snapshots.begin(), snapshots.end());
  ASSERT_EQ(snapshots.size(), 2u);
  std::string data = Slurp(snapshots.back());
  data[data.size() / 2] ^= 1;
  Spit(snapshots.back(), data);

  StateMachine machine;
  std::unique_ptr<DurableStore> store = OpenStore(dir.path(), machine, options);
  ASSERT_NE(store, nullptr);
  EXPECT_FALSE(store->recovery().warnings.empty());
  EXPECT_EQ(CanonicalState(machine), StateAfter(ops, 1000));
}

TEST(DurableStore, MissingLogRecordsAreAnErrorNotASilentGap) {
  TempDir dir;
  DurableStoreOptions options;
  options.segment_bytes = 512;
  options.snapshot_every_records = 0;
  {
    StateMachine machine;
    std::unique_ptr<DurableStore> store =
        OpenStore(dir.path(), machine, options);
    ApplyAndAppend(*store, machine, OperationGenerator(2).Take(300), 0, 300);
  }
  // A segment in the middle, then the first one.
  ASSERT_GT(CountFiles(dir.path(), "wal-"), 3u);
  std::vector<std::string> segments;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    if (e.path().filename().string().rfind("wal-", 0) == 0) {
      segments.push_back(e.path());
    }
  }
  std::sort(segments.begin(), segments.end());
  const std::string middle = Slurp(segments[2]);
  std::filesystem::remove(segments[2]);
  {
    StateMachine machine;
    absl::StatusOr<std::unique_ptr<DurableStore>> store =
        DurableStore::Open(dir.path(), options, machine);
    ASSERT_FALSE(store.ok());
    EXPECT_EQ(store.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_NE(store.status().message().find("gap in the log"),
              std::string::npos)
        << store.status();
  }
  Spit(segments[2], middle);
  std::filesystem::remove(dir.path() + "/" + FileLog::SegmentName(1));
  StateMachine machine;
  absl::StatusOr<std::unique_ptr<DurableStore>> store =
      DurableStore::Open(dir.path(), options, machine);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(store.status().message().find("missing"), std::string::npos)
      << store.status();
}

TEST(DurableStore, TornTailIsDroppedWithAWarningInTheReport) {
  TempDir dir;
  const std::vector<Operation> ops = OperationGenerator(12).Take(100);
  {
    StateMachine machine;
    std::unique_ptr<DurableStore> store = OpenStore(dir.path(), machine);
    ApplyAndAppend(*store, machine, ops, 0, 100);
  }
  std::string last_segment;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    const std::string name = e.path().filename();
    if (name.rfind("wal-", 0) == 0 && e.file_size() > kLogSegmentHeaderBytes &&
        e.path().string() > last_segment) {
      last_segment = e.path();
    }
  }
  // The records end where the segment's preallocated zeros begin.
  const std::string data = Slurp(last_segment);
  const size_t records_end = data.find_last_not_of('\0') + 1;
  Spit(last_segment, data.substr(0, records_end - 3));
  StateMachine machine;
  std::unique_ptr<DurableStore> store = OpenStore(dir.path(), machine);
  EXPECT_TRUE(store->recovery().tail_dropped);
  EXPECT_EQ(store->recovery().warnings.size(), 1u);
  EXPECT_EQ(store->recovery().last_position, 99u);
  EXPECT_EQ(CanonicalState(machine), StateAfter(ops, 99));
  EXPECT_NE(store->recovery().Summary().find("torn"), std::string::npos);
}

// A child process appends a random stream and reports each acknowledged
// position through a pipe; it is killed with SIGKILL at a random moment.
// After every kill, the recovered state is exactly the state after some
// prefix of the stream that includes every acknowledged record. 20 rounds,
// each continuing the same data dir; the kill comes a random time after the
// child's first acknowledgement, so every round appends something however
// slow the machine or the build (a sanitizer's) is.
TEST(DurableStore, KillNineAtRandomMomentsLosesNothingAcknowledged) {
  TempDir dir;
  const std::vector<Operation> ops = OperationGenerator(77).Take(60000);
  DurableStoreOptions options;
  options.snapshot_every_records = 2000;
  options.segment_bytes = 64 << 10;
  std::mt19937 rng(2024);
  LogPosition recovered = 0;
  for (int round = 0; round < 20; ++round) {
    SCOPED_TRACE(absl::StrCat("round ", round));
    // A fast machine can write every operation before a kill: then there
    // is nothing left for a child to acknowledge.
    if (recovered >= ops.size()) break;
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      ::close(fds[0]);
      StateMachine machine;
      absl::StatusOr<std::unique_ptr<DurableStore>> store =
          DurableStore::Open(dir.path(), options, machine);
      if (!store.ok()) ::_exit(3);
      const int out = fds[1];
      for (size_t i = (*store)->last_position(); i < ops.size(); ++i) {
        machine.Apply(ops[i]).status().IgnoreError();
        absl::StatusOr<LogPosition> p = (*store)->Append(ops[i]);
        if (!p.ok()) ::_exit(4);
        (*store)->OnDurable(*p, [out, p = *p](absl::Status status) {
          if (status.ok()) {
            (void)!::write(out, &p, sizeof(p));
          }
        });
        if ((*store)->SnapshotDue()) {
          (*store)->SubmitSnapshot(machine.Snapshot(), *p);
        }
        if (i % 64 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
      ::pause();
      ::_exit(0);
    }
    ::close(fds[1]);
    LogPosition acknowledged = 0;
    const bool first_acknowledged =
        ::read(fds[0], &acknowledged, sizeof(acknowledged)) ==
        sizeof(acknowledged);
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 20000));
    ::kill(child, SIGKILL);
    int wstatus = 0;
    ::waitpid(child, &wstatus, 0);
    ASSERT_TRUE(WIFSIGNALED(wstatus)) << "child exited with "
                                      << WEXITSTATUS(wstatus);
    ASSERT_TRUE(first_acknowledged);
    LogPosition p = 0;
    while (::read(fds[0], &p, sizeof(p)) == sizeof(p)) {
      acknowledged = std::max(acknowledged, p);
    }
    ::close(fds[0]);

    StateMachine machine;
    std::unique_ptr<DurableStore> store =
        OpenStore(dir.path(), machine, options);
    ASSERT_NE(store, nullptr);
    const LogPosition last = store->recovery().last_position;
    EXPECT_GE(last, acknowledged);
    EXPECT_GT(last, recovered);
    ASSERT_EQ(CanonicalState(machine), StateAfter(ops, last));
    recovered = last;
  }
}

}  // namespace
}  // namespace leasekeeper::storage

namespace leasekeeper::storage {
namespace {

ServerRecord Opened(Tick at, std::string id, std::string client) {
  return ServerRecord{at, srec::SessionOpened{std::move(id), std::move(client)}};
}
ServerRecord Answered(Tick at, std::string client, std::string request,
                      std::string entry) {
  return ServerRecord{at, srec::RetryAnswered{std::move(client),
                                              std::move(request),
                                              std::move(entry)}};
}

// Sessions and retry answers come back after a restart, from the log alone
// and from a snapshot plus the log after it; the core is not disturbed.
TEST(DurableStore, ServerRecordsAreRecoveredFromTheLogAndFromSnapshots) {
  for (const bool snapshot : {false, true}) {
    SCOPED_TRACE(snapshot ? "snapshot + log" : "log only");
    TempDir dir;
    const std::vector<Operation> ops = OperationGenerator(21).Take(40);
    ServerStateReplay expected;
    {
      StateMachine machine;
      std::unique_ptr<DurableStore> store = OpenStore(dir.path(), machine);
      ASSERT_NE(store, nullptr);
      ApplyAndAppend(*store, machine, ops, 0, 20);
      for (const ServerRecord& r :
           {Opened(50, "s-1", "a"), Answered(51, "a", "r-1", "first"),
            Opened(52, "s-2", "b")}) {
        ASSERT_TRUE(store->Append(r).ok());
        expected.Apply(r);
      }
      if (snapshot) {
        ServerState so_far = expected.Take();
        expected.Restore(so_far);
        ASSERT_TRUE(store->SubmitSnapshot(machine.Snapshot(),
                                          store->last_position(), so_far));
        ASSERT_TRUE(store->WaitForSnapshot().ok());
      }
      ApplyAndAppend(*store, machine, ops, 20, 40);
      const ServerRecord ended{60, srec::SessionEnded{"s-1"}};
      ASSERT_TRUE(store->Append(ended).ok());
      expected.Apply(ended);
      ASSERT_TRUE(store->Close().ok());
    }
    StateMachine machine;
    ServerState recovered;
    absl::StatusOr<std::unique_ptr<DurableStore>> store =
        DurableStore::Open(dir.path(), {}, machine, &recovered);
    ASSERT_TRUE(store.ok()) << store.status();
    EXPECT_EQ((*store)->recovery().snapshot_position > 0, snapshot);
    EXPECT_EQ((*store)->recovery().sessions, 1u);
    EXPECT_EQ((*store)->recovery().retry_entries, 1u);
    EXPECT_TRUE(SameServerState(recovered, expected.Take()));
    EXPECT_EQ(CanonicalState(machine), StateAfter(ops, 40));
  }
}

}  // namespace
}  // namespace leasekeeper::storage

namespace leasekeeper::storage {
namespace {

// The OperationLog view of the WAL: every entry comes back, decoded, in
// position order, operations and server records alike.
TEST(DurableStore, ReadFromGivesBackEveryDurableEntryInOrder) {
  TempDir dir;
  StateMachine machine;
  std::unique_ptr<DurableStore> store = OpenStore(dir.path(), machine);
  ASSERT_NE(store, nullptr);
  OperationLog& log = *store;
  const std::vector<Operation> ops = OperationGenerator(5).Take(10);
  for (const Operation& op : ops) ASSERT_TRUE(log.Append(op).ok());
  const ServerRecord record{99, srec::SessionOpened{"s-1", "a"}};
  ASSERT_TRUE(log.Append(record).ok());
  ASSERT_TRUE(log.WaitDurable(log.last_position()).ok());

  std::vector<LogPosition> positions;
  ASSERT_TRUE(log.ReadFrom(4, [&](LogPosition position, const LogEntry& entry) {
                   positions.push_back(position);
                   if (position <= ops.size()) {
                     EXPECT_TRUE(SameOperation(std::get<Operation>(entry),
                                               ops[position - 1]));
                   } else {
                     EXPECT_TRUE(SameServerRecord(
                         std::get<ServerRecord>(entry), record));
                   }
                   return absl::OkStatus();
                 }).ok());
  std::vector<LogPosition> expected;
  for (LogPosition p = 4; p <= ops.size() + 1; ++p) expected.push_back(p);
  EXPECT_EQ(positions, expected);
}

}  // namespace
}  // namespace leasekeeper::storage
