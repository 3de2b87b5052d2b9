// The replicated log's storage pieces: the batch and key layout, the
// follower's replica, and the guarded append against a real one-member etcd
// (tests/cluster/cluster_harness.h).
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "storage/etcd_client.h"
#include "storage/etcd_election.h"
#include "storage/etcd_keys.h"
#include "storage/etcd_lease.h"
#include "storage/etcd_log.h"
#include "storage/log_replica.h"
#include "storage/operation_codec.h"
#include "storage/snapshot_file.h"
#include "tests/cluster/cluster_harness.h"

namespace leasekeeper::testing {
namespace {

using std::chrono::milliseconds;
using storage::ClusterKeys;
using storage::LogPosition;

Operation AcquireOp(Tick at, const std::string& client,
                    const std::string& lock) {
  return Operation{at, op::Acquire{client, lock, 60'000}};
}

TEST(EtcdKeysTest, LogKeysSortInPositionOrderAndParseBack) {
  const ClusterKeys keys("c1");
  EXPECT_EQ(keys.log(7), "/leasekeeper/c1/log/00000000000000000007");
  EXPECT_LT(keys.log(9), keys.log(10));
  EXPECT_LT(keys.log(99'999), keys.log(100'000));
  EXPECT_EQ(keys.LogPositionOf(keys.log(123)), 123u);
  EXPECT_FALSE(keys.LogPositionOf("/leasekeeper/c2/log/00000000000000000001")
                   .has_value());
  EXPECT_FALSE(keys.LogPositionOf(keys.leader()).has_value());
}

TEST(EtcdKeysTest, BatchRoundTripsAndACutBatchIsDataLoss) {
  const std::vector<std::string> records = {"a", std::string(300, 'b'), ""};
  const std::string value = storage::EncodeBatch(records);
  absl::StatusOr<std::vector<absl::string_view>> decoded =
      storage::DecodeBatch(value);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ASSERT_EQ(decoded->size(), 3u);
  EXPECT_EQ((*decoded)[1], records[1]);
  EXPECT_TRUE(absl::IsDataLoss(
      storage::DecodeBatch(value.substr(0, value.size() - 10)).status()));
  EXPECT_TRUE(absl::IsDataLoss(storage::DecodeBatch(value + "x").status()));
}

TEST(EtcdKeysTest, MemberReportRoundTrips) {
  const storage::MemberReport report{.node_id = "n1",
                                     .advertise = "127.0.0.1:9",
                                     .role = 2,
                                     .applied = 41,
                                     .snapshot = 40};
  std::optional<storage::MemberReport> back =
      storage::DecodeMember(storage::EncodeMember(report));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->node_id, "n1");
  EXPECT_EQ(back->applied, 41u);
  EXPECT_EQ(back->snapshot, 40u);
  EXPECT_FALSE(storage::DecodeMember("node=n1").has_value());
}

TEST(LogReplicaTest, AppliesInOrderOnlyAndReopensFromItsSnapshot) {
  TempDir dir;
  const std::string path = dir.path() + "/replica";
  {
    absl::StatusOr<std::unique_ptr<storage::LogReplica>> replica =
        storage::LogReplica::Open(path, CoreConfig{});
    ASSERT_TRUE(replica.ok()) << replica.status();
    ASSERT_TRUE((*replica)
                    ->Apply(1, storage::EncodeOperation(AcquireOp(5, "a", "L")))
                    .ok());
    // Position 3 before 2: refused, nothing changes.
    EXPECT_TRUE(absl::IsFailedPrecondition((*replica)->Apply(
        3, storage::EncodeOperation(AcquireOp(6, "b", "M")))));
    EXPECT_EQ((*replica)->applied(), 1u);
    ASSERT_TRUE((*replica)
                    ->Apply(2, storage::EncodeOperation(AcquireOp(6, "b", "M")))
                    .ok());
    ASSERT_TRUE((*replica)->WriteSnapshot().ok());
  }
  // A snapshot write that a crash interrupted is removed on open.
  const std::string interrupted =
      path + "/" + storage::SnapshotFileName(3) + ".tmp";
  std::ofstream(interrupted) << "torn";
  ASSERT_TRUE(std::filesystem::exists(interrupted));
  absl::StatusOr<std::unique_ptr<storage::LogReplica>> reopened =
      storage::LogReplica::Open(path, CoreConfig{});
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_EQ((*reopened)->applied(), 2u);
  EXPECT_EQ((*reopened)->machine().table().LastToken("M"), 1u);
  EXPECT_EQ((*reopened)->machine().table().held_lease_count(), 2u);
  EXPECT_FALSE(std::filesystem::exists(interrupted));
}

// A one-member etcd and a leadership on it.
class EtcdLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    etcd_ = EtcdCluster::Start(dir_.path(), 1);
    ASSERT_NE(etcd_, nullptr);
    storage::EtcdClientOptions options;
    options.endpoints = etcd_->endpoint_list();
    client_ = *storage::EtcdClient::Connect(options);
  }

