// The replicated log's storage pieces: the batch and key layout, the
// follower's replica, and the guarded append against a real one-member etcd
// (harness/local_cluster.h).
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cluster/etcd_client.h"
#include "cluster/etcd_election.h"
#include "cluster/etcd_keys.h"
#include "cluster/etcd_lease.h"
#include "cluster/etcd_log.h"
#include "cluster/etcd_log_follower.h"
#include "cluster/etcd_peer_secret.h"
#include "cluster/log_replica.h"
#include "cluster/snapshot_source.h"
#include "core/state_machine.h"
#include "gtest/gtest.h"
#include "harness/local_cluster.h"
#include "storage/operation_codec.h"
#include "storage/snapshot_file.h"
#include "tests/storage/storage_test_util.h"

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

// A source that answers every Fetch with one prepared snapshot.
class FakeSnapshotSource final : public storage::SnapshotSource {
 public:
  explicit FakeSnapshotSource(absl::StatusOr<storage::FetchedSnapshot> answer)
      : answer_(std::move(answer)) {}
  absl::StatusOr<storage::FetchedSnapshot> Fetch(
      LogPosition min_covered) override {
    asked_.push_back(min_covered);
    return answer_;
  }
  void Cancel() override {}
  void Resume() override {}
  const std::vector<LogPosition>& asked() const { return asked_; }

 private:
  absl::StatusOr<storage::FetchedSnapshot> answer_;
  std::vector<LogPosition> asked_;
};

// What another member would send: the file of a replica that applied
// `records` acquires (positions 1..records), as its sender announces it.
storage::FetchedSnapshot SnapshotOfAnotherMember(const std::string& dir,
                                                 LogPosition records) {
  absl::StatusOr<std::unique_ptr<storage::LogReplica>> replica =
      storage::LogReplica::Open(dir, CoreConfig{});
  EXPECT_TRUE(replica.ok()) << replica.status();
  for (LogPosition p = 1; p <= records; ++p) {
    EXPECT_TRUE((*replica)
                    ->Apply(p, storage::EncodeOperation(AcquireOp(
                                   static_cast<Tick>(p), absl::StrCat("c", p),
                                   absl::StrCat("L", p))))
                    .ok());
  }
  EXPECT_TRUE((*replica)->WriteSnapshot().ok());
  storage::FetchedSnapshot fetched;
  absl::StatusOr<std::optional<storage::SnapshotFileBytes>> file =
      storage::ReadNewestSnapshotBytes(dir);
  EXPECT_TRUE(file.ok() && file->has_value());
  if (!file.ok() || !file->has_value()) return fetched;
  fetched.covered = (*file)->info.covered;
  fetched.payload_crc32c = (*file)->info.payload_crc32c;
  fetched.bytes = (*file)->bytes;
  return fetched;
}

// A follower's replica in its own data dir, next to another member's.
class SnapshotTransferTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<storage::LogReplica>> opened =
        storage::LogReplica::Open(follower_dir(), CoreConfig{});
    ASSERT_TRUE(opened.ok()) << opened.status();
    follower_ = *std::move(opened);
  }
  std::string leader_dir() const { return dir_.path() + "/leader"; }
  std::string follower_dir() const { return dir_.path() + "/follower"; }

  TempDir dir_;
  std::unique_ptr<storage::LogReplica> follower_;
};

TEST_F(SnapshotTransferTest, TrimmedReplicaInstallsASnapshotPastTheTrimAndKeepsIt) {
  FakeSnapshotSource source(SnapshotOfAnotherMember(leader_dir(), 5));
  // The log in etcd starts at 6: the replica needs 1..5.
  const absl::Status installed = storage::EtcdLogFollower::CatchUpBySnapshot(
      source, *follower_, /*log_start=*/6);
  ASSERT_TRUE(installed.ok()) << installed;
  EXPECT_EQ(source.asked(), std::vector<LogPosition>{5});
  EXPECT_EQ(follower_->applied(), 5u);
  EXPECT_EQ(follower_->snapshot_position(), 5u);
  EXPECT_EQ(follower_->machine().table().held_lease_count(), 5u);
  // It follows on from there.
  EXPECT_TRUE(
      follower_->Apply(6, storage::EncodeOperation(AcquireOp(6, "d", "M")))
          .ok());
  // The snapshot is in its data dir: a restart finds it.
  follower_.reset();
  absl::StatusOr<std::unique_ptr<storage::LogReplica>> reopened =
      storage::LogReplica::Open(follower_dir(), CoreConfig{});
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_EQ((*reopened)->applied(), 5u);
  EXPECT_EQ((*reopened)->machine().table().LastToken("L3"), 1u);
}

