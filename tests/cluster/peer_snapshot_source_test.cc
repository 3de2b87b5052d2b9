// PeerSnapshotSource against a scripted ClusterPeer leader in process
// (127.0.0.1, a port the kernel picks): what a follower accepts from the
// stream, how a transfer ends when it stalls, and that a transfer which
// keeps progressing is never cut for its length.
#include "cluster/peer_snapshot_source.h"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "cluster/etcd_peer_secret.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "gtest/gtest.h"
#include "leasekeeper/v1/cluster_peer.grpc.pb.h"

namespace leasekeeper::storage {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

constexpr char kCluster[] = "test-cluster";
constexpr char kSecret[] = "the-peer-secret";

// What the scripted leader sends: `chunks` in order, `gap` before each one
// after the first, then, if `stall_at_end`, nothing more until the call is
// cancelled.
struct Script {
  std::vector<v1::SnapshotChunk> chunks;
  milliseconds gap{0};
  bool stall_at_end = false;
};

// A snapshot file's bytes cut into `count` chunks of `size` bytes.
Script ChunksOf(int count, size_t size, milliseconds gap) {
  Script script;
  script.gap = gap;
  for (int i = 0; i < count; ++i) {
    v1::SnapshotChunk chunk;
    if (i == 0) {
      chunk.set_covered_position(42);
      chunk.set_file_bytes(count * size);
      chunk.set_payload_crc32c(7);
    }
    chunk.set_offset(i * size);
    chunk.set_data(std::string(size, static_cast<char>('a' + i)));
    script.chunks.push_back(std::move(chunk));
  }
  return script;
}

class ScriptedLeader final : public v1::ClusterPeer::Service {
 public:
  explicit ScriptedLeader(Script script) : script_(std::move(script)) {}

  grpc::Status FetchSnapshot(
      grpc::ServerContext* context, const v1::FetchSnapshotRequest* request,
      grpc::ServerWriter<v1::SnapshotChunk>* writer) override {
    {
      absl::MutexLock lock(&mu_);
      auto secret = context->client_metadata().find(
          storage::kPeerSecretMetadataKey);
      if (secret != context->client_metadata().end()) {
        secret_seen_ = std::string(secret->second.data(),
                                   secret->second.size());
      }
      cluster_seen_ = request->cluster();
    }
    for (size_t i = 0; i < script_.chunks.size(); ++i) {
      if (i > 0 && !SleepUnlessCancelled(context, script_.gap)) {
        return grpc::Status::CANCELLED;
      }
      if (!writer->Write(script_.chunks[i])) return grpc::Status::CANCELLED;
    }
    if (script_.stall_at_end) {
      SleepUnlessCancelled(context, std::chrono::hours(1));
      return grpc::Status::CANCELLED;
    }
    return grpc::Status::OK;
  }

  std::string secret_seen() {
    absl::MutexLock lock(&mu_);
    return secret_seen_;
  }
  std::string cluster_seen() {
    absl::MutexLock lock(&mu_);
    return cluster_seen_;
  }

 private:
  static bool SleepUnlessCancelled(grpc::ServerContext* context,
                                   milliseconds duration) {
    const Clock::time_point end = Clock::now() + duration;
    while (Clock::now() < end) {
      if (context->IsCancelled()) return false;
      std::this_thread::sleep_for(milliseconds(5));
    }
    return true;
  }

  const Script script_;
  absl::Mutex mu_;
  std::string secret_seen_ ABSL_GUARDED_BY(mu_);
  std::string cluster_seen_ ABSL_GUARDED_BY(mu_);
};

class PeerSnapshotSourceTest : public ::testing::Test {
 protected:
  void StartLeader(Script script) {
    leader_ = std::make_unique<ScriptedLeader>(std::move(script));
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port);
    builder.RegisterService(leader_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port, 0);
    address_ = "127.0.0.1:" + std::to_string(port);
  }

  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown();
  }

  // Node `node_id`, which knows `leader` as the leader.
  static std::unique_ptr<PeerSnapshotSource> Source(
      const std::string& node_id, std::optional<storage::LeaderView> leader,
      milliseconds stall_timeout) {
    return std::make_unique<PeerSnapshotSource>(
        kCluster, node_id, security::TlsFiles{}, [leader] { return leader; },
        []() -> absl::StatusOr<std::string> { return kSecret; },
        stall_timeout);
  }

  // A follower "follower-1" that knows the scripted leader as "leader-1".
  std::unique_ptr<PeerSnapshotSource> Follower(milliseconds stall_timeout) {
    return Source("follower-1",
                  storage::LeaderView{.leader = {.node_id = "leader-1",
                                                 .advertise = address_},
                                      .epoch = 5,
                                      .lease = 9},
                  stall_timeout);
  }

  std::unique_ptr<ScriptedLeader> leader_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
};

TEST_F(PeerSnapshotSourceTest, TheWholeFileArrivesWithWhatTheFirstChunkSays) {
  StartLeader(ChunksOf(3, 1000, milliseconds(0)));
  absl::StatusOr<storage::FetchedSnapshot> fetched =
      Follower(milliseconds(5000))->Fetch(40);
  ASSERT_TRUE(fetched.ok()) << fetched.status();
  EXPECT_EQ(fetched->covered, 42u);
  EXPECT_EQ(fetched->payload_crc32c, 7u);
  EXPECT_EQ(fetched->bytes, std::string(1000, 'a') + std::string(1000, 'b') +
                                std::string(1000, 'c'));
  EXPECT_EQ(leader_->secret_seen(), kSecret);
  EXPECT_EQ(leader_->cluster_seen(), kCluster);
}

