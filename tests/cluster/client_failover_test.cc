// Every kind of client call started right after the leader's SIGKILL rides
// over the failover within its own deadline: leasekeeper-ctl's one-shot
// commands, RpcClient's calls and the Python client's (sync and asyncio),
// against three etcd members and three real nodes on loopback
// (harness/local_cluster.h). The endpoint lists put the dead leader first,
// so every call starts by finding it dead and the others naming it.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/rpc_client.h"
#include "gtest/gtest.h"
#include "harness/child_process.h"
#include "harness/local_cluster.h"

namespace leasekeeper::testing {
namespace {

using client::AcquireCall;
using client::AcquireOutcome;
using client::AcquireResult;
using client::CallOptions;
using client::RpcClient;
using std::chrono::milliseconds;

// An exclusive 30 s Acquire with request id `id`, answered at once.
AcquireCall GrantCall(const std::string& client, const std::string& lock,
                      const std::string& id) {
  AcquireCall call;
  call.client_id = client;
  call.lock = lock;
  call.ttl = absl::Seconds(30);
  call.request_id = id;
  return call;
}

// The deadline every call gets: about four failovers' worth.
constexpr absl::Duration kDeadline = absl::Seconds(10);

CallOptions Within(absl::Duration timeout) {
  CallOptions options;
  options.timeout = timeout;
  return options;
}

// A finished child: its stdout and how long it ran.
struct Finished {
  bool exited_zero = false;
  std::string out;
  absl::Duration took;
};

class Child {
 public:
  explicit Child(const std::vector<std::string>& argv)
      : started_(absl::Now()),
        process_(argv.front(), {argv.begin() + 1, argv.end()}) {}
  // Waits for the exit, reading all of stdout.
  Finished Wait(milliseconds timeout) {
    Finished finished;
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (std::optional<std::string> line = process_.ReadLine(timeout)) {
      finished.out += *line + "\n";
      if (std::chrono::steady_clock::now() > until) break;
    }
    std::optional<int> status = process_.WaitExit(timeout);
    finished.took = absl::Now() - started_;
    finished.exited_zero = status.has_value() && WIFEXITED(*status) &&
                           WEXITSTATUS(*status) == 0;
    return finished;
  }
  std::optional<std::string> ReadLine(milliseconds timeout) {
    return process_.ReadLine(timeout);
  }