TEST_F(SnapshotTransferTest, SnapshotWithABadChecksumIsRefusedAndNothingInstalled) {
  storage::FetchedSnapshot sent = SnapshotOfAnotherMember(leader_dir(), 5);
  ASSERT_GT(sent.bytes.size(), storage::kSnapshotHeaderBytes);
  sent.bytes.back() = static_cast<char>(sent.bytes.back() ^ 0x40);
  FakeSnapshotSource source(sent);
  ASSERT_TRUE(
      follower_->Apply(1, storage::EncodeOperation(AcquireOp(1, "x", "X")))
          .ok());
  const absl::Status installed =
      storage::EtcdLogFollower::CatchUpBySnapshot(source, *follower_, 6);
  EXPECT_TRUE(absl::IsDataLoss(installed)) << installed;
  EXPECT_EQ(follower_->applied(), 1u);
  EXPECT_EQ(follower_->machine().table().LastToken("X"), 1u);
  EXPECT_EQ(storage::testing::CountFiles(follower_dir(), "snap-"), 0u);
}

TEST_F(SnapshotTransferTest, SnapshotNotMatchingItsAnnouncementIsRefused) {
  storage::FetchedSnapshot sent = SnapshotOfAnotherMember(leader_dir(), 5);
  sent.payload_crc32c ^= 1;
  FakeSnapshotSource source(sent);
  const absl::Status installed =
      storage::EtcdLogFollower::CatchUpBySnapshot(source, *follower_, 6);
  EXPECT_TRUE(absl::IsDataLoss(installed)) << installed;
  EXPECT_EQ(follower_->applied(), 0u);
  EXPECT_EQ(storage::testing::CountFiles(follower_dir(), "snap-"), 0u);
}

TEST_F(SnapshotTransferTest, SnapshotBehindTheTrimPointIsRefusedAndNothingInstalled) {
  const storage::FetchedSnapshot sent =
      SnapshotOfAnotherMember(leader_dir(), 5);
  // The log starts at 9: a snapshot of 1..5 leaves 6..8 missing, whether
  // the sender says so honestly or claims more than the file holds.
  FakeSnapshotSource honest(sent);
  const absl::Status refused =
      storage::EtcdLogFollower::CatchUpBySnapshot(honest, *follower_, 9);
  EXPECT_TRUE(absl::IsFailedPrecondition(refused)) << refused;
  storage::FetchedSnapshot boasting = sent;
  boasting.covered = 8;
  FakeSnapshotSource liar(boasting);
  const absl::Status lied =
      storage::EtcdLogFollower::CatchUpBySnapshot(liar, *follower_, 9);
  EXPECT_FALSE(lied.ok());
  EXPECT_EQ(follower_->applied(), 0u);
  EXPECT_EQ(storage::testing::CountFiles(follower_dir(), "snap-"), 0u);
  // The replica itself refuses a snapshot that does not take it forward.
  EXPECT_TRUE(absl::IsFailedPrecondition(
      follower_->InstallSnapshot(sent, /*min_covered=*/6)));
  EXPECT_EQ(storage::testing::CountFiles(follower_dir(), "snap-"), 0u);
}

TEST_F(SnapshotTransferTest, FailedFetchIsTheSourcesErrorAndChangesNothing) {
  FakeSnapshotSource source(
      absl::UnavailableError("snapshot transfer: leader unknown"));
  const absl::Status fetched =
      storage::EtcdLogFollower::CatchUpBySnapshot(source, *follower_, 6);
  EXPECT_TRUE(absl::IsUnavailable(fetched)) << fetched;
  EXPECT_EQ(follower_->applied(), 0u);
}

TEST_F(SnapshotTransferTest, DamagedLocalSnapshotReachesTheFollowersSnapshotStatus) {
  const std::string path = dir_.path() + "/replica";
  SnapshotOfAnotherMember(path, 3);
  // A newer file that does not check out: the replica falls back to 1..3.
  std::ofstream(path + "/" + storage::SnapshotFileName(7)) << "not a snapshot";
  absl::StatusOr<std::unique_ptr<storage::LogReplica>> replica =
      storage::LogReplica::Open(path, CoreConfig{});
  ASSERT_TRUE(replica.ok()) << replica.status();
  EXPECT_EQ((*replica)->applied(), 3u);
  ASSERT_EQ((*replica)->damaged_snapshots().size(), 1u);
  storage::EtcdClientOptions options;
  options.endpoints = {"127.0.0.1:1"};  // never called: not started
  absl::StatusOr<std::unique_ptr<storage::EtcdClient>> client =
      storage::EtcdClient::Connect(options);
  ASSERT_TRUE(client.ok()) << client.status();
  storage::EtcdLogFollower follower(**client, ClusterKeys("t"), **replica, 0);
  const absl::Status snapshots = follower.snapshot_status();
  EXPECT_TRUE(absl::IsDataLoss(snapshots)) << snapshots;
  EXPECT_NE(snapshots.message().find(storage::SnapshotFileName(7)),
            absl::string_view::npos)
      << snapshots;
}