  // Grants a lease and wins the election on it.
  int64_t Lead(std::unique_ptr<storage::EtcdLease>& lease,
               const std::string& node) {
    absl::StatusOr<std::unique_ptr<storage::EtcdLease>> granted =
        storage::EtcdLease::Grant(*client_, storage::EtcdLeaseOptions{});
    EXPECT_TRUE(granted.ok()) << granted.status();
    if (!granted.ok()) return 0;
    lease = *std::move(granted);
    absl::StatusOr<storage::CampaignResult> won = storage::Campaign(
        *client_, keys_, lease->id(), storage::LeaderRecord{node, "x:1"});
    EXPECT_TRUE(won.ok() && won->won);
    return won.ok() ? won->view.epoch : 0;
  }

  std::unique_ptr<storage::EtcdLog> OpenLog(storage::EtcdLease& lease,
                                            int64_t epoch, LogPosition next) {
    storage::EtcdLogOptions options;
    options.cluster = "t";
    options.epoch = epoch;
    options.next_position = next;
    absl::StatusOr<std::unique_ptr<storage::EtcdLog>> log =
        storage::EtcdLog::Open(*client_, lease, options);
    EXPECT_TRUE(log.ok()) << log.status();
    return log.ok() ? *std::move(log) : nullptr;
  }

  // Appends `op` and waits until etcd has it.
  static void AppendDurably(storage::EtcdLog& log, const Operation& op) {
    absl::StatusOr<LogPosition> position = log.Append(op);
    ASSERT_TRUE(position.ok()) << position.status();
    ASSERT_TRUE(log.WaitDurable(*position).ok());
  }

  std::vector<LogPosition> ReadPositions(LogPosition from) {
    std::vector<LogPosition> positions;
    absl::Status read = storage::ReadLogFrom(
        *client_, keys_, from,
        [&](LogPosition position, absl::string_view) {
          positions.push_back(position);
          return absl::OkStatus();
        });
    EXPECT_TRUE(read.ok()) << read;
    return positions;
  }

  TempDir dir_;
  std::unique_ptr<EtcdCluster> etcd_;
  std::unique_ptr<storage::EtcdClient> client_;
  const ClusterKeys keys_{"t"};
};

TEST_F(EtcdLogTest, AppendsAreDurableOnlyOnceInEtcdAndReadBackInOrder) {
  std::unique_ptr<storage::EtcdLease> lease;
  const int64_t epoch = Lead(lease, "n1");
  std::unique_ptr<storage::EtcdLog> log = OpenLog(*lease, epoch, 1);
  ASSERT_NE(log, nullptr);
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(log->Append(AcquireOp(i, absl::StrCat("c", i), "L")).ok());
  }
  ASSERT_TRUE(log->WaitDurable(200).ok());
  EXPECT_EQ(log->durable_position(), 200u);
  std::vector<LogPosition> positions = ReadPositions(1);
  ASSERT_EQ(positions.size(), 200u);
  for (size_t i = 0; i < positions.size(); ++i) EXPECT_EQ(positions[i], i + 1);
  // Reading from the middle of a batch starts at that record.
  EXPECT_EQ(ReadPositions(150).front(), 150u);
  const storage::EtcdLogStats stats = log->stats();
  EXPECT_GE(stats.transactions, 1u);
  EXPECT_LE(stats.transactions, 200u);
}

