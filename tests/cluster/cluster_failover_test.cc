// Cluster mode end to end: three etcd members, three leasekeeperd nodes,
// real processes on loopback ports (harness/local_cluster.h). Each test builds
// its own cluster and takes a few seconds; the waits are for the etcd
// lease of a dead leader (1 s TTL + etcd's 500 ms expiry check), never a
// lock's ttl.
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cluster/etcd_client.h"
#include "cluster/etcd_keys.h"
#include "cluster/etcd_log.h"
#include "cluster/etcd_peer_secret.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "gtest/gtest.h"
#include "harness/local_cluster.h"
#include "leasekeeper/v1/cluster_peer.grpc.pb.h"
#include "leasekeeper/v1/lock_service.grpc.pb.h"
#include "metrics/testing/exposition_parser.h"
#include "metrics/testing/http_get.h"
#include "security/testing/test_pki.h"
#include "storage/snapshot_file.h"
#include "tests/server/test_support.h"

namespace leasekeeper::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

// One finished unary call, with what a cluster node adds to refusals.
struct Call {
  grpc::Status status;
  std::string reason;
  std::string leader;  // leasekeeper-leader
  bool ok() const { return status.ok(); }
};

class Nodes {
 public:
  // For the channels made from now on; null: plaintext.
  void UseCredentials(std::shared_ptr<grpc::ChannelCredentials> credentials) {
    credentials_ = std::move(credentials);
  }
  pb::LockService::Stub& Stub(const std::string& address) {
    auto& stub = stubs_[address];
    if (stub == nullptr) {
      stub = pb::LockService::NewStub(NewChannel(address, credentials_));
    }
    return *stub;
  }

  template <typename Request, typename Response, typename Method>
  Call Invoke(const std::string& address, Method method,
              const Request& request, Response* response) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + milliseconds(2000));
    Call call;
    call.status = (Stub(address).*method)(&context, request, response);
    const auto& trailers = context.GetServerTrailingMetadata();
    if (auto it = trailers.find("leasekeeper-reason"); it != trailers.end()) {
      call.reason.assign(it->second.data(), it->second.size());
    }
    call.leader = LeaderMetadata(context);
    return call;
  }

  Call Acquire(const std::string& address, const std::string& client,
               const std::string& lock, int64_t ttl_ms,
               pb::AcquireResponse* response,
               const std::string& request_id = "") {
    pb::AcquireRequest request = AcquireRequest(client, lock, ttl_ms);
    request.set_request_id(request_id);
    return Invoke(address, &pb::LockService::Stub::Acquire, request, response);
  }
  Call Renew(const std::string& address, const std::string& client,
             const std::string& lock, int64_t ttl_ms,
             pb::RenewResponse* response) {
    return Invoke(address, &pb::LockService::Stub::Renew,
                  RenewRequest(client, lock, ttl_ms), response);
  }
  Call Write(const std::string& address, const std::string& lock,
             const std::string& key, const std::string& value,
             uint64_t token) {
    pb::WriteResponse response;
    return Invoke(address, &pb::LockService::Stub::Write,
                  WriteRequest(lock, key, value, token), &response);
  }
  Call Read(const std::string& address, const std::string& lock,
            const std::string& key, pb::ReadResponse* response) {
    return Invoke(address, &pb::LockService::Stub::Read,
                  ReadRequest(lock, key), response);
  }
  Call Release(const std::string& address, const std::string& client,
               const std::string& lock) {
    pb::ReleaseResponse response;
    return Invoke(address, &pb::LockService::Stub::Release,
                  ReleaseRequest(client, lock), &response);
  }

 private:
  std::shared_ptr<grpc::ChannelCredentials> credentials_;
  std::map<std::string, std::unique_ptr<pb::LockService::Stub>> stubs_;
};