// Until its first read of the log has ended, a follower cannot know
// whether the log was trimmed past it: it is not fit to lead
// (ClusterNode campaigns only on OK or UNAVAILABLE).
TEST_F(SnapshotTransferTest, FollowerThatHasNotReadTheLogIsNotFitToLead) {
  storage::EtcdClientOptions options;
  options.endpoints = {"127.0.0.1:1"};  // never called: not started
  absl::StatusOr<std::unique_ptr<storage::EtcdClient>> client =
      storage::EtcdClient::Connect(options);
  ASSERT_TRUE(client.ok()) << client.status();
  storage::EtcdLogFollower follower(**client, ClusterKeys("t"), *follower_, 0);
  const absl::Status status = follower.status();
  EXPECT_TRUE(absl::IsFailedPrecondition(status)) << status;
}

TEST(PeerSecretTest, ComparisonIsExact) {
  EXPECT_TRUE(storage::PeerSecretsEqual("abc", "abc"));
  EXPECT_FALSE(storage::PeerSecretsEqual("abc", "abd"));
  EXPECT_FALSE(storage::PeerSecretsEqual("abc", "ab"));
  EXPECT_FALSE(storage::PeerSecretsEqual("", "a"));
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

  // Two batches in etcd, at positions 1 and 2, appended by a leadership of
  // n1 that lives in lease_ and log_.
  void AppendTwoBatches() {
    const int64_t epoch = Lead(lease_, "n1");
    log_ = OpenLog(*lease_, epoch, 1);
    ASSERT_NE(log_, nullptr);
    AppendDurably(*log_, AcquireOp(1, "a", "L"));
    AppendDurably(*log_, AcquireOp(2, "b", "M"));
  }
  // Deletes the batch at position 1, as the leader's trimming would.
  void TrimFirstBatch() {
    etcdserverpb::DeleteRangeRequest trim;
    trim.set_key(keys_.log(1));
    ASSERT_TRUE(client_->DeleteRange(trim).ok());
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
  std::unique_ptr<storage::EtcdLease> lease_;
  std::unique_ptr<storage::EtcdLog> log_;
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

TEST_F(EtcdLogTest, ASnapshotIsDueEveryNRecordsAndNotWhileOneIsBeingWritten) {
  std::unique_ptr<storage::EtcdLease> lease;
  const int64_t epoch = Lead(lease, "n1");
  storage::EtcdLogOptions options;
  options.cluster = "t";
  options.epoch = epoch;
  options.next_position = 1;
  options.snapshot_every_records = 3;
  options.snapshot_dir = dir_.path() + "/snapshots";
  std::filesystem::create_directories(options.snapshot_dir);
  absl::StatusOr<std::unique_ptr<storage::EtcdLog>> opened =
      storage::EtcdLog::Open(*client_, *lease, options);
  ASSERT_TRUE(opened.ok()) << opened.status();
  storage::EtcdLog& log = **opened;
  StateMachine machine;
  auto apply = [&](int i) {
    const Operation op = AcquireOp(i, absl::StrCat("c", i), "L");
    ASSERT_TRUE(machine.Apply(op).ok());
    ASSERT_TRUE(log.Append(op).ok());
  };
  apply(1);
  apply(2);
  EXPECT_FALSE(log.SnapshotDue());  // 2 records since none
  apply(3);
  EXPECT_TRUE(log.SnapshotDue());
  ASSERT_TRUE(log.SubmitSnapshot(machine.Snapshot(), 3, storage::ServerState{}));
  // One is being written (it waits for record 3 in etcd, then fsyncs).
  EXPECT_FALSE(log.SnapshotDue());
  const auto deadline = std::chrono::steady_clock::now() + milliseconds(10'000);
  while (log.stats().snapshot_position < 3 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  ASSERT_EQ(log.stats().snapshot_position, 3u);
  EXPECT_FALSE(log.SnapshotDue());  // no record since the snapshot at 3
  apply(4);
  apply(5);
  EXPECT_FALSE(log.SnapshotDue());
  apply(6);
  EXPECT_TRUE(log.SnapshotDue());
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

// The raft index of the etcd member at `endpoint`: it rises by one for
// every entry etcd's raft log takes (any transaction with a write in
// either branch, any put), not for reads.
uint64_t RaftIndex(const std::string& endpoint) {
  std::unique_ptr<etcdserverpb::Maintenance::Stub> maintenance =
      etcdserverpb::Maintenance::NewStub(
          grpc::CreateChannel(endpoint, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(5));
  etcdserverpb::StatusResponse status;
  const grpc::Status called =
      maintenance->Status(&context, etcdserverpb::StatusRequest(), &status);
  EXPECT_TRUE(called.ok()) << called.error_message();
  return status.raftindex();
}

TEST_F(EtcdLogTest, ACandidatePollingALivingLeaderWritesNothingToEtcd) {
  std::unique_ptr<storage::EtcdLease> lease;
  const int64_t epoch = Lead(lease, "n1");
  ASSERT_GT(epoch, 0);
  absl::StatusOr<std::unique_ptr<storage::EtcdLease>> candidate_lease =
      storage::EtcdLease::Grant(*client_, storage::EtcdLeaseOptions{});
  ASSERT_TRUE(candidate_lease.ok()) << candidate_lease.status();
  const uint64_t before = RaftIndex(etcd_->endpoint_list()[0]);
  constexpr int kCampaigns = 20;
  for (int i = 0; i < kCampaigns; ++i) {
    absl::StatusOr<storage::CampaignResult> lost = storage::Campaign(
        *client_, keys_, (*candidate_lease)->id(),
        storage::LeaderRecord{"n2", "x:2"});
    ASSERT_TRUE(lost.ok()) << lost.status();
    EXPECT_FALSE(lost->won);
    EXPECT_EQ(lost->view.epoch, epoch);
    EXPECT_EQ(lost->view.leader.node_id, "n1");
  }
  // Lease keepalives are not raft entries either; allow a few entries for
  // anything etcd does by itself meanwhile, far fewer than one a campaign.
  EXPECT_LT(RaftIndex(etcd_->endpoint_list()[0]) - before, 5u);
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
  // The last answered keepalive was sent before the pause, so the lease is
  // given up by then + ttl (1 s) - margin. Checked at pause + ttl: a loaded
  // machine can only wake this thread later, never make Valid() true.
  std::this_thread::sleep_until(paused + milliseconds(1000));
  const bool valid_at_ttl = lease->Valid();
  etcd_->Resume(0);
  EXPECT_FALSE(valid_at_ttl);
  EXPECT_TRUE(absl::IsUnavailable(log->health()));
  EXPECT_FALSE(log->Append(AcquireOp(1, "a", "L")).ok());
  EXPECT_TRUE(ReadPositions(1).empty());
}

TEST_F(EtcdLogTest, PeerSecretIsCreatedOnceAndTheSameForEveryNode) {
  absl::StatusOr<std::string> first = storage::EnsurePeerSecret(*client_, keys_);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->size(), 64u);
  absl::StatusOr<std::string> second =
      storage::EnsurePeerSecret(*client_, keys_);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(*second, *first);
  absl::StatusOr<std::string> other =
      storage::EnsurePeerSecret(*client_, ClusterKeys("other"));
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_NE(*other, *first);
}

TEST_F(EtcdLogTest, BatchAtOrBeforeAPositionAndTheFirstPosition) {
  AppendTwoBatches();
  ASSERT_FALSE(HasFatalFailure());
  absl::StatusOr<std::optional<std::string>> at2 =
      storage::BatchKeyAtOrBefore(*client_, keys_, 2);
  ASSERT_TRUE(at2.ok()) << at2.status();
  EXPECT_EQ(*at2, keys_.log(2));
  absl::StatusOr<std::optional<std::string>> at9 =
      storage::BatchKeyAtOrBefore(*client_, keys_, 9);
  ASSERT_TRUE(at9.ok()) << at9.status();
  EXPECT_EQ(*at9, keys_.log(2));
  TrimFirstBatch();
  ASSERT_FALSE(HasFatalFailure());
  absl::StatusOr<std::optional<std::string>> at1 =
      storage::BatchKeyAtOrBefore(*client_, keys_, 1);
  ASSERT_TRUE(at1.ok()) << at1.status();
  EXPECT_FALSE(at1->has_value());
  absl::StatusOr<std::optional<LogPosition>> first =
      storage::FirstLogPosition(*client_, keys_);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(*first, std::optional<LogPosition>(2));
}

TEST_F(EtcdLogTest, ReadingFromATrimmedPositionIsOutOfRange) {
  AppendTwoBatches();
  ASSERT_FALSE(HasFatalFailure());
  TrimFirstBatch();
  ASSERT_FALSE(HasFatalFailure());
  const absl::Status read = storage::ReadLogFrom(
      *client_, keys_, 1,
      [](LogPosition, absl::string_view) { return absl::OkStatus(); });
  EXPECT_TRUE(absl::IsOutOfRange(read)) << read;
  EXPECT_EQ(ReadPositions(2).size(), 1u);
}

}  // namespace
}  // namespace leasekeeper::testing