TEST_F(EtcdLogTest, DeposedLeaderCanNeverAppend) {
  std::unique_ptr<storage::EtcdLease> lease;
  const int64_t epoch = Lead(lease, "n1");
  std::unique_ptr<storage::EtcdLog> log = OpenLog(*lease, epoch, 1);
  ASSERT_NE(log, nullptr);
  AppendDurably(*log, AcquireOp(1, "a", "L"));
  // Another node leads now (the old key gone, a new one created), while
  // this node's lease is still valid: only the compare can stop it.
  ASSERT_TRUE(storage::Resign(*client_, keys_, epoch).ok());
  std::unique_ptr<storage::EtcdLease> other;
  const int64_t next_epoch = Lead(other, "n2");
  ASSERT_GT(next_epoch, epoch);
  ASSERT_TRUE(lease->Valid());
  absl::StatusOr<LogPosition> late = log->Append(AcquireOp(2, "b", "L"));
  ASSERT_TRUE(late.ok());
  const absl::Status durable = log->WaitDurable(*late);
  EXPECT_TRUE(absl::IsUnavailable(durable)) << durable;
  EXPECT_NE(durable.message().find("deposed"), std::string::npos) << durable;
  // Nothing reached etcd, and the log refuses from now on.
  EXPECT_EQ(ReadPositions(1).size(), 1u);
  EXPECT_FALSE(log->health().ok());
  EXPECT_FALSE(log->Append(AcquireOp(3, "c", "L")).ok());
}

TEST_F(EtcdLogTest, LeaderStopsAppendingBeforeEtcdCanExpireItsLease) {
  std::unique_ptr<storage::EtcdLease> lease;
  const int64_t epoch = Lead(lease, "n1");
  std::unique_ptr<storage::EtcdLog> log = OpenLog(*lease, epoch, 1);
  ASSERT_NE(log, nullptr);
  // etcd frozen: it cannot expire anything, yet keepalives go unanswered,
  // so the leader's own clock must give up on the lease.
  etcd_->Pause(0);
  const auto paused = std::chrono::steady_clock::now();
  ASSERT_TRUE(Eventually([&] { return !lease->Valid(); }, milliseconds(3000)));
  const auto gave_up = std::chrono::steady_clock::now() - paused;
  etcd_->Resume(0);
  // Within ttl (1 s) minus the margin of the last answered keepalive.
  EXPECT_LT(gave_up, milliseconds(1000));
  EXPECT_TRUE(absl::IsUnavailable(log->health()));
  EXPECT_FALSE(log->Append(AcquireOp(1, "a", "L")).ok());
  EXPECT_TRUE(ReadPositions(1).empty());
}

TEST_F(EtcdLogTest, ReadingFromATrimmedPositionIsOutOfRange) {
  std::unique_ptr<storage::EtcdLease> lease;
  const int64_t epoch = Lead(lease, "n1");
  std::unique_ptr<storage::EtcdLog> log = OpenLog(*lease, epoch, 1);
  ASSERT_NE(log, nullptr);
  AppendDurably(*log, AcquireOp(1, "a", "L"));
  AppendDurably(*log, AcquireOp(2, "b", "M"));
  etcdserverpb::DeleteRangeRequest trim;
  trim.set_key(keys_.log(1));
  ASSERT_TRUE(client_->DeleteRange(trim).ok());
  const absl::Status read = storage::ReadLogFrom(
      *client_, keys_, 1,
      [](LogPosition, absl::string_view) { return absl::OkStatus(); });
  EXPECT_TRUE(absl::IsOutOfRange(read)) << read;
  EXPECT_EQ(ReadPositions(2).size(), 1u);
}

}  // namespace
}  // namespace leasekeeper::testing