class ClusterTest : public ::testing::Test {
 protected:
  // `credentials`: for every call the test and the harness make (null:
  // plaintext); they must match the TLS flags in `extra_args`.
  void StartCluster(
      std::vector<std::string> extra_args = {},
      std::shared_ptr<grpc::ChannelCredentials> credentials = nullptr) {
    etcd_ = EtcdCluster::Start(dir_.path());
    ASSERT_NE(etcd_, nullptr);
    nodes_.UseCredentials(credentials);
    cluster_ = LeasekeeperCluster::Start(dir_.path(), etcd_->endpoints(), 3,
                                         std::move(extra_args), "test",
                                         std::move(credentials));
    ASSERT_NE(cluster_, nullptr);
    leader_ = cluster_->WaitForLeader(milliseconds(15'000));
    ASSERT_GE(leader_, 0) << "no leader elected";
  }
  std::string LeaderAddress() const { return cluster_->address(leader_); }

  // The applied position the leader's ClusterStatus reports for `node`
  // (0 if it reports none).
  uint64_t AppliedAsLeaderSees(int node) const {
    std::optional<pb::ClusterStatusResponse> status = cluster_->Status(leader_);
    if (!status.has_value()) return 0;
    for (const pb::ClusterMember& member : status->members()) {
      if (member.node_id() == cluster_->node_id(node)) {
        return member.applied_position();
      }
    }
    return 0;
  }

  // Retries `attempt` on every running node, following NOT_LEADER's
  // leader address, until it succeeds or `timeout` passes; returns the
  // address that answered OK (empty on timeout).
  std::string UntilServed(const std::function<Call(const std::string&)>& attempt,
                          milliseconds timeout) {
    const auto deadline = steady_clock::now() + timeout;
    int next = 0;
    std::string address;
    while (steady_clock::now() < deadline) {
      if (address.empty()) {
        for (int tries = 0; tries < cluster_->size(); ++tries) {
          next = (next + 1) % cluster_->size();
          if (cluster_->running(next)) break;
        }
        address = cluster_->address(next);
      }
      const Call call = attempt(address);
      if (call.ok()) return address;
      address = call.leader;  // empty: try the next node
      std::this_thread::sleep_for(milliseconds(20));
    }
    return "";
  }

  // A client of the test's etcd cluster (to look at what the nodes keep
  // there).
  storage::EtcdClient& Etcd() {
    if (etcd_client_ == nullptr) {
      storage::EtcdClientOptions options;
      options.endpoints = etcd_->endpoint_list();
      etcd_client_ = *storage::EtcdClient::Connect(options);
    }
    return *etcd_client_;
  }
  // The first position of the log in etcd (0 if unknown or empty).
  uint64_t FirstLogPositionInEtcd() {
    absl::StatusOr<std::optional<storage::LogPosition>> first =
        storage::FirstLogPosition(Etcd(), storage::ClusterKeys("test"));
    return first.ok() && first->has_value() ? **first : 0;
  }

  // Client c<i> takes lock L<i> on the leader, for i < count (token 1).
  void HoldLocks(int count) {
    for (int i = 0; i < count; ++i) {
      pb::AcquireResponse got;
      const Call call =
          nodes_.Acquire(LeaderAddress(), Client(absl::StrCat("c", i)),
                         absl::StrCat("L", i), 60'000, &got);
      ASSERT_TRUE(call.ok()) << call.status.error_message();
      ASSERT_TRUE(got.has_granted());
    }
  }

  // A follower is stopped; the others snapshot past it and the log in
  // etcd is trimmed; it comes back (`wipe`: with an empty data dir) and
  // catches up by the leader's snapshot and the log, then wins once it is
  // the only node left and serves the locks with their tokens. `tls_args`
  // and `credentials`: as StartCluster's.
  void FollowerCatchesUpBySnapshotAfterTheLogWasTrimmed(
      bool wipe, std::vector<std::string> tls_args = {},
      std::shared_ptr<grpc::ChannelCredentials> credentials = nullptr) {
    tls_args.push_back("--snapshot-every=20");
    StartCluster(std::move(tls_args), std::move(credentials));
    HoldLocks(25);
    ASSERT_FALSE(HasFatalFailure());
    const int follower = (leader_ + 1) % 3;
    const int other = (leader_ + 2) % 3;
    const uint64_t before = cluster_->Status(leader_)->last_position();
    ASSERT_TRUE(Eventually(
        [&] { return AppliedAsLeaderSees(follower) >= before; },
        milliseconds(10'000)));
    cluster_->Kill(follower);
    // Records the follower never saw: a lock passed around, one held.
    for (int i = 0; i < 100; ++i) {
      pb::AcquireResponse got;
      ASSERT_TRUE(
          nodes_.Acquire(LeaderAddress(), Client("t"), "T", 60'000, &got).ok());
      ASSERT_TRUE(nodes_.Release(LeaderAddress(), Client("t"), "T").ok());
    }
    pb::AcquireResponse held;
    ASSERT_TRUE(
        nodes_.Acquire(LeaderAddress(), Client("h"), "H", 60'000, &held).ok());
    ASSERT_TRUE(held.has_granted());
    // Once the dead follower's member key lapsed, the leader trims what
    // the two live members' snapshots cover: batches the follower needs.
    ASSERT_TRUE(Eventually(
        [&] { return FirstLogPositionInEtcd() > before + 1; },
        milliseconds(15'000)))
        << "the log in etcd was never trimmed past the stopped follower";
    ASSERT_TRUE(cluster_->Restart(follower, wipe));
    const uint64_t end = cluster_->Status(leader_)->last_position();
    ASSERT_TRUE(Eventually(
        [&] { return AppliedAsLeaderSees(follower) >= end; },
        milliseconds(20'000)))
        << "the restarted follower did not reach the leader's position "
        << end;
    // Its state is the leader's: make it the only candidate and ask it.
    cluster_->Kill(other);
    cluster_->Kill(leader_);
    ASSERT_EQ(cluster_->WaitForLeader(milliseconds(15'000)), follower);
    const std::string address = cluster_->address(follower);
    pb::RenewResponse renewed;
    ASSERT_TRUE(
        nodes_.Renew(address, Client("c0"), "L0", 60'000, &renewed).ok());
    EXPECT_EQ(renewed.token(), 1u);
    ASSERT_TRUE(nodes_.Renew(address, Client("h"), "H", 60'000, &renewed).ok());
    EXPECT_EQ(renewed.token(), held.granted().token());
    pb::AcquireResponse busy;
    ASSERT_TRUE(nodes_.Acquire(address, Client("x"), "L7", 1000, &busy).ok());
    EXPECT_FALSE(busy.has_granted());
    pb::AcquireResponse next;
    ASSERT_TRUE(nodes_.Acquire(address, Client("t"), "T", 60'000, &next).ok());
    ASSERT_TRUE(next.has_granted());
    EXPECT_EQ(next.granted().token(), 101u);
  }

  // A client id the nodes accept: under mutual TLS it must be the test's
  // certificate identity or begin with it and a slash.
  std::string Client(const std::string& name) const {
    return client_prefix_ + name;
  }

  TempDir dir_;
  std::string client_prefix_;
  std::unique_ptr<storage::EtcdClient> etcd_client_;
  std::unique_ptr<EtcdCluster> etcd_;
  std::unique_ptr<LeasekeeperCluster> cluster_;
  int leader_ = -1;
  Nodes nodes_;
};

TEST_F(ClusterTest, FollowersRefuseLockCallsWithTheLeadersAddress) {
  StartCluster();
  const int follower = (leader_ + 1) % 3;
  // The follower learns the leader at its next 50 ms poll, which a loaded
  // machine may delay past the election: await it, or the refusal names
  // no leader.
  ASSERT_TRUE(Eventually(
      [&] {
        std::optional<pb::ClusterStatusResponse> status =
            cluster_->Status(follower);
        return status.has_value() &&
               status->leader_address() == LeaderAddress();
      },
      milliseconds(3000)));
  pb::AcquireResponse response;
  const Call refused = nodes_.Acquire(cluster_->address(follower), "a", "L",
                                      5000, &response);
  EXPECT_EQ(refused.status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(refused.reason, "NOT_LEADER");
  EXPECT_EQ(refused.leader, LeaderAddress());
  EXPECT_EQ(refused.status.error_message(),
            absl::StrCat("not leader; leader is ", LeaderAddress()));
  ASSERT_TRUE(nodes_.Acquire(LeaderAddress(), "a", "L", 5000, &response).ok());
  // Every node knows the leader and the epoch (a follower learns them at
  // its next 50 ms poll).
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(Eventually(
        [&] {
          std::optional<pb::ClusterStatusResponse> status = cluster_->Status(i);
          return status.has_value() &&
                 status->leader_address() == LeaderAddress() &&
                 status->cluster() == "test" && status->epoch() > 0 &&
                 status->role() == (i == leader_ ? pb::LEADER : pb::FOLLOWER);
        },
        milliseconds(3000)))
        << "node " << i;
  }
}

TEST(ClusterNodeTest, NodeThatCannotReachEtcdIsNotServingAndKnowsNoLeader) {
  TempDir dir;
  // A port nobody listens on: no etcd.
  const std::string nowhere = absl::StrCat("127.0.0.1:", FreeLoopbackPort());
  std::unique_ptr<LeasekeeperCluster> lonely =
      LeasekeeperCluster::Start(dir.path(), nowhere, 1);
  ASSERT_NE(lonely, nullptr);
  const std::string address = lonely->address(0);
  auto health = grpc::health::v1::Health::NewStub(NewChannel(address));
  grpc::ClientContext health_context;
  grpc::health::v1::HealthCheckResponse answer;
  ASSERT_TRUE(health
                  ->Check(&health_context, grpc::health::v1::HealthCheckRequest(),
                          &answer)
                  .ok());
  EXPECT_EQ(answer.status(), grpc::health::v1::HealthCheckResponse::NOT_SERVING);
  std::optional<pb::ClusterStatusResponse> status = lonely->Status(0);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(status->role(), pb::DISCONNECTED);
  EXPECT_EQ(status->leader_address(), "");
  Nodes nodes;
  pb::AcquireResponse response;
  const Call refused = nodes.Acquire(address, "a", "L", 1000, &response);
  EXPECT_EQ(refused.status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(refused.reason, "NOT_LEADER");
  EXPECT_EQ(refused.status.error_message(), "not leader; leader unknown");
  EXPECT_EQ(refused.leader, "");
}

TEST_F(ClusterTest, KilledLeaderIsReplacedWithTokensRisingWritesKeptAndHoldersKept) {
  StartCluster();
  const std::string old_leader = LeaderAddress();
  // A holder (with a holder label) that keeps renewing, a fenced write
  // under it, and a lock whose token climbs.
  pb::AcquireRequest labelled = AcquireRequest("holder", "job", 4000);
  labelled.set_holder_label("nightly-run 7");
  pb::AcquireResponse held;
  const Call acquired =
      nodes_.Invoke(old_leader, &pb::LockService::Stub::Acquire, labelled, &held);
  ASSERT_TRUE(acquired.ok()) << acquired.status.error_message();
  ASSERT_TRUE(held.has_granted());
  const uint64_t job_token = held.granted().token();
  ASSERT_TRUE(nodes_.Write(old_leader, "job", "k", "v1", job_token).ok());
  uint64_t last_counter_token = 0;
  for (int i = 0; i < 5; ++i) {
    pb::AcquireResponse got;
    const std::string client = absl::StrCat("c", i);
    ASSERT_TRUE(nodes_.Acquire(old_leader, client, "counter", 4000, &got).ok());
    ASSERT_GT(got.granted().token(), last_counter_token);
    last_counter_token = got.granted().token();
    ASSERT_TRUE(nodes_.Release(old_leader, client, "counter").ok());
  }

  const auto killed = steady_clock::now();
  cluster_->Kill(leader_);
  // The holder renews as its client library would: on any node, following
  // the leader's address.
  pb::RenewResponse renewed;
  const std::string new_leader = UntilServed(
      [&](const std::string& address) {
        return nodes_.Renew(address, "holder", "job", 4000, &renewed);
      },
      milliseconds(10'000));
  const auto failover = steady_clock::now() - killed;
  ASSERT_FALSE(new_leader.empty()) << "no node renewed the lease";
  EXPECT_NE(new_leader, old_leader);
  EXPECT_EQ(renewed.token(), job_token);
  EXPECT_LT(failover, milliseconds(5000));

  pb::ReadResponse read;
  ASSERT_TRUE(nodes_.Read(new_leader, "job", "k", &read).ok());
  EXPECT_TRUE(read.found());
  EXPECT_EQ(read.value(), "v1");
  pb::AcquireResponse busy;
  ASSERT_TRUE(nodes_.Acquire(new_leader, "intruder", "job", 4000, &busy).ok());
  EXPECT_FALSE(busy.has_granted()) << "the held lock was granted again";
  pb::AcquireResponse after;
  ASSERT_TRUE(nodes_.Acquire(new_leader, "c9", "counter", 4000, &after).ok());
  EXPECT_GT(after.granted().token(), last_counter_token);
  // The holder's fenced write still goes through.
  EXPECT_TRUE(nodes_.Write(new_leader, "job", "k", "v2", job_token).ok());
  // And the new leader shows the holder with its label.
  pb::InspectRequest inspect;
  inspect.set_lock("job");
  pb::InspectResponse view;
  ASSERT_TRUE(
      nodes_.Invoke(new_leader, &pb::LockService::Stub::Inspect, inspect, &view)
          .ok());
  ASSERT_EQ(view.holders_size(), 1);
  EXPECT_EQ(view.holders(0).holder_label(), "nightly-run 7");
}

TEST_F(ClusterTest, SessionResumesOnTheNewLeaderWithItsLease) {
  StartCluster();
  grpc::ClientContext context;
  auto stream = nodes_.Stub(LeaderAddress()).Session(&context);
  pb::SessionRequest open;
  open.mutable_open()->set_client_id("worker");
  ASSERT_TRUE(stream->Write(open));
  pb::SessionResponse opened;
  ASSERT_TRUE(stream->Read(&opened));
  ASSERT_TRUE(opened.has_opened());
  const std::string session_id = opened.opened().session_id();
  pb::AcquireResponse held;
  ASSERT_TRUE(nodes_.Acquire(LeaderAddress(), "worker", "S", 3000, &held).ok());
  const uint64_t token = held.granted().token();

  cluster_->Kill(leader_);
  context.TryCancel();
  const int next = cluster_->WaitForLeader(milliseconds(10'000), leader_);
  ASSERT_GE(next, 0);
  grpc::ClientContext resumed_context;
  auto resumed = nodes_.Stub(cluster_->address(next)).Session(&resumed_context);
  pb::SessionRequest resume;
  resume.mutable_open()->set_client_id("worker");
  resume.mutable_open()->set_resume_session_id(session_id);
  ASSERT_TRUE(resumed->Write(resume));
  pb::SessionResponse answer;
  ASSERT_TRUE(resumed->Read(&answer));
  ASSERT_TRUE(answer.has_opened());
  EXPECT_TRUE(answer.opened().resumed());
  EXPECT_EQ(answer.opened().session_id(), session_id);
  pb::SessionRequest keepalive;
  keepalive.mutable_keepalive()->set_sequence(1);
  ASSERT_TRUE(resumed->Write(keepalive));
  pb::SessionResponse ack;
  ASSERT_TRUE(resumed->Read(&ack));
  ASSERT_TRUE(ack.has_keepalive_ack());
  EXPECT_EQ(ack.keepalive_ack().renewed_leases(), 1);
  pb::RenewResponse renewed;
  ASSERT_TRUE(
      nodes_.Renew(cluster_->address(next), "worker", "S", 3000, &renewed).ok());
  EXPECT_EQ(renewed.token(), token);
  resumed_context.TryCancel();
}

TEST_F(ClusterTest, PausedLeaderPastItsLeaseIsDeposedAndRedirects) {
  StartCluster();
  const int old = leader_;
  pb::AcquireResponse held;
  ASSERT_TRUE(nodes_.Acquire(LeaderAddress(), "a", "L", 10'000, &held).ok());
  cluster_->Pause(old);
  const int next = cluster_->WaitForLeader(milliseconds(10'000), old);
  ASSERT_GE(next, 0) << "no new leader while the old one was paused";
  cluster_->Resume(old);
  // Woken up, it must not act as leader: refused with the new address.
  pb::AcquireResponse response;
  const Call late =
      nodes_.Acquire(cluster_->address(old), "b", "M", 5000, &response);
  EXPECT_EQ(late.status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(late.reason, "NOT_LEADER");
  ASSERT_TRUE(Eventually(
      [&] {
        const Call again =
            nodes_.Acquire(cluster_->address(old), "b", "M", 5000, &response);
        return again.reason == "NOT_LEADER" &&
               again.leader == cluster_->address(next);
      },
      milliseconds(3000)));
  // Nothing it was asked after waking reached the log.
  pb::AcquireResponse free_lock;
  ASSERT_TRUE(
      nodes_.Acquire(cluster_->address(next), "c", "M", 5000, &free_lock).ok());
  EXPECT_TRUE(free_lock.has_granted());
  EXPECT_EQ(free_lock.granted().token(), 1u);
  // It exits for its supervisor to restart it as a follower.
  std::optional<int> exit = cluster_->process(old)->WaitExit(milliseconds(5000));
  ASSERT_TRUE(exit.has_value());
  EXPECT_TRUE(WIFEXITED(*exit));
  EXPECT_EQ(WEXITSTATUS(*exit), 75);
  ASSERT_TRUE(cluster_->Restart(old));
  ASSERT_TRUE(Eventually(
      [&] {
        std::optional<pb::ClusterStatusResponse> status = cluster_->Status(old);
        return status.has_value() && status->role() == pb::FOLLOWER &&
               status->leader_address() == cluster_->address(next);
      },
      milliseconds(5000)));
}

TEST_F(ClusterTest, OneEtcdMemberDownTheServiceGoesOn) {
  StartCluster();
  pb::AcquireResponse held;
  ASSERT_TRUE(nodes_.Acquire(LeaderAddress(), "a", "L", 10'000, &held).ok());
  etcd_->Kill(0);
  // Writes go on (through a leader change if the lost member took one
  // with it).
  for (int i = 0; i < 20; ++i) {
    const std::string value = absl::StrCat("v", i);
    ASSERT_FALSE(UntilServed(
                     [&](const std::string& address) {
                       return nodes_.Write(address, "L", "k", value,
                                           held.granted().token());
                     },
                     milliseconds(8000))
                     .empty())
        << "write " << i;
  }
  pb::ReadResponse read;
  ASSERT_FALSE(UntilServed(
                   [&](const std::string& address) {
                     return nodes_.Read(address, "L", "k", &read);
                   },
                   milliseconds(5000))
                   .empty());
  EXPECT_EQ(read.value(), "v19");
}

TEST_F(ClusterTest, TwoEtcdMembersDownMutationsFailAndResumeWithNothingLost) {
  StartCluster();
  pb::AcquireResponse held;
  ASSERT_TRUE(nodes_.Acquire(LeaderAddress(), "a", "L", 60'000, &held).ok());
  const uint64_t token = held.granted().token();
  ASSERT_TRUE(nodes_.Write(LeaderAddress(), "L", "k", "acked", token).ok());
  etcd_->Kill(1);
  etcd_->Kill(2);
  // Without quorum nothing can be acknowledged: every attempt fails.
  bool refused = false;
  for (int i = 0; i < 3; ++i) {
    for (int node = 0; node < 3; ++node) {
      if (!cluster_->running(node)) continue;
      // (An UNAVAILABLE write has an unknown outcome, as after a timeout:
      // its transaction may still commit when the quorum is back. So it
      // goes to another key than the acknowledged one.)
      const Call call = nodes_.Write(cluster_->address(node), "L", "unknown",
                                     "maybe", token);
      EXPECT_FALSE(call.ok()) << "acknowledged without an etcd quorum";
      if (call.status.error_code() == grpc::StatusCode::UNAVAILABLE) {
        refused = true;
      }
    }
  }
  EXPECT_TRUE(refused);
  ASSERT_TRUE(etcd_->Restart(1));
  ASSERT_TRUE(etcd_->Restart(2));
  pb::ReadResponse read;
  const std::string served = UntilServed(
      [&](const std::string& address) {
        return nodes_.Read(address, "L", "k", &read);
      },
      milliseconds(20'000));
  ASSERT_FALSE(served.empty()) << "the service did not resume";
  EXPECT_EQ(read.value(), "acked");
  pb::RenewResponse renewed;
  ASSERT_TRUE(nodes_.Renew(served, "a", "L", 60'000, &renewed).ok());
  EXPECT_EQ(renewed.token(), token);
  EXPECT_TRUE(nodes_.Write(served, "L", "k", "after", token).ok());
}

TEST_F(ClusterTest, FollowerRestartedEmptyCatchesUpFromTheLog) {
  StartCluster();
  for (int i = 0; i < 30; ++i) {
    pb::AcquireResponse got;
    ASSERT_TRUE(nodes_.Acquire(LeaderAddress(), absl::StrCat("c", i),
                               absl::StrCat("L", i % 5), 60'000, &got)
                    .ok());
  }
  const int follower = (leader_ + 1) % 3;
  const int other = (leader_ + 2) % 3;
  ASSERT_TRUE(cluster_->Restart(follower, /*wipe=*/true));
  std::optional<pb::ClusterStatusResponse> leader_status =
      cluster_->Status(leader_);
  ASSERT_TRUE(leader_status.has_value());
  const uint64_t end = leader_status->last_position();
  ASSERT_TRUE(Eventually(
      [&] {
        return AppliedAsLeaderSees(follower) >= end;
      },
      milliseconds(10'000)));
  // Its state is the leader's: make it the only candidate and ask it.
  cluster_->Kill(other);
  cluster_->Kill(leader_);
  ASSERT_EQ(cluster_->WaitForLeader(milliseconds(10'000)), follower);
  pb::AcquireResponse busy;
  ASSERT_TRUE(
      nodes_.Acquire(cluster_->address(follower), "x", "L0", 1000, &busy).ok());
  EXPECT_FALSE(busy.has_granted());
  pb::RenewResponse renewed;
  ASSERT_TRUE(
      nodes_.Renew(cluster_->address(follower), "c0", "L0", 60'000, &renewed)
          .ok());
  EXPECT_EQ(renewed.token(), 1u);
}

TEST_F(ClusterTest, LogIsTrimmedOnceEveryMemberSnapshotsPastIt) {
  StartCluster({"--snapshot-every=50"});
  for (int i = 0; i < 300; ++i) {
    pb::AcquireResponse got;
    ASSERT_TRUE(nodes_.Acquire(LeaderAddress(), "c", absl::StrCat("L", i),
                               60'000, &got)
                    .ok());
    ASSERT_TRUE(nodes_.Release(LeaderAddress(), "c", absl::StrCat("L", i)).ok());
  }
  storage::EtcdClientOptions options;
  options.endpoints = etcd_->endpoint_list();
  std::unique_ptr<storage::EtcdClient> client =
      *storage::EtcdClient::Connect(options);
  const storage::ClusterKeys keys("test");
  ASSERT_TRUE(Eventually(
      [&] {
        etcdserverpb::RangeRequest first;
        first.set_key(keys.log_prefix());
        first.set_range_end(storage::PrefixRangeEnd(keys.log_prefix()));
        first.set_limit(1);
        first.set_keys_only(true);
        absl::StatusOr<etcdserverpb::RangeResponse> got = client->Range(first);
        return got.ok() && got->kvs_size() == 1 &&
               *keys.LogPositionOf(got->kvs(0).key()) > 1;
      },
      milliseconds(10'000)))
      << "the log in etcd was never trimmed";
  // A follower restarted on its own snapshot still catches up.
  const int follower = (leader_ + 1) % 3;
  ASSERT_TRUE(cluster_->Restart(follower));
  pb::AcquireResponse got;
  ASSERT_TRUE(nodes_.Acquire(LeaderAddress(), "d", "last", 60'000, &got).ok());
  const uint64_t end = cluster_->Status(leader_)->last_position();
  EXPECT_TRUE(Eventually(
      [&] {
        return AppliedAsLeaderSees(follower) >= end;
      },
      milliseconds(10'000)));
}

TEST_F(ClusterTest, FollowerWipedWhileTheLogWasTrimmedCatchesUpBySnapshotAndLog) {
  FollowerCatchesUpBySnapshotAfterTheLogWasTrimmed(/*wipe=*/true);
}

TEST_F(ClusterTest, FollowerStaleWhileTheLogWasTrimmedCatchesUpBySnapshotAndLog) {
  FollowerCatchesUpBySnapshotAfterTheLogWasTrimmed(/*wipe=*/false);
}

// Under mutual TLS the snapshot travels over TLS too: the follower trusts
// --client-ca for the leader's certificate and presents its own.
TEST_F(ClusterTest, UnderMutualTlsAWipedFollowerCatchesUpBySnapshotOverTls) {
  absl::StatusOr<security::testing::TestPki> pki =
      security::testing::TestPki::Create(dir_.path());
  ASSERT_TRUE(pki.ok()) << pki.status();
  absl::StatusOr<security::testing::KeyPair> node =
      pki->IssuePeer("node", "leasekeeper-test-node");
  ASSERT_TRUE(node.ok()) << node.status();
  absl::StatusOr<security::testing::KeyPair> tester =
      pki->IssueClient("tester", "leasekeeper-test-client");
  ASSERT_TRUE(tester.ok()) << tester.status();
  client_prefix_ = "leasekeeper-test-client/";
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = pki->ca_cert_pem();
  options.pem_cert_chain = tester->cert_pem;
  options.pem_private_key = tester->key_pem;
  FollowerCatchesUpBySnapshotAfterTheLogWasTrimmed(
      /*wipe=*/true,
      {"--tls-cert=" + node->cert_file, "--tls-key=" + node->key_file,
       "--client-ca=" + pki->ca_cert_file()},
      grpc::SslCredentials(options));
}

// One FetchSnapshot call; `secret` empty: none presented.
struct Fetched {
  grpc::Status status;
  std::string reason;
  std::string bytes;
  uint64_t covered = 0;
  uint32_t payload_crc32c = 0;
};
Fetched FetchSnapshot(const std::string& address, const std::string& secret,
                      const std::string& cluster = "test") {
  auto stub = pb::ClusterPeer::NewStub(NewChannel(address));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + milliseconds(5000));
  if (!secret.empty()) {
    context.AddMetadata(storage::kPeerSecretMetadataKey, secret);
  }
  pb::FetchSnapshotRequest request;
  request.set_cluster(cluster);
  request.set_min_covered_position(1);
  auto reader = stub->FetchSnapshot(&context, request);
  Fetched fetched;
  pb::SnapshotChunk chunk;
  while (reader->Read(&chunk)) {
    if (chunk.offset() == 0) {
      fetched.covered = chunk.covered_position();
      fetched.payload_crc32c = chunk.payload_crc32c();
    }
    fetched.bytes += chunk.data();
  }
  fetched.status = reader->Finish();
  const auto& trailers = context.GetServerTrailingMetadata();
  if (auto it = trailers.find("leasekeeper-reason"); it != trailers.end()) {
    fetched.reason.assign(it->second.data(), it->second.size());
  }
  return fetched;
}

TEST_F(ClusterTest, SnapshotFetchWithoutTheClustersPeerSecretIsRefused) {
  StartCluster({"--snapshot-every=20"});
  HoldLocks(30);
  ASSERT_FALSE(HasFatalFailure());
  const Fetched none = FetchSnapshot(LeaderAddress(), "");
  EXPECT_EQ(none.status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(none.status.error_message(),
            "cluster peer call without the peer secret");
  EXPECT_EQ(none.reason, "NOT_CLUSTER_MEMBER");
  EXPECT_TRUE(none.bytes.empty());
  const Fetched wrong = FetchSnapshot(LeaderAddress(), std::string(64, 'a'));
  EXPECT_EQ(wrong.status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(wrong.status.error_message(),
            "cluster peer call with a wrong peer secret");
  EXPECT_EQ(wrong.reason, "NOT_CLUSTER_MEMBER");
  EXPECT_TRUE(wrong.bytes.empty());
  // The secret is in etcd: whoever can read it there is a member.
  etcdserverpb::RangeRequest range;
  range.set_key(storage::ClusterKeys("test").peer_secret());
  absl::StatusOr<etcdserverpb::RangeResponse> got = Etcd().Range(range);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->kvs_size(), 1);
  const std::string secret = got->kvs(0).value();
  const Fetched foreign = FetchSnapshot(LeaderAddress(), secret, "another");
  EXPECT_EQ(foreign.status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  // A member gets the leader's newest snapshot, checksums intact.
  Fetched member;
  ASSERT_TRUE(Eventually(
      [&] {
        member = FetchSnapshot(LeaderAddress(), secret);
        return member.status.ok();
      },
      milliseconds(10'000)))
      << member.status.error_message();
  absl::StatusOr<storage::SnapshotFileInfo> info =
      storage::DecodeSnapshotFileBytes(member.bytes, "fetched", nullptr,
                                       nullptr);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->covered, member.covered);
  EXPECT_EQ(info->payload_crc32c, member.payload_crc32c);
  EXPECT_GE(member.covered, 20u);
}


TEST_F(ClusterTest, EtcdEndpointsInEtcdsUrlFormLeadAndGrant) {
  etcd_ = EtcdCluster::Start(dir_.path());
  ASSERT_NE(etcd_, nullptr);
  std::vector<std::string> urls;
  for (const std::string& endpoint : etcd_->endpoint_list()) {
    urls.push_back("http://" + endpoint);
  }
  cluster_ = LeasekeeperCluster::Start(dir_.path(), absl::StrJoin(urls, ","), 1);
  ASSERT_NE(cluster_, nullptr);
  leader_ = cluster_->WaitForLeader(milliseconds(10'000));
  ASSERT_EQ(leader_, 0) << "a node given http:// endpoints never led";
  pb::AcquireResponse got;
  const Call call = nodes_.Acquire(LeaderAddress(), "a", "L", 5000, &got);
  ASSERT_TRUE(call.ok()) << call.status.error_message();
  EXPECT_TRUE(got.has_granted());
}

TEST(ClusterNodeTest, HttpsEtcdEndpointsReachEtcdOverTlsWithTheEtcdCa) {
  TempDir dir;
  absl::StatusOr<security::testing::TestPki> pki =
      security::testing::TestPki::Create(dir.path());
  ASSERT_TRUE(pki.ok()) << pki.status();
  std::unique_ptr<EtcdCluster> etcd = EtcdCluster::Start(
      dir.path(), 1,
      EtcdServerTls{.cert_file = pki->server().cert_file,
                    .key_file = pki->server().key_file,
                    .ca_file = pki->ca_cert_file()});
  ASSERT_NE(etcd, nullptr);
  std::unique_ptr<LeasekeeperCluster> node = LeasekeeperCluster::Start(
      dir.path(), "https://" + etcd->endpoint_list()[0], 1,
      {"--etcd-ca=" + pki->ca_cert_file()});
  ASSERT_NE(node, nullptr);
  ASSERT_EQ(node->WaitForLeader(milliseconds(10'000)), 0)
      << "a node given an https:// endpoint and --etcd-ca never led";
  Nodes nodes;
  pb::AcquireResponse got;
  const Call call = nodes.Acquire(node->address(0), "a", "L", 5000, &got);
  ASSERT_TRUE(call.ok()) << call.status.error_message();
  EXPECT_TRUE(got.has_granted());
}

// Reads `node`'s output lines (stdout and stderr) until one contains
// `needle`, for at most `timeout`; every line read goes to `seen`.
std::optional<std::string> ReadUntil(ChildProcess& node,
                                     const std::string& needle,
                                     milliseconds timeout, std::string& seen) {
  const auto deadline = steady_clock::now() + timeout;
  while (steady_clock::now() < deadline) {
    std::optional<std::string> line = node.ReadLine(
        std::chrono::duration_cast<milliseconds>(deadline - steady_clock::now()));
    if (!line.has_value()) break;
    absl::StrAppend(&seen, *line, "\n");
    if (absl::StrContains(*line, needle)) return line;
  }
  return std::nullopt;
}

std::optional<double> EtcdReachable(int metrics_port) {
  absl::StatusOr<metrics::testing::HttpResponse> got =
      metrics::testing::HttpGet(metrics_port, "/metrics");
  if (!got.ok()) return std::nullopt;
  absl::StatusOr<metrics::testing::Exposition> parsed =
      metrics::testing::Exposition::Parse(got->body);
  if (!parsed.ok()) return std::nullopt;
  return parsed->Value("leasekeeper_etcd_reachable");
}

TEST(ClusterNodeTest, NodeWithEtcdDownWarnsNamingTheEndpointAndSaysWhenItRecovers) {
  TempDir dir;
  std::unique_ptr<EtcdCluster> etcd = EtcdCluster::Start(dir.path(), 1);
  ASSERT_NE(etcd, nullptr);
  etcd->Kill(0);
  const std::string endpoint = "http://" + etcd->endpoint_list()[0];
  const int metrics_port = FreeLoopbackPort();
  const std::string address = absl::StrCat("127.0.0.1:", FreeLoopbackPort());
  ChildProcess node(
      "/bin/sh",
      {"-c", absl::StrCat("exec ", LEASEKEEPERD_PATH, " --listen=", address,
                          " --cluster=test --node-id=n1 --etcd-endpoints=",
                          endpoint, " --data-dir=", dir.path(),
                          "/n1 --log-level=info --metrics-listen=127.0.0.1:",
                          metrics_port, " 2>&1")});
  std::string seen;
  ASSERT_TRUE(ReadUntil(node, "listening on", milliseconds(20'000), seen))
      << seen;
  // Within 2 s of serving (or before it).
  std::optional<std::string> warning = absl::StrContains(seen, "etcd_unreachable")
                                           ? std::optional<std::string>(seen)
                                           : ReadUntil(node, "event=etcd_unreachable",
                                                       milliseconds(2000), seen);
  ASSERT_TRUE(warning.has_value()) << seen;
  EXPECT_TRUE(absl::StrContains(*warning, "endpoints=" + endpoint)) << *warning;
  EXPECT_TRUE(absl::StrContains(*warning, "UNAVAILABLE")) << *warning;
  EXPECT_EQ(EtcdReachable(metrics_port), std::optional<double>(0));
  auto stub = pb::LockService::NewStub(NewChannel(address));
  {
    grpc::ClientContext context;
    pb::ClusterStatusResponse status;
    ASSERT_TRUE(stub->ClusterStatus(&context, pb::ClusterStatusRequest(), &status)
                    .ok());
    EXPECT_EQ(status.role(), pb::DISCONNECTED);
    EXPECT_TRUE(absl::StrContains(status.etcd_error(), "UNAVAILABLE"))
        << status.etcd_error();
  }

  ASSERT_TRUE(etcd->Restart(0));
  std::optional<std::string> recovered =
      ReadUntil(node, "event=etcd_reachable", milliseconds(15'000), seen);
  ASSERT_TRUE(recovered.has_value()) << seen;
  EXPECT_TRUE(absl::StrContains(*recovered, "endpoints=" + endpoint));
  EXPECT_TRUE(Eventually(
      [&] { return EtcdReachable(metrics_port) == std::optional<double>(1); },
      milliseconds(3000)));
  grpc::ClientContext context;
  pb::ClusterStatusResponse status;
  ASSERT_TRUE(
      stub->ClusterStatus(&context, pb::ClusterStatusRequest(), &status).ok());
  EXPECT_EQ(status.etcd_error(), "");
}

// A lease keeps the time it had left when the leader died, up to the
// leader's clock records (every 250 ms while a lease is held): the quiet
// seconds before the failover count against it; the failover's own
// duration does not (docs/cluster.md, "Failover"). An idle cluster writes
// nothing to etcd.
TEST_F(ClusterTest, LeaseKeepsItsRemainingTimeAcrossAFailover) {
  StartCluster();
  const uint64_t idle = cluster_->Status(leader_)->last_position();
  std::this_thread::sleep_for(milliseconds(1000));
  EXPECT_EQ(cluster_->Status(leader_)->last_position(), idle)
      << "an idle leader appended to the log";

  // On whichever node leads by now (a loaded machine may have moved the
  // leadership since the election).
  pb::AcquireResponse held;
  const auto acquired = steady_clock::now();
  const std::string holder_leader = UntilServed(
      [&](const std::string& address) {
        return nodes_.Acquire(address, "a", "L", 30'000, &held, "take-L");
      },
      milliseconds(5000));
  const auto granted = steady_clock::now();  // the grant lies in between
  ASSERT_FALSE(holder_leader.empty()) << "no node granted the lock";
  ASSERT_TRUE(held.has_granted());
  leader_ = cluster_->IndexOf(holder_leader);
  ASSERT_GE(leader_, 0);
  const uint64_t after_acquire = cluster_->Status(leader_)->last_position();
  std::this_thread::sleep_for(milliseconds(5000));
  const uint64_t quiet_records =
      cluster_->Status(leader_)->last_position() - after_acquire;
  // About 20 clock records in 5 s: often enough, and never more than one
  // per record period.
  EXPECT_GE(quiet_records, 10u);
  EXPECT_LE(quiet_records, 25u);

  const auto killed = steady_clock::now();
  cluster_->Kill(leader_);
  const int next = cluster_->WaitForLeader(milliseconds(10'000), leader_);
  ASSERT_GE(next, 0);
  pb::InspectRequest inspect;
  inspect.set_lock("L");
  pb::InspectResponse view;
  const Call call = nodes_.Invoke(cluster_->address(next),
                                  &pb::LockService::Stub::Inspect, inspect,
                                  &view);
  const auto asked = steady_clock::now();
  ASSERT_TRUE(call.ok()) << call.status.error_message();
  ASSERT_EQ(view.holders_size(), 1);
  const int64_t left = view.holders(0).expires_in_ms();
  RecordProperty("left_ms", static_cast<int>(left));
  RecordProperty("killed_after_ms",
                 static_cast<int>(std::chrono::duration_cast<milliseconds>(
                                      killed - granted)
                                      .count()));
  const auto ms = [](auto d) {
    return std::chrono::duration_cast<milliseconds>(d).count();
  };
  // At most: the time left at the kill, plus one record period and the
  // slack of a loaded machine (today's 30 s would be far above); at least:
  // every millisecond since the acquire counted.
  EXPECT_LE(left, 30'000 - ms(killed - granted) + 1000)
      << "the new leader gave back the quiet time before the failover";
  EXPECT_GE(left, 30'000 - ms(asked - acquired) - 500);
}

}  // namespace
}  // namespace leasekeeper::testing