 private:
  absl::Time started_;
  ChildProcess process_;
};

class ClientFailoverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    etcd_ = EtcdCluster::Start(dir_.path());
    ASSERT_NE(etcd_, nullptr);
    cluster_ = LeasekeeperCluster::Start(dir_.path(), etcd_->endpoints(), 3);
    ASSERT_NE(cluster_, nullptr);
    leader_ = cluster_->WaitForLeader(milliseconds(15'000));
    ASSERT_GE(leader_, 0) << "no leader elected";
    std::vector<std::string> list = {cluster_->address(leader_)};
    for (int node = 0; node < cluster_->size(); ++node) {
      if (node != leader_) list.push_back(cluster_->address(node));
    }
    endpoints_ = absl::StrJoin(list, ",");
    absl::StatusOr<std::unique_ptr<RpcClient>> rpc =
        RpcClient::Connect(endpoints_);
    ASSERT_TRUE(rpc.ok()) << rpc.status();
    rpc_ = *std::move(rpc);
  }

  // Grants `lock` to `client` now (request id `id`); its token.
  uint64_t Grant(const std::string& client, const std::string& lock,
                 const std::string& id) {
    absl::StatusOr<AcquireResult> granted =
        rpc_->Acquire(GrantCall(client, lock, id));
    EXPECT_TRUE(granted.ok()) << granted.status();
    if (!granted.ok()) return 0;
    EXPECT_EQ(granted->outcome, AcquireOutcome::kGranted);
    return granted->token;
  }

  std::vector<std::string> Ctl(std::vector<std::string> args) const {
    args.insert(args.begin(), {LEASEKEEPER_CTL_PATH, "--server", endpoints_});
    args.insert(args.end(), {"--timeout", absl::FormatDuration(kDeadline)});
    return args;
  }

  TempDir dir_;
  std::unique_ptr<EtcdCluster> etcd_;
  std::unique_ptr<LeasekeeperCluster> cluster_;
  int leader_ = -1;
  std::string endpoints_;
  std::unique_ptr<RpcClient> rpc_;
};

TEST_F(ClientFailoverTest,
       OneShotCallsStartedAtTheLeadersKillSucceedWithinTheirDeadline) {
  // Before the kill: a lease to write under, and locks whose tokens were
  // used once (so a grant applied twice would show as a token two higher).
  const uint64_t writer_token = Grant("writer", "W", "w-1");
  const uint64_t ctl_before = Grant("before", "A", "a-1");
  const uint64_t rpc_before = Grant("before", "R", "r-1");
  ASSERT_TRUE(rpc_->Release({"before", "A", "a-2", ""}).ok());
  ASSERT_TRUE(rpc_->Release({"before", "R", "r-2", ""}).ok());
  Child python({"/usr/bin/env", absl::StrCat("PYTHONPATH=", LEASEKEEPER_PYTHON_DIR),
                "/usr/bin/python3", LEASEKEEPER_PYTHON_CALLS, endpoints_,
                dir_.path() + "/go"});
  std::optional<std::string> ready = python.ReadLine(milliseconds(20'000));
  ASSERT_TRUE(ready.has_value() && *ready == "ready")
      << "the Python client did not take its leases";

  cluster_->Kill(leader_);
  const absl::Time killed = absl::Now();
  std::ofstream(dir_.path() + "/go").put('\n');
  Child acquire(Ctl({"acquire", "A", "--client", "ctl-a", "--ttl", "30s",
                     "--wait", "10s"}));
  Child write(Ctl({"write", "W", "k", "from-ctl", "--token",
                   absl::StrCat(writer_token), "--client", "writer"}));
  Child inspect(Ctl({"inspect", "W"}));
  // RpcClient, on a client of its own made before the kill: a mutation
  // with a request id, a fenced write, a read.
  absl::StatusOr<AcquireResult> rpc_granted;
  absl::Duration rpc_took;
  std::thread rpc_calls([&] {
    absl::StatusOr<std::unique_ptr<RpcClient>> rpc =
        RpcClient::Connect(endpoints_);
    ASSERT_TRUE(rpc.ok());
    rpc_granted =
        (*rpc)->Acquire(GrantCall("rpc", "R", "r-3"), Within(kDeadline));
    rpc_took = absl::Now() - killed;
  });

  const Finished acquired = acquire.Wait(milliseconds(25'000));
  const Finished written = write.Wait(milliseconds(25'000));
  const Finished inspected = inspect.Wait(milliseconds(25'000));
  rpc_calls.join();
  const Finished py = python.Wait(milliseconds(25'000));

  EXPECT_TRUE(acquired.exited_zero) << acquired.out;
  EXPECT_TRUE(absl::StrContains(acquired.out,
                                absl::StrCat("token ", ctl_before + 1, ",")))
      << "applied more than once? " << acquired.out;
  EXPECT_TRUE(written.exited_zero) << written.out;
  EXPECT_TRUE(inspected.exited_zero) << inspected.out;
  EXPECT_TRUE(absl::StrContains(inspected.out, "writer")) << inspected.out;
  ASSERT_TRUE(rpc_granted.ok()) << rpc_granted.status();
  EXPECT_EQ(rpc_granted->token, rpc_before + 1);
  EXPECT_TRUE(absl::StrContains(py.out, "ok sync")) << py.out;
  EXPECT_TRUE(absl::StrContains(py.out, "ok aio")) << py.out;
  for (const Finished* f : {&acquired, &written, &inspected}) {
    EXPECT_LT(f->took, kDeadline + absl::Seconds(1)) << f->out;
  }
  std::cerr << "after the kill: ctl acquire " << acquired.took
            << ", ctl write " << written.took << ", ctl inspect "
            << inspected.took << ", RpcClient acquire " << rpc_took
            << "; python: " << py.out;

  // Applied once: the ctl's grant holds A at the next token, and the fenced
  // write went in once, under the writer's token.
  absl::StatusOr<client::LockInfo> a = rpc_->Inspect("A", Within(kDeadline));
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_EQ(a->holders.size(), 1u);
  EXPECT_EQ(a->holders[0].client_id, "ctl-a");
  EXPECT_EQ(a->holders[0].token, ctl_before + 1);
  absl::StatusOr<std::optional<std::string>> value =
      rpc_->Read("W", "k", Within(kDeadline));
  ASSERT_TRUE(value.ok()) << value.status();
  EXPECT_EQ(value->value_or(""), "from-ctl");
}

}  // namespace
}  // namespace leasekeeper::testing