TEST_F(PeerSnapshotSourceTest,
       ATransferThatKeepsProgressingIsNotCutForItsLength) {
  // Twelve chunks 100 ms apart: 1.1 s in all, longer than the stall
  // timeout, but never a tenth of it without a chunk.
  StartLeader(ChunksOf(12, 100, milliseconds(100)));
  const Clock::time_point start = Clock::now();
  absl::StatusOr<storage::FetchedSnapshot> fetched =
      Follower(milliseconds(1000))->Fetch(40);
  ASSERT_TRUE(fetched.ok()) << fetched.status();
  EXPECT_EQ(fetched->bytes.size(), 1200u);
  EXPECT_GT(Clock::now() - start, milliseconds(1000));
}

TEST_F(PeerSnapshotSourceTest, ATransferWithNoChunkForTheStallTimeoutEnds) {
  Script script = ChunksOf(2, 100, milliseconds(0));
  script.chunks.pop_back();  // one chunk of two, then silence
  script.stall_at_end = true;
  StartLeader(std::move(script));
  const Clock::time_point start = Clock::now();
  absl::StatusOr<storage::FetchedSnapshot> fetched =
      Follower(milliseconds(300))->Fetch(40);
  EXPECT_EQ(fetched.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(fetched.status().message(),
            "snapshot transfer: no chunk from the leader for 300 ms");
  EXPECT_GE(Clock::now() - start, milliseconds(300));
  EXPECT_LT(Clock::now() - start, milliseconds(10'000));
}

TEST_F(PeerSnapshotSourceTest, ALeaderSilentBeforeItsFirstChunkStallsToo) {
  Script script;
  script.stall_at_end = true;
  StartLeader(std::move(script));
  absl::StatusOr<storage::FetchedSnapshot> fetched =
      Follower(milliseconds(300))->Fetch(40);
  EXPECT_EQ(fetched.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(fetched.status().message(),
            "snapshot transfer: no chunk from the leader for 300 ms");
}

TEST_F(PeerSnapshotSourceTest, CancelEndsATransferInProgress) {
  Script script = ChunksOf(1, 100, milliseconds(0));
  script.stall_at_end = true;
  StartLeader(std::move(script));
  std::unique_ptr<PeerSnapshotSource> follower = Follower(milliseconds(60'000));
  std::thread canceller([&] {
    std::this_thread::sleep_for(milliseconds(200));
    follower->Cancel();
  });
  const Clock::time_point start = Clock::now();
  absl::StatusOr<storage::FetchedSnapshot> fetched = follower->Fetch(40);
  canceller.join();
  EXPECT_EQ(fetched.status().code(), absl::StatusCode::kCancelled)
      << fetched.status();
  EXPECT_LT(Clock::now() - start, milliseconds(10'000));
  // Cancelled until Resume.
  EXPECT_EQ(follower->Fetch(40).status().code(), absl::StatusCode::kCancelled);
}

TEST_F(PeerSnapshotSourceTest, AChunkOutOfOrderIsDataLoss) {
  Script script = ChunksOf(3, 100, milliseconds(0));
  script.chunks[1].set_offset(150);  // a gap after the first 100 bytes
  StartLeader(std::move(script));
  absl::StatusOr<storage::FetchedSnapshot> fetched =
      Follower(milliseconds(5000))->Fetch(40);
  EXPECT_EQ(fetched.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(fetched.status().message(),
            "snapshot transfer: a chunk at offset 150 of 100 bytes after 100 "
            "of 300");
}

TEST_F(PeerSnapshotSourceTest, FewerBytesThanAnnouncedAreDataLoss) {
  Script script = ChunksOf(3, 100, milliseconds(0));
  script.chunks.pop_back();
  StartLeader(std::move(script));
  absl::StatusOr<storage::FetchedSnapshot> fetched =
      Follower(milliseconds(5000))->Fetch(40);
  EXPECT_EQ(fetched.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(fetched.status().message(),
            "snapshot transfer: 200 bytes received of 300 announced");
}

TEST_F(PeerSnapshotSourceTest, WithNoKnownLeaderNothingIsAsked) {
  absl::StatusOr<storage::FetchedSnapshot> fetched =
      Source("follower-1", std::nullopt, milliseconds(5000))->Fetch(40);
  EXPECT_EQ(fetched.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(fetched.status().message(), "snapshot transfer: leader unknown");
}

TEST_F(PeerSnapshotSourceTest, ALeaderThatIsThisNodeIsNotAsked) {
  // Were it asked, port 1 would answer Unavailable.
  absl::StatusOr<storage::FetchedSnapshot> fetched =
      Source("leader-1",
             storage::LeaderView{.leader = {.node_id = "leader-1",
                                            .advertise = "127.0.0.1:1"}},
             milliseconds(5000))
          ->Fetch(40);
  EXPECT_EQ(fetched.status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace leasekeeper::storage
