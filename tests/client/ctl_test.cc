// leasekeeper-ctl against a real leasekeeperd: the one-shot commands with
// both output formats, and `run`: commands under one lock never overlap and
// see rising tokens, --try on a held lock exits 75, a command whose lease is
// lost is stopped, the exit status passes through.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/lease_timer.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "security/testing/test_pki.h"
#include "tests/client/fake_follower.h"
#include "tests/client/live_server.h"
#include "tests/client/subprocess.h"

namespace leasekeeper::client::testing {
namespace {

std::string Ctl() { return BinaryDirectory() + "/leasekeeper-ctl"; }

// A fresh file path under the test's temporary directory.
std::string TempFile(absl::string_view name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  std::string path =
      absl::StrCat(dir != nullptr ? dir : "/tmp", "/leasekeeper_ctl_test_",
                   getpid(), "_", name);
  std::remove(path.c_str());
  return path;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

class CtlTest : public LiveServerTest {
 protected:
  using Environment = std::vector<std::pair<std::string, std::string>>;

  // Runs leasekeeper-ctl with LEASEKEEPER_SERVER pointing at the server,
  // and `environment` added.
  static ProcessResult RunCtl(std::vector<std::string> args,
                              Environment environment = {},
                              absl::Duration timeout = absl::Seconds(20)) {
    args.insert(args.begin(), Ctl());
    environment.emplace_back("LEASEKEEPER_SERVER", server().address());
    return RunProcess(args, environment, timeout);
  }
  static absl::StatusOr<Subprocess> StartCtl(std::vector<std::string> args) {
    args.insert(args.begin(), Ctl());
    return Subprocess::Start(args,
                             {{"LEASEKEEPER_SERVER", server().address()}});
  }
};

TEST_F(CtlTest, AServerListIsFollowedToTheLeaderAFollowerNames) {
  absl::StatusOr<std::unique_ptr<FakeFollower>> follower =
      FakeFollower::Start(server().address());
  ASSERT_TRUE(follower.ok()) << follower.status();
  const std::string lock = LockName();
  const std::string servers = absl::StrCat(
      "127.0.0.1:1,", (*follower)->address());  // the first one is down
  ProcessResult acquired = RunProcess(
      {Ctl(), "acquire", lock, "--client", "listed", "--ttl", "1m"},
      {{"LEASEKEEPER_SERVER", servers}}, absl::Seconds(20));
  ASSERT_EQ(acquired.exit_code, 0) << acquired.err;
  EXPECT_GE((*follower)->Calls("Acquire"), 1);
  std::vector<HolderInfo> holders = Holders(lock);
  ASSERT_EQ(holders.size(), 1u);
  EXPECT_EQ(holders[0].client_id, "listed");
  ProcessResult released = RunProcess(
      {Ctl(), "--server", (*follower)->address(), "release", lock, "--client",
       "listed"},
      {}, absl::Seconds(20));
  EXPECT_EQ(released.exit_code, 0) << released.err;
  EXPECT_TRUE(Holders(lock).empty());
}

TEST_F(CtlTest, RunHoldsItsLockThroughAFollowersRedirect) {
  absl::StatusOr<std::unique_ptr<FakeFollower>> follower =
      FakeFollower::Start(server().address());
  ASSERT_TRUE(follower.ok()) << follower.status();
  const std::string lock = LockName();
  ProcessResult run = RunProcess(
      {Ctl(), "--server", (*follower)->address(), "run", lock, "--ttl", "5s",
       "--", "sh", "-c", "echo token=$LEASEKEEPER_FENCING_TOKEN"},
      {}, absl::Seconds(20));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(absl::StartsWith(run.out, "token=")) << run.out;
  EXPECT_GE((*follower)->Calls("Session"), 1);
}

TEST_F(CtlTest, AnEmptyEntryInTheServerListIsAUsageError) {
  ProcessResult result =
      RunProcess({Ctl(), "--server", "a:1,,b:1", "inspect", "L"}, {},
                 absl::Seconds(20));
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("--server: invalid server list"), std::string::npos)
      << result.err;
}

TEST_F(CtlTest, AServerAddressGrpcWouldMisreadIsRefusedBeforeAnyCall) {
  struct Case {
    const char* server;
    const char* reason;
  } cases[] = {
      // gRPC would connect to port 34463 (99999 mod 65536), to port 0, or
      // fail to resolve the whole URL as a host name.
      {"127.0.0.1:99999", "port out of range (1-65535)"},
      {"127.0.0.1", "missing port"},
      {"http://127.0.0.1:7233", "scheme not supported; write host:port"},
  };
  for (const Case& c : cases) {
    ProcessResult text = RunProcess(
        {Ctl(), "--server", c.server, "--timeout", "2s", "inspect", "L"});
    EXPECT_EQ(text.exit_code, 2) << c.server << ": " << text.err;
    EXPECT_EQ(text.err,
              absl::StrCat("leasekeeper-ctl inspect: --server: invalid server "
                           "address \"",
                           c.server, "\": ", c.reason,
                           "\nrun 'leasekeeper-ctl inspect --help' for its "
                           "usage\n"));
    ProcessResult json = RunProcess({Ctl(), "-o", "json", "--timeout", "2s",
                                     "health"},
                                    {{"LEASEKEEPER_SERVER", c.server}});
    EXPECT_EQ(json.exit_code, 2) << c.server << ": " << json.err;
    EXPECT_EQ(json.out, "");
    nlohmann::json error = nlohmann::json::parse(json.err)["error"];
    EXPECT_EQ(error["code"], "INVALID_ARGUMENT");
    EXPECT_EQ(error["message"],
              absl::StrCat("--server: invalid server address \"", c.server,
                           "\": ", c.reason));
  }
}

TEST_F(CtlTest, OneShotCommandsRoundTripInJson) {
  const std::string lock = LockName();
  ProcessResult acquired = RunCtl(
      {"-o", "json", "acquire", lock, "--client", "ops", "--ttl", "30s"});
  ASSERT_EQ(acquired.exit_code, 0) << acquired.err;
  nlohmann::json grant = nlohmann::json::parse(acquired.out);
  EXPECT_EQ(grant["acquired"], true);
  const uint64_t token = grant["token"];
  EXPECT_GE(token, 1u);

  ProcessResult inspected = RunCtl({"inspect", lock, "--output=json"});
  ASSERT_EQ(inspected.exit_code, 0) << inspected.err;
  nlohmann::json info = nlohmann::json::parse(inspected.out);
  ASSERT_EQ(info["holders"].size(), 1u);
  EXPECT_EQ(info["holders"][0]["client"], "ops");
  EXPECT_EQ(info["holders"][0]["token"], token);

  ProcessResult status = RunCtl({"status", "ops", "-o", "json"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_EQ(nlohmann::json::parse(status.out)["holds"][0]["lock"], lock);

  ProcessResult listed =
      RunCtl({"locks", "--prefix", LockName(), "-o", "json"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_EQ(nlohmann::json::parse(listed.out)["locks"][0]["lock"], lock);

  ProcessResult renewed =
      RunCtl({"renew", lock, "--client", "ops", "--ttl", "1m", "-o", "json"});
  ASSERT_EQ(renewed.exit_code, 0) << renewed.err;
  EXPECT_EQ(nlohmann::json::parse(renewed.out)["token"], token);

  ProcessResult written = RunCtl({"write", lock, "part-1", "rows 1-100",
                                  "--token", absl::StrCat(token), "--client",
                                  "ops"});
  ASSERT_EQ(written.exit_code, 0) << written.err;
  ProcessResult read = RunCtl({"read", lock, "part-1"});
  ASSERT_EQ(read.exit_code, 0) << read.err;
  EXPECT_EQ(read.out, "rows 1-100\n");

  ProcessResult busy = RunCtl(
      {"-o", "json", "acquire", lock, "--client", "other", "--ttl", "30s"});
  EXPECT_EQ(busy.exit_code, 75) << busy.err;
  EXPECT_EQ(nlohmann::json::parse(busy.out)["busy"], true);
  absl::StatusOr<LockInfo> after = rpc().Inspect(lock);
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(after->queue.empty()) << "a busy acquire leaves no wait behind";

  ProcessResult released =
      RunCtl({"release", lock, "--client", "ops", "-o", "json"});
  ASSERT_EQ(released.exit_code, 0) << released.err;
  EXPECT_EQ(nlohmann::json::parse(released.out)["result"], "released");
  ProcessResult again = RunCtl({"release", lock, "--client", "ops"});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.err.find("not holder"), std::string::npos) << again.err;
}

TEST_F(CtlTest, RefusedWritesAndMissingValuesExitOne) {
  const std::string lock = LockName();
  ProcessResult made_up =
      RunCtl({"write", lock, "k", "v", "--token", "5", "--client", "ops"});
  EXPECT_EQ(made_up.exit_code, 1);
  EXPECT_NE(made_up.err.find("token not issued"), std::string::npos)
      << made_up.err;
  ASSERT_EQ(
      RunCtl({"acquire", lock, "--client", "ops", "--ttl", "1m"}).exit_code, 0);
  // The writer is the holder named by LEASEKEEPER_CLIENT_ID, as under run.
  ProcessResult held = RunProcess(
      {Ctl(), "write", lock, "k", "new", "--token", "1"},
      {{"LEASEKEEPER_SERVER", server().address()},
       {"LEASEKEEPER_CLIENT_ID", "ops"}});
  EXPECT_EQ(held.exit_code, 0) << held.err;
  ProcessResult not_holder = RunCtl(
      {"write", lock, "k", "old", "--token", "1", "--client", "someone"});
  EXPECT_EQ(not_holder.exit_code, 1);
  EXPECT_NE(not_holder.err.find("not holder"), std::string::npos)
      << not_holder.err;
  EXPECT_EQ(RunCtl({"write", lock, "k", "v", "--token", "1"}).exit_code, 2)
      << "no writer named: nothing to check the lease of";
  ProcessResult missing = RunCtl({"read", lock, "nothing-here"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.out, "");
}

TEST_F(CtlTest, DeleteIsHolderCheckedAndKeysListsWhatIsLeft) {
  const std::string lock = LockName();
  ASSERT_EQ(
      RunCtl({"acquire", lock, "--client", "ops", "--ttl", "1m"}).exit_code, 0);
  for (const char* key : {"part-2", "part-1", "part-3"}) {
    ASSERT_EQ(RunCtl({"write", lock, key, "v", "--token", "1", "--client",
                      "ops"})
                  .exit_code,
              0);
  }
  ProcessResult not_holder =
      RunCtl({"delete", lock, "part-2", "--token", "1", "--client", "other"});
  EXPECT_EQ(not_holder.exit_code, 1);
  EXPECT_NE(not_holder.err.find("not holder"), std::string::npos)
      << not_holder.err;
  EXPECT_EQ(RunCtl({"delete", lock, "part-2", "--token", "1"}).exit_code, 2)
      << "no holder named";
  ProcessResult deleted =
      RunCtl({"delete", lock, "part-2", "--token", "1", "--client", "ops"});
  ASSERT_EQ(deleted.exit_code, 0) << deleted.err;
  EXPECT_EQ(deleted.out,
            absl::StrCat("deleted ", lock, " part-2 with token 1\n"));
  // The holder named by LEASEKEEPER_CLIENT_ID, as under run; a second
  // delete has nothing to delete and still exits 0.
  ProcessResult again =
      RunProcess({Ctl(), "-o", "json", "delete", lock, "part-2", "--token", "1"},
                 {{"LEASEKEEPER_SERVER", server().address()},
                  {"LEASEKEEPER_CLIENT_ID", "ops"}});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(nlohmann::json::parse(again.out)["existed"], false);

  ProcessResult keys = RunCtl({"keys", lock});
  ASSERT_EQ(keys.exit_code, 0) << keys.err;
  EXPECT_EQ(keys.out, "part-1\npart-3\n");
  ProcessResult page = RunCtl({"keys", lock, "--limit", "1", "-o", "json"});
  ASSERT_EQ(page.exit_code, 0) << page.err;
  nlohmann::json first = nlohmann::json::parse(page.out);
  EXPECT_EQ(first["keys"], nlohmann::json::array({"part-1"}));
  EXPECT_EQ(first["next_after"], "part-1");
  ProcessResult rest = RunCtl({"keys", lock, "--after", "part-1", "--limit",
                               "1", "-o", "json"});
  ASSERT_EQ(rest.exit_code, 0) << rest.err;
  nlohmann::json last = nlohmann::json::parse(rest.out);
  EXPECT_EQ(last["keys"], nlohmann::json::array({"part-3"}));
  EXPECT_TRUE(last["next_after"].is_null());
  ProcessResult table = RunCtl({"keys", lock, "--limit", "1"});
  EXPECT_NE(table.err.find("more keys follow: --after part-1"),
            std::string::npos)
      << table.err;
}

TEST_F(CtlTest, BadArgumentsPrintTheProblemAndWhereToReadTheUsageAndExitTwo) {
  ProcessResult result = RunCtl({"acquire", "L", "--ttl", "30"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.out, "");
  EXPECT_EQ(result.err,
            "leasekeeper-ctl acquire: --ttl: invalid duration \"30\" (use "
            "e.g. 500ms, 30s, 5m, 1h)\n"
            "run 'leasekeeper-ctl acquire --help' for its usage\n");
}

TEST_F(CtlTest, UnderJsonAUsageErrorIsOneJsonObjectOnStderr) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"-o", "json", "acquire", "L", "--client", "c",
                                 "--ttl", "10x"},
        std::vector<std::string>{"-o", "json", "acquire", "L", "--ttl", "1m"},
        std::vector<std::string>{"acquire", "-o", "json"},
        std::vector<std::string>{"-o", "json", "acquire", "L", "--client", "c",
                                 "--ttl", "1m", "--mode", "bogus"},
        std::vector<std::string>{"-o", "json", "write", "L", "k", "v",
                                 "--token", "1"}}) {
    ProcessResult result = RunCtl(args);
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_EQ(result.out, "");
    ASSERT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1)
        << result.err;
    nlohmann::json error = nlohmann::json::parse(result.err)["error"];
    EXPECT_EQ(error["code"], "INVALID_ARGUMENT") << result.err;
    EXPECT_TRUE(error["reason"].is_null());
    EXPECT_EQ(error["usage"],
              absl::StrCat("leasekeeper-ctl ",
                           args[0] == "-o" ? args[2] : args[0], " --help"))
        << result.err;
  }
}

TEST_F(CtlTest, CommandHelpPrintsThatCommandsUsageAndFlagsAndExitsZero) {
  ProcessResult help = RunCtl({"run", "--help"});
  EXPECT_EQ(help.exit_code, 0) << help.err;
  EXPECT_NE(help.out.find("usage: leasekeeper-ctl run [FLAGS] LOCK [CMD...]"),
            std::string::npos)
      << help.out;
  for (const char* flag : {"--ttl", "--try", "--wait", "--kill-grace",
                           "--client", "LEASEKEEPER_CLIENT"}) {
    EXPECT_NE(help.out.find(flag), std::string::npos) << flag;
  }
  EXPECT_EQ(help.out.find("--token"), std::string::npos) << "write's flag";
  EXPECT_EQ(help.out.find("Commands:"), std::string::npos);

  ProcessResult overview = RunCtl({"--help"});
  EXPECT_EQ(overview.exit_code, 0);
  EXPECT_NE(overview.out.find("Commands:"), std::string::npos);
  EXPECT_LT(std::count(help.out.begin(), help.out.end(), '\n'), 40);
}

TEST_F(CtlTest, EnvironmentVariablesStandInForFlags) {
  const std::string lock = LockName();
  ProcessResult acquired = RunCtl(
      {"acquire", lock, "--ttl", "30s"},
      {{"LEASEKEEPER_CLIENT", "from-env"}, {"LEASEKEEPER_OUTPUT", "json"}});
  ASSERT_EQ(acquired.exit_code, 0) << acquired.err;
  EXPECT_EQ(nlohmann::json::parse(acquired.out)["client"], "from-env");
  ASSERT_EQ(Holders(lock).size(), 1u);
  EXPECT_EQ(Holders(lock)[0].client_id, "from-env");

  // A flag wins over its variable.
  ProcessResult released = RunCtl({"release", lock, "--client", "from-env"},
                                  {{"LEASEKEEPER_CLIENT", "someone-else"}});
  EXPECT_EQ(released.exit_code, 0) << released.err;
  EXPECT_NE(released.out.find("released"), std::string::npos) << released.out;

  // LEASEKEEPER_SERVER: nothing listens on port 1 (the flag is not given,
  // so the variable decides where the call goes).
  ProcessResult unreachable =
      RunProcess({Ctl(), "inspect", lock, "--timeout", "2s"},
                 {{"LEASEKEEPER_SERVER", "127.0.0.1:1"}});
  EXPECT_EQ(unreachable.exit_code, 1);
  EXPECT_NE(unreachable.err.find("127.0.0.1:1"), std::string::npos)
      << unreachable.err;
}

TEST_F(CtlTest, TwoRunsOnOneLockNeverOverlapAndSeeRisingTokens) {
  const std::string lock = LockName();
  const std::string journal = TempFile("journal");
  // Each command notes its start and end, with its token, around a pause.
  const std::string script = absl::StrCat(
      "echo start $LEASEKEEPER_FENCING_TOKEN >> ", journal,
      "; sleep 0.3; echo end $LEASEKEEPER_FENCING_TOKEN >> ", journal);
  std::vector<absl::StatusOr<Subprocess>> runs;
  for (int i = 0; i < 3; ++i) {
    runs.push_back(
        StartCtl({"run", lock, "--ttl", "2s", "--", "/bin/sh", "-c", script}));
    ASSERT_TRUE(runs.back().ok()) << runs.back().status();
  }
  for (auto& run : runs) {
    ProcessResult result = run->Wait(absl::Seconds(20));
    EXPECT_EQ(result.exit_code, 0) << result.err;
  }
  std::vector<std::string> lines =
      absl::StrSplit(ReadFile(journal), '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 6u) << ReadFile(journal);
  uint64_t previous = 0;
  for (size_t i = 0; i < lines.size(); i += 2) {
    std::vector<std::string> start = absl::StrSplit(lines[i], ' ');
    std::vector<std::string> end = absl::StrSplit(lines[i + 1], ' ');
    ASSERT_EQ(start[0], "start") << "overlap: " << ReadFile(journal);
    ASSERT_EQ(end[0], "end") << "overlap: " << ReadFile(journal);
    EXPECT_EQ(start[1], end[1]);
    uint64_t token = 0;
    ASSERT_TRUE(absl::SimpleAtoi(start[1], &token));
    EXPECT_GT(token, previous) << "tokens rise from one run to the next";
    previous = token;
  }
  std::remove(journal.c_str());
}

TEST_F(CtlTest, RunTryOnAHeldLockExits75WithoutRunningTheCommand) {
  const std::string lock = LockName();
  auto holder = NewClient("holds-it");
  absl::StatusOr<Lease> lease =
      holder->Acquire(lock, absl::Seconds(10), absl::Seconds(1));
  ASSERT_TRUE(lease.ok()) << lease.status();
  const std::string marker = TempFile("ran");
  ProcessResult result = RunCtl({"run", lock, "--try", "--", "/bin/sh", "-c",
                                 absl::StrCat("touch ", marker)});
  EXPECT_EQ(result.exit_code, 75) << result.err;
  EXPECT_NE(result.err.find("busy"), std::string::npos) << result.err;
  EXPECT_TRUE(ReadFile(marker).empty());
  std::ifstream exists(marker);
  EXPECT_FALSE(exists.good()) << "the command ran without the lock";
  absl::StatusOr<LockInfo> info = rpc().Inspect(lock);
  ASSERT_TRUE(info.ok());
  EXPECT_TRUE(info->queue.empty());
}

TEST_F(CtlTest, RunPassesTheCommandsExitStatusAndEnvironmentThrough) {
  const std::string lock = LockName();
  ProcessResult result =
      RunCtl({"run", lock, "--", "/bin/sh", "-c",
              "echo $LEASEKEEPER_LOCK $LEASEKEEPER_FENCING_TOKEN; exit 3"});
  EXPECT_EQ(result.exit_code, 3) << result.err;
  std::vector<std::string> words =
      absl::StrSplit(result.out, absl::ByAnyChar(" \n"), absl::SkipEmpty());
  ASSERT_EQ(words.size(), 2u) << result.out;
  EXPECT_EQ(words[0], lock);
  uint64_t token = 0;
  EXPECT_TRUE(absl::SimpleAtoi(words[1], &token) && token >= 1);
  EXPECT_TRUE(Holders(lock).empty()) << "released when the command exited";
}

TEST_F(CtlTest, RunStopsTheCommandWhenTheLeaseIsLost) {
  const std::string lock = LockName();
  // The command ignores SIGTERM, so only the SIGKILL after the grace stops
  // it.
  absl::StatusOr<Subprocess> run = StartCtl(
      {"run", lock, "--ttl", "1s", "--client", "doomed", "--kill-grace", "1s",
       "--", "/bin/sh", "-c", "trap '' TERM; echo started; sleep 30"});
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_TRUE(run->WaitForLine("started", absl::Seconds(10)).has_value());

  // The server takes the lease away (an operator's force-release).
  const MonotonicTime lost_at = MonotonicNow();
  ProcessResult forced =
      RunCtl({"force-release", lock, "--holder", "doomed", "--reason", "test"});
  ASSERT_EQ(forced.exit_code, 0) << forced.err;
  ProcessResult result = run->Wait(absl::Seconds(15));
  EXPECT_LT(MonotonicNow() - lost_at, absl::Seconds(5))
      << "the command ran on without the lock";
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_NE(result.err.find("lost the lease"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("): forced"), std::string::npos) << result.err;
}

TEST_F(CtlTest, RunForwardsATerminationSignalToTheCommand) {
  const std::string lock = LockName();
  absl::StatusOr<Subprocess> run = StartCtl(
      {"run", lock, "--", "/bin/sh", "-c", "echo started; exec sleep 30"});
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_TRUE(run->WaitForLine("started", absl::Seconds(10)).has_value());
  run->Signal(SIGTERM);
  ProcessResult result = run->Wait(absl::Seconds(10));
  EXPECT_EQ(result.exit_code, 128 + SIGTERM) << result.err;
  EXPECT_TRUE(Eventually([&] { return Holders(lock).empty(); }));
}

TEST_F(CtlTest, InterruptingARunThatWaitsLeavesNoWaitBehind) {
  const std::string lock = LockName();
  auto holder = NewClient("keeps-it");
  absl::StatusOr<Lease> lease =
      holder->Acquire(lock, absl::Seconds(10), absl::Seconds(1));
  ASSERT_TRUE(lease.ok()) << lease.status();
  absl::StatusOr<Subprocess> run = StartCtl(
      {"run", lock, "--client", "impatient", "--", "/bin/sh", "-c", "true"});
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_TRUE(Eventually([&] {
    absl::StatusOr<LockInfo> info = rpc().Inspect(lock);
    return info.ok() && info->queue.size() == 1;
  }));
  run->Signal(SIGINT);
  ProcessResult result = run->Wait(absl::Seconds(10));
  EXPECT_EQ(result.exit_code, 128 + SIGINT) << result.err;
  EXPECT_TRUE(Eventually([&] {
    absl::StatusOr<LockInfo> info = rpc().Inspect(lock);
    return info.ok() && info->queue.empty();
  }));
}

TEST_F(CtlTest, KilledRunFreesTheLockWithinTheSessionGrace) {
  const std::string lock = LockName();
  absl::StatusOr<Subprocess> run =
      StartCtl({"run", lock, "--ttl", "30s", "--", "/bin/sh", "-c",
                "echo started; exec sleep 30"});
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_TRUE(run->WaitForLine("started", absl::Seconds(10)).has_value());
  auto next = NewClient("next-in-line");
  const MonotonicTime killed_at = MonotonicNow();
  run->Signal(SIGKILL);
  absl::StatusOr<Lease> lease =
      next->Acquire(lock, absl::Seconds(5), absl::Seconds(10));
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_LT(MonotonicNow() - killed_at, kGrace + absl::Milliseconds(1500));
}

TEST_F(CtlTest, VersionShowsThisBinaryAndTheServer) {
  ProcessResult version = RunCtl({"version", "-o", "json"});
  ASSERT_EQ(version.exit_code, 0) << version.err;
  nlohmann::json json = nlohmann::json::parse(version.out);
  EXPECT_FALSE(std::string(json["client"]["version"]).empty());
  EXPECT_FALSE(std::string(json["client"]["commit"]).empty());
  EXPECT_FALSE(std::string(json["client"]["grpc_version"]).empty());
  // Both ends come from these sources (their commit stamps differ when
  // only one binary was relinked since the last commit).
  EXPECT_EQ(json["server"]["version"], json["client"]["version"]);
  EXPECT_FALSE(std::string(json["server"]["commit"]).empty());
  EXPECT_EQ(json["server"]["grpc_version"], json["client"]["grpc_version"]);
  EXPECT_EQ(json["server"]["address"], server().address());
  EXPECT_GE(json["server"]["uptime_ms"].get<int64_t>(), 0);

  ProcessResult table = RunCtl({"version"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_TRUE(absl::StartsWith(table.out, "leasekeeper-ctl "));
  EXPECT_NE(table.out.find("\nleasekeeperd "), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("up "), std::string::npos) << table.out;
}

TEST_F(CtlTest, VersionFlagAsksNoServerButVersionCommandFailsWithoutOne) {
  const Environment nowhere = {{"LEASEKEEPER_SERVER", "127.0.0.1:1"}};
  ProcessResult flag = RunProcess({Ctl(), "--version"}, nowhere);
  EXPECT_EQ(flag.exit_code, 0) << flag.err;
  EXPECT_TRUE(absl::StartsWith(flag.out, "leasekeeper-ctl ")) << flag.out;
  EXPECT_NE(flag.out.find(", gRPC "), std::string::npos) << flag.out;

  ProcessResult command =
      RunProcess({Ctl(), "version", "--timeout", "2s"}, nowhere);
  EXPECT_EQ(command.exit_code, 1);
  EXPECT_TRUE(absl::StartsWith(command.out, "leasekeeper-ctl ")) << command.out;
  EXPECT_EQ(command.out.find("leasekeeperd"), std::string::npos);
  EXPECT_NE(command.err.find("UNAVAILABLE"), std::string::npos) << command.err;
}

TEST_F(CtlTest, HealthExitsZeroOnlyForAServingService) {
  ProcessResult whole = RunCtl({"health"});
  EXPECT_EQ(whole.exit_code, 0) << whole.err;
  EXPECT_EQ(whole.out, "SERVING\n");

  ProcessResult service = RunCtl(
      {"health", "--service", "leasekeeper.v1.LockService", "-o", "json"});
  ASSERT_EQ(service.exit_code, 0) << service.err;
  nlohmann::json json = nlohmann::json::parse(service.out);
  EXPECT_EQ(json["status"], "SERVING");
  EXPECT_EQ(json["service"], "leasekeeper.v1.LockService");
  EXPECT_EQ(json["server"], server().address());

  ProcessResult unknown = RunCtl({"health", "--service", "no.Such"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.err.find("NOT_FOUND"), std::string::npos) << unknown.err;

  ProcessResult nowhere =
      RunProcess({Ctl(), "health", "--timeout", "2s"},
                 {{"LEASEKEEPER_SERVER", "127.0.0.1:1"}});
  EXPECT_EQ(nowhere.exit_code, 1);
  EXPECT_NE(nowhere.err.find("UNAVAILABLE"), std::string::npos) << nowhere.err;
}

TEST_F(CtlTest, HealthOfSeveralNodesAsksEachAndServesIfAnyServes) {
  const std::string servers =
      absl::StrCat("127.0.0.1:1,", server().address());  // the first is down
  ProcessResult text = RunProcess({Ctl(), "health", "--timeout", "2s"},
                                  {{"LEASEKEEPER_SERVER", servers}});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  std::vector<std::string> lines =
      absl::StrSplit(absl::StripTrailingAsciiWhitespace(text.out), '\n');
  ASSERT_EQ(lines.size(), 2u) << text.out;
  // Columns aligned: the addresses differ in length.
  EXPECT_TRUE(absl::StartsWith(lines[0], "127.0.0.1:1  ")) << lines[0];
  EXPECT_NE(lines[0].find("  error: UNAVAILABLE: "), std::string::npos)
      << lines[0];
  EXPECT_TRUE(absl::StartsWith(lines[1], server().address() + "  "))
      << lines[1];
  EXPECT_TRUE(absl::EndsWith(lines[1], "  SERVING")) << lines[1];

  ProcessResult json =
      RunProcess({Ctl(), "health", "--timeout", "2s", "-o", "json"},
                 {{"LEASEKEEPER_SERVER", servers}});
  EXPECT_EQ(json.exit_code, 0) << json.err;
  nlohmann::json answer = nlohmann::json::parse(json.out);
  EXPECT_EQ(answer["status"], "SERVING");
  ASSERT_EQ(answer["nodes"].size(), 2u);
  EXPECT_TRUE(answer["nodes"][0]["status"].is_null());
  EXPECT_EQ(answer["nodes"][1]["status"], "SERVING");

  ProcessResult none =
      RunProcess({Ctl(), "health", "--timeout", "2s"},
                 {{"LEASEKEEPER_SERVER", "127.0.0.1:1,127.0.0.1:2"}});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.out.find("127.0.0.1:2  error: UNAVAILABLE"),
            std::string::npos)
      << none.out;
}

TEST_F(CtlTest, ClusterStatusOfASingleDaemonSaysItIsNotInClusterMode) {
  ProcessResult status = RunCtl({"cluster", "status"});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_TRUE(absl::StartsWith(
      status.out,
      absl::StrCat("single node at ", server().address(),
                   ", not in cluster mode (no --cluster)")))
      << status.out;
}

// Runs bash (found in PATH by /usr/bin/env) with `args`.
ProcessResult Bash(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/usr/bin/env", "bash"};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess(argv);
}

TEST_F(CtlTest, CompletionScriptsAreValidBashAndCompleteCommandsAndFlags) {
  for (const char* shell : {"bash", "zsh"}) {
    ProcessResult script = RunCtl({"completion", shell});
    ASSERT_EQ(script.exit_code, 0) << script.err;
    const std::string file = TempFile(absl::StrCat("completion.", shell));
    std::ofstream(file) << script.out;
    ProcessResult checked = Bash({"-n", file});
    EXPECT_EQ(checked.exit_code, 0) << shell << ": " << checked.err;
    std::remove(file.c_str());
  }
  ProcessResult script = RunCtl({"completion", "bash"});
  const std::string file = TempFile("completion.sh");
  std::ofstream(file) << script.out;
  // What bash would offer after each line typed so far.
  auto complete = [&](const std::string& words) {
    ProcessResult offered = Bash(
        {"-c", absl::StrCat("source ", file, "; COMP_WORDS=(", words,
                            "); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); "
                            "_leasekeeper_ctl; echo \"${COMPREPLY[*]}\"")});
    EXPECT_EQ(offered.exit_code, 0) << offered.err;
    return std::string(absl::StripTrailingAsciiWhitespace(offered.out));
  };
  EXPECT_EQ(complete("leasekeeper-ctl force-"), "force-release");
  EXPECT_EQ(complete("leasekeeper-ctl run L --kill"), "--kill-grace");
  EXPECT_EQ(complete("leasekeeper-ctl acquire L --kill"), "")
      << "a flag of run only";
  EXPECT_EQ(complete("leasekeeper-ctl inspect L --tls-s"), "--tls-server-name");
  EXPECT_EQ(complete("leasekeeper-ctl -o j"), "json");
  EXPECT_EQ(complete("leasekeeper-ctl completion z"), "zsh");
  EXPECT_EQ(complete("leasekeeper-ctl help wr"), "write");
  EXPECT_EQ(complete("leasekeeper-ctl run L -- --tr"), "")
      << "after --: the job's words";
  std::remove(file.c_str());

  ProcessResult bad = RunCtl({"completion", "fish"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err,
            "leasekeeper-ctl completion: SHELL: fish not in {bash,zsh}\n"
            "run 'leasekeeper-ctl completion --help' for its usage\n")
      << "the completion command's problem, not the overview";
}

TEST_F(CtlTest, JsonErrorsAreOneObjectOnStderrWithCodeReasonAndMessage) {
  ProcessResult result =
      RunCtl({"-o", "json", "release", LockName(), "--client", "nobody"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.out, "") << "stdout carries results only";
  ASSERT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1)
      << result.err;
  nlohmann::json json = nlohmann::json::parse(result.err);
  EXPECT_EQ(json["error"]["code"], "FAILED_PRECONDITION");
  EXPECT_EQ(json["error"]["reason"], "NOT_HOLDER");
  EXPECT_EQ(json["error"]["message"], "not holder");

  // A failure the server did not answer has no reason.
  ProcessResult unreachable =
      RunProcess({Ctl(), "-o", "json", "locks", "--timeout", "2s"},
                 {{"LEASEKEEPER_SERVER", "127.0.0.1:1"}});
  EXPECT_EQ(unreachable.exit_code, 1);
  nlohmann::json transport = nlohmann::json::parse(unreachable.err);
  EXPECT_EQ(transport["error"]["code"], "UNAVAILABLE");
  EXPECT_TRUE(transport["error"]["reason"].is_null());
}

TEST_F(CtlTest, ForceReleaseEndsTheLeaseAndNeedsAReason) {
  const std::string lock = LockName();
  ASSERT_EQ(
      RunCtl({"acquire", lock, "--client", "stuck", "--ttl", "1m"}).exit_code,
      0);
  ProcessResult without_reason = RunCtl({"force-release", lock});
  EXPECT_EQ(without_reason.exit_code, 2);
  EXPECT_NE(without_reason.err.find("force-release: --reason is required"),
            std::string::npos)
      << without_reason.err;
  EXPECT_EQ(Holders(lock).size(), 1u) << "a usage error changes nothing";

  ProcessResult forced =
      RunCtl({"-o", "json", "force-release", lock, "--holder", "stuck",
              "--reason", "INC-1 job hung"});
  ASSERT_EQ(forced.exit_code, 0) << forced.err;
  nlohmann::json json = nlohmann::json::parse(forced.out);
  EXPECT_EQ(json["lock"], lock);
  ASSERT_EQ(json["released"].size(), 1u);
  EXPECT_EQ(json["released"][0]["client"], "stuck");
  EXPECT_EQ(json["released"][0]["mode"], "exclusive");
  EXPECT_TRUE(Holders(lock).empty());

  ProcessResult again = RunCtl({"force-release", lock, "--reason", "again"});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.err.find(lock + " has no holder"), std::string::npos)
      << again.err;
}

TEST_F(CtlTest, ForceReleaseNamesASemaphoreLeaseSemaphore) {
  const std::string lock = LockName();
  ASSERT_EQ(RunCtl({"acquire", lock, "--client", "stuck", "--ttl", "1m",
                    "--semaphore", "2"})
                .exit_code,
            0);
  ProcessResult forced = RunCtl(
      {"-o", "json", "force-release", lock, "--reason", "INC-2 job hung"});
  ASSERT_EQ(forced.exit_code, 0) << forced.err;
  nlohmann::json json = nlohmann::json::parse(forced.out);
  ASSERT_EQ(json["released"].size(), 1u);
  EXPECT_EQ(json["released"][0]["mode"], "semaphore");
}

TEST_F(CtlTest, ReacquiringAHeldLockSaysAlreadyHoldsWithTheToken) {
  const std::string lock = LockName();
  ProcessResult first =
      RunCtl({"-o", "json", "acquire", lock, "--client", "ops", "--ttl", "1m"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const uint64_t token = nlohmann::json::parse(first.out)["token"];
  ProcessResult again =
      RunCtl({"acquire", lock, "--client", "ops", "--ttl", "1m"});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.err.find(absl::StrCat("ops already holds ", lock, " (token ",
                                        token, ")")),
            std::string::npos)
      << again.err;
  // The reason stays the server's.
  ProcessResult json =
      RunCtl({"-o", "json", "acquire", lock, "--client", "ops", "--ttl", "1m"});
  EXPECT_EQ(nlohmann::json::parse(json.err)["error"]["reason"], "CLIENT_BUSY");
}

TEST_F(CtlTest, TlsCtlAgainstAPlaintextPortSaysSo) {
  absl::StatusOr<security::testing::TestPki> pki =
      security::testing::TestPki::Create(::testing::TempDir());
  ASSERT_TRUE(pki.ok()) << pki.status();
  ProcessResult result =
      RunCtl({"inspect", LockName(), "--ca", pki->ca_cert_file()});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find(absl::StrCat(server().address(),
                                         " speaks plaintext but this call "
                                         "used TLS")),
            std::string::npos)
      << result.err;
  EXPECT_EQ(result.err.find("E1"), std::string::npos)
      << "no gRPC log lines: " << result.err;
}

// A leasekeeperd under mutual TLS (no policy: every certificate the CA
// signed may use every lock), with one client certificate.
class CtlMutualTlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<security::testing::TestPki> pki =
        security::testing::TestPki::Create(::testing::TempDir());
    ASSERT_TRUE(pki.ok()) << pki.status();
    pki_ = new security::testing::TestPki(*std::move(pki));
    absl::StatusOr<security::testing::KeyPair> worker =
        pki_->IssueClient("worker", "billing-worker");
    ASSERT_TRUE(worker.ok()) << worker.status();
    worker_ = new security::testing::KeyPair(*std::move(worker));
    LocalServerOptions options;
    options.extra_flags = {"--tls-cert=" + pki_->server().cert_file,
                           "--tls-key=" + pki_->server().key_file,
                           "--client-ca=" + pki_->ca_cert_file()};
    absl::StatusOr<std::unique_ptr<LocalServer>> started =
        LocalServer::Start(options);
    ASSERT_TRUE(started.ok()) << started.status();
    server_ = std::move(*started).release();
  }
  static void TearDownTestSuite() {
    delete server_;
    delete worker_;
    delete pki_;
  }
  void SetUp() override { ASSERT_NE(server_, nullptr); }

  // The TLS flags as environment variables, and the server.
  static std::vector<std::pair<std::string, std::string>> TlsEnvironment() {
    return {{"LEASEKEEPER_SERVER", server_->address()},
            {"LEASEKEEPER_CA", pki_->ca_cert_file()},
            {"LEASEKEEPER_CERT", worker_->cert_file},
            {"LEASEKEEPER_KEY", worker_->key_file}};
  }

  static inline security::testing::TestPki* pki_ = nullptr;
  static inline security::testing::KeyPair* worker_ = nullptr;
  static inline LocalServer* server_ = nullptr;
};

TEST_F(CtlMutualTlsTest, RunDerivesItsClientIdFromTheCertificate) {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  ProcessResult result =
      RunProcess({Ctl(), "run", "billing/nightly", "--", "/bin/sh", "-c",
                  "echo $LEASEKEEPER_CLIENT_ID"},
                 TlsEnvironment());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(
      absl::StartsWith(result.out, absl::StrCat("billing-worker/", host, "/")))
      << result.out;
}

TEST_F(CtlMutualTlsTest, RunPassesTheTlsFlagsOnToTheJob) {
  // The job's own leasekeeper-ctl reaches the server with no flags at all:
  // only LEASEKEEPER_SERVER/_CA/_CERT/_KEY from run.
  ProcessResult result =
      RunProcess({Ctl(), "--server", server_->address(), "--ca",
                  pki_->ca_cert_file(), "--cert", worker_->cert_file, "--key",
                  worker_->key_file, "run", "billing/tls-env", "--", Ctl(),
                  "-o", "json", "inspect", "billing/tls-env"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  nlohmann::json json = nlohmann::json::parse(result.out);
  ASSERT_EQ(json["holders"].size(), 1u) << result.out;
  EXPECT_TRUE(absl::StartsWith(std::string(json["holders"][0]["client"]),
                               "billing-worker/"));
}

TEST_F(CtlMutualTlsTest,
       RunWithAClientIdNotOfTheCertificateSaysPermissionDenied) {
  ProcessResult result = RunProcess({Ctl(), "run", "billing/foreign",
                                     "--client", "someone-else", "--", "true"},
                                    TlsEnvironment());
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("PERMISSION_DENIED"), std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("billing-worker"), std::string::npos)
      << "names the certificate's identity: " << result.err;
}

TEST_F(CtlMutualTlsTest, PlaintextCtlAgainstATlsPortSaysSo) {
  ProcessResult result =
      RunProcess({Ctl(), "inspect", "billing/x", "--timeout", "3s"},
                 {{"LEASEKEEPER_SERVER", server_->address()}});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find(absl::StrCat(server_->address(),
                                         " speaks TLS but this call was "
                                         "plaintext")),
            std::string::npos)
      << result.err;
}

TEST_F(CtlMutualTlsTest, PlaintextCtlAgainstAListOfTlsPortsSaysSo) {
  ProcessResult result = RunProcess(
      {Ctl(), "inspect", "billing/x", "--timeout", "3s"},
      {{"LEASEKEEPER_SERVER",
        absl::StrCat(server_->address(), ",", server_->address())}});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find(absl::StrCat(server_->address(),
                                         " speaks TLS but this call was "
                                         "plaintext")),
            std::string::npos)
      << result.err;
}

TEST_F(CtlMutualTlsTest, VersionWorksOverMutualTls) {
  ProcessResult result =
      RunProcess({Ctl(), "version", "-o", "json"}, TlsEnvironment());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_FALSE(nlohmann::json::parse(result.out)["server"].is_null());
}

// One Inspect page holds at most the server's default of 1,000 holders and
// waiters: inspect follows the pages and prints every holder once, by
// token, then the whole queue by position.
TEST_F(CtlTest, InspectPrintsEveryHolderAndWaiterAcrossPages) {
  const std::string lock = LockName();
  constexpr int kHolders = 1'200;
  for (int i = 0; i < kHolders; ++i) {
    AcquireCall call;
    call.client_id = absl::StrCat("reader-", i);
    call.lock = lock;
    call.ttl = absl::Minutes(5);
    call.mode = LockMode::kShared;
    ASSERT_TRUE(rpc().Acquire(call).ok()) << i;
  }
  for (int i = 0; i < 3; ++i) {
    AcquireCall call;
    call.client_id = absl::StrCat("writer-", i);
    call.lock = lock;
    call.ttl = absl::Minutes(5);
    ASSERT_TRUE(rpc().Acquire(call).ok()) << i;
  }
  ProcessResult inspected = RunCtl({"inspect", lock, "-o", "json"});
  ASSERT_EQ(inspected.exit_code, 0) << inspected.err;
  nlohmann::json info = nlohmann::json::parse(inspected.out);
  ASSERT_EQ(info["holders"].size(), static_cast<size_t>(kHolders));
  for (int i = 0; i < kHolders; ++i) {
    EXPECT_EQ(info["holders"][i]["client"], absl::StrCat("reader-", i)) << i;
  }
  ASSERT_EQ(info["queue"].size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(info["queue"][i]["client"], absl::StrCat("writer-", i));
    EXPECT_EQ(info["queue"][i]["position"], i + 1);
  }
  ProcessResult table = RunCtl({"inspect", lock});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find(absl::StrCat("reader-", kHolders - 1)),
            std::string::npos);
}

AcquireCall Call(const std::string& client, const std::string& lock) {
  AcquireCall call;
  call.client_id = client;
  call.lock = lock;
  call.ttl = absl::Seconds(30);
  return call;
}

TEST_F(CtlTest, WatchPrintsTheStateThenEachChangeAsLines) {
  const std::string lock = LockName();
  ASSERT_TRUE(rpc().Acquire(Call("first", lock)).ok());
  absl::StatusOr<Subprocess> watch = StartCtl({"watch", lock, "--count", "3"});
  ASSERT_TRUE(watch.ok()) << watch.status();
  ASSERT_TRUE(watch->WaitForLine("synced", absl::Seconds(10)).has_value());
  ASSERT_TRUE(rpc().Acquire(Call("second", lock)).ok());  // queued
  ASSERT_TRUE(rpc().Release(ReleaseCall{"first", lock, "", ""}).ok());
  ProcessResult done = watch->Wait(absl::Seconds(10));
  ASSERT_EQ(done.exit_code, 0) << done.err;
  std::vector<std::string> lines =
      absl::StrSplit(done.out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 5u) << done.out;
  EXPECT_TRUE(absl::StartsWith(
      lines[0], absl::StrCat("current ", lock, " holder first exclusive "
                             "token=1 expires_in=")))
      << lines[0];
  EXPECT_TRUE(absl::StartsWith(lines[1], "synced sequence=")) << lines[1];
  EXPECT_TRUE(absl::StrContains(lines[1], "locks=1")) << lines[1];
  // TIME #SEQ KIND LOCK CLIENT MODE [token=T] [ttl=D]
  EXPECT_TRUE(absl::StrContains(
      lines[2], absl::StrCat(" queued ", lock, " second exclusive ttl=30s")))
      << lines[2];
  EXPECT_TRUE(absl::StrContains(
      lines[3], absl::StrCat(" released ", lock, " first exclusive token=1")))
      << lines[3];
  EXPECT_TRUE(absl::StrContains(
      lines[4],
      absl::StrCat(" granted ", lock, " second exclusive token=2 ttl=30s")))
      << lines[4];
}

TEST_F(CtlTest, WatchWithJsonPrintsOneObjectPerLineForAPrefix) {
  const std::string prefix = LockName();
  absl::StatusOr<Subprocess> watch =
      StartCtl({"-o", "json", "watch", "--prefix", prefix, "--count", "2"});
  ASSERT_TRUE(watch.ok()) << watch.status();
  ASSERT_TRUE(watch->WaitForLine("synced", absl::Seconds(10)).has_value());
  ASSERT_TRUE(rpc().Acquire(Call("job", prefix + "/a")).ok());
  ASSERT_TRUE(rpc().Acquire(Call("job", "elsewhere-" + prefix)).ok());
  ASSERT_TRUE(rpc().Release(ReleaseCall{"job", prefix + "/a", "", ""}).ok());
  ProcessResult done = watch->Wait(absl::Seconds(10));
  ASSERT_EQ(done.exit_code, 0) << done.err;
  std::vector<std::string> lines =
      absl::StrSplit(done.out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 3u) << done.out;
  nlohmann::json synced = nlohmann::json::parse(lines[0]);
  EXPECT_EQ(synced["synced"]["locks"], 0);
  nlohmann::json granted = nlohmann::json::parse(lines[1])["event"];
  EXPECT_EQ(granted["kind"], "granted");
  EXPECT_EQ(granted["lock"], prefix + "/a");
  EXPECT_EQ(granted["client"], "job");
  EXPECT_EQ(granted["mode"], "exclusive");
  EXPECT_EQ(granted["ttl_ms"], 30'000);
  EXPECT_TRUE(granted["time"].is_string());
  nlohmann::json released = nlohmann::json::parse(lines[2])["event"];
  EXPECT_EQ(released["kind"], "released");
  EXPECT_EQ(released["token"], granted["token"]);
  EXPECT_GT(released["sequence"], granted["sequence"]);
}

TEST_F(CtlTest, WatchTakesExactlyOneOfALockAndAPrefix) {
  ProcessResult none = RunCtl({"watch"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_TRUE(absl::StrContains(
      none.err, "watch: takes exactly one of LOCK and --prefix P"))
      << none.err;
  ProcessResult both = RunCtl({"watch", "L", "--prefix", "p/"});
  EXPECT_EQ(both.exit_code, 2);
  ProcessResult help = RunCtl({"watch", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_TRUE(absl::StrContains(help.out, "--prefix")) << help.out;
  EXPECT_TRUE(absl::StrContains(help.out, "--count")) << help.out;
}

}  // namespace
}  // namespace leasekeeper::client::testing
