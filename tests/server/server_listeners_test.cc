// leasekeeperd's listeners, with real processes: a port another daemon
// already listens on stops the start (no SO_REUSEPORT sharing, on the main,
// health and metrics listeners), and an out-of-range port is refused before
// anything is bound.
#include <sys/wait.h>

#include <chrono>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "harness/local_cluster.h"
#include "tests/server/test_support.h"

namespace leasekeeper::testing {
namespace {

using std::chrono::milliseconds;

struct Outcome {
  std::optional<int> exit_code;  // nullopt: still running (it started)
  std::string output;            // stdout and stderr
};

// Runs leasekeeperd with `args` and its own data dir until it exits, or
// until it reports that it listens (then it is killed: it started).
Outcome RunDaemon(const std::vector<std::string>& args) {
  DataDir dir;
  std::string command = absl::StrCat("exec ", LEASEKEEPERD_PATH, " ",
                                     dir.flag(), " --log-level=warn");
  for (const std::string& arg : args) absl::StrAppend(&command, " ", arg);
  absl::StrAppend(&command, " 2>&1");
  ChildProcess process("/bin/sh", {"-c", command});
  Outcome outcome;
  const auto deadline = std::chrono::steady_clock::now() + milliseconds(20'000);
  while (std::chrono::steady_clock::now() < deadline) {
    std::optional<std::string> line = process.ReadLine(milliseconds(500));
    if (line.has_value()) {
      absl::StrAppend(&outcome.output, *line, "\n");
      if (absl::StartsWith(*line, "leasekeeperd listening on")) return outcome;
      continue;
    }
    if (std::optional<int> status = process.WaitExit(milliseconds(0))) {
      if (WIFEXITED(*status)) outcome.exit_code = WEXITSTATUS(*status);
      // Whatever is still in the pipe.
      while (std::optional<std::string> rest =
                 process.ReadLine(milliseconds(100))) {
        absl::StrAppend(&outcome.output, *rest, "\n");
      }
      return outcome;
    }
  }
  return outcome;
}

// The first daemon keeps serving: a fresh connection reaches it and its
// state (the lock it granted before) is there.
void ExpectStillServes(const Daemon& first) {
  ASSERT_TRUE(first.process->running());
  for (int i = 0; i < 5; ++i) {
    TestClient client(first.address);  // a new connection each time
    Result<pb::InspectResponse> view = client.Inspect("L");
    ASSERT_TRUE(view.ok()) << view.status.error_message();
    ASSERT_EQ(view.response.holders_size(), 1);
    EXPECT_EQ(view.response.holders(0).client_id(), "first");
  }
}

class ListenersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    first_ = StartDaemon();
    ASSERT_FALSE(first_.address.empty());
    TestClient client(first_.address);
    ASSERT_TRUE(client.Acquire("first", "L", 600'000).ok());
  }
  Daemon first_;
};

// A second daemon whose `flag` names the first one's port: it exits 1
// naming the address (`expected` in its output), the first keeps serving.
void ExpectRefusedWhileTheFirstServes(const Daemon& first,
                                      const std::string& flag,
                                      const std::string& expected) {
  std::vector<std::string> args = {flag + "=" + first.address};
  if (flag != "--listen") args.push_back("--listen=127.0.0.1:0");
  const Outcome second = RunDaemon(args);
  EXPECT_EQ(second.exit_code, std::optional<int>(1)) << second.output;
  EXPECT_TRUE(absl::StrContains(second.output, expected)) << second.output;
  ExpectStillServes(first);
}

TEST_F(ListenersTest, SecondDaemonOnTheSamePortFailsNamingTheAddress) {
  ExpectRefusedWhileTheFirstServes(
      first_, "--listen",
      absl::StrCat("cannot listen on ", first_.address, " (--listen)"));
}

TEST_F(ListenersTest, HealthPortInUseFailsTheStartNamingTheAddress) {
  ExpectRefusedWhileTheFirstServes(
      first_, "--health-listen",
      absl::StrCat("cannot listen on ", first_.address, " (--health-listen)"));
}

TEST_F(ListenersTest, MetricsPortInUseFailsTheStartNamingTheAddress) {
  ExpectRefusedWhileTheFirstServes(first_, "--metrics-listen", first_.address);
}

TEST(ListenerFlagsTest, OutOfRangePortIsRefusedBeforeAnythingListens) {
  for (const char* flag : {"--listen", "--health-listen", "--metrics-listen"}) {
    const std::string arg = absl::StrCat(flag, "=127.0.0.1:70000");
    const Outcome outcome = RunDaemon({std::string(flag) == "--listen"
                                           ? arg
                                           : arg + " --listen=127.0.0.1:0"});
    EXPECT_EQ(outcome.exit_code, std::optional<int>(2)) << outcome.output;
    EXPECT_TRUE(absl::StrContains(
        outcome.output,
        absl::StrCat(arg, ": port out of range (0-65535)")))
        << outcome.output;
  }
}

// Cluster mode's --etcd-endpoints: etcd's URL forms start (a node that
// reaches no etcd still serves, DISCONNECTED); another form, mixed schemes
// or a CA with http:// stop the start with exit code 2, naming the flag.
TEST(ListenerFlagsTest, EtcdEndpointsOfAnotherFormStopTheStartNamingTheFlag) {
  const std::string nowhere = absl::StrCat("127.0.0.1:", FreeLoopbackPort());
  const std::vector<std::string> cluster = {"--cluster=c1", "--node-id=n1",
                                            "--listen=127.0.0.1:0"};
  for (const auto& [endpoints, extra, expected] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"ftp://" + nowhere, "",
            "--etcd-endpoints=ftp://" + nowhere +
                ": etcd endpoint \"ftp://" + nowhere +
                "\": the scheme must be http or https"},
           {"http://" + nowhere + ",https://" + nowhere, "",
            "--etcd-endpoints=http://"},
           {"http://" + nowhere, "--etcd-ca=/nonexistent/ca.pem",
            "--etcd-ca with http:// --etcd-endpoints"}}) {
    std::vector<std::string> args = cluster;
    args.push_back("--etcd-endpoints=" + endpoints);
    if (!extra.empty()) args.push_back(extra);
    const Outcome outcome = RunDaemon(args);
    EXPECT_EQ(outcome.exit_code, std::optional<int>(2)) << outcome.output;
    EXPECT_TRUE(absl::StrContains(outcome.output, expected)) << outcome.output;
  }
  // https:// without --etcd-ca: TLS with the default roots, so it starts.
  for (const std::string& endpoints :
       {"http://" + nowhere, "https://" + nowhere}) {
    std::vector<std::string> args = cluster;
    args.push_back("--etcd-endpoints=" + endpoints);
    const Outcome outcome = RunDaemon(args);
    EXPECT_EQ(outcome.exit_code, std::nullopt) << outcome.output;
  }
}

}  // namespace
}  // namespace leasekeeper::testing
