// leasekeeper-ctl's command line: every command's shape, flags anywhere,
// and the usage errors that make it exit 2.
#include "client/ctl/arguments.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace leasekeeper::ctl {
namespace {

absl::StatusOr<Invocation> Parse(
    std::vector<std::string> args,
    std::optional<std::string> env_server = std::nullopt) {
  return ParseArguments(args, env_server);
}

TEST(ArgumentsTest, AcquireTakesLockClientTtlSharedWaitAndLabel) {
  absl::StatusOr<Invocation> in =
      Parse({"acquire", "exports/daily", "--client", "etl-a", "--ttl=30s",
             "--shared", "--wait", "5m", "--label", "pod-7"});
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_EQ(in->command, Command::kAcquire);
  EXPECT_EQ(in->lock, "exports/daily");
  EXPECT_EQ(in->client_id, "etl-a");
  EXPECT_EQ(*in->ttl, absl::Seconds(30));
  EXPECT_TRUE(in->shared);
  EXPECT_EQ(*in->wait, absl::Minutes(5));
  EXPECT_EQ(in->label, "pod-7");
}

TEST(ArgumentsTest, FlagsMayComeBeforeTheCommand) {
  absl::StatusOr<Invocation> in = Parse({"--server", "locks:7233", "-o", "json",
                                         "release", "L", "--client", "c"});
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_EQ(in->command, Command::kRelease);
  EXPECT_EQ(in->server, "locks:7233");
  EXPECT_EQ(in->output, OutputFormat::kJson);
}

TEST(ArgumentsTest, ServerComesFromTheFlagThenTheEnvironmentThenTheDefault) {
  EXPECT_EQ(Parse({"inspect", "L", "--server=a:1"}, "b:2")->server, "a:1");
  EXPECT_EQ(Parse({"inspect", "L"}, "b:2")->server, "b:2");
  EXPECT_EQ(Parse({"inspect", "L"})->server, kDefaultServer);
  EXPECT_EQ(Parse({"inspect", "L"}, "")->server, kDefaultServer);
}

TEST(ArgumentsTest, EveryCommandParses) {
  struct Case {
    std::vector<std::string> args;
    Command command;
  } cases[] = {
      {{"renew", "L", "--client", "c", "--ttl", "1m"}, Command::kRenew},
      {{"write", "L", "k", "v", "--token", "7"}, Command::kWrite},
      {{"read", "L", "k"}, Command::kRead},
      {{"inspect", "L"}, Command::kInspect},
      {{"status", "c"}, Command::kStatus},
      {{"locks"}, Command::kLocks},
      {{"locks", "--prefix", "exports/"}, Command::kLocks},
      {{"run", "L", "--", "true"}, Command::kRun},
      {{"help"}, Command::kHelp},
      {{}, Command::kHelp},
      {{"inspect", "L", "--help"}, Command::kHelp},
      {{"-h"}, Command::kHelp},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Invocation> in = Parse(c.args);
    ASSERT_TRUE(in.ok()) << in.status();
    EXPECT_EQ(in->command, c.command);
  }
}

TEST(ArgumentsTest, WriteKeepsItsValueAndToken) {
  absl::StatusOr<Invocation> in = Parse({"write", "L", "part-1", "rows 1-100",
                                         "--token", "18446744073709551615"});
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_EQ(in->key, "part-1");
  EXPECT_EQ(in->value, "rows 1-100");
  EXPECT_EQ(in->token, 18446744073709551615ull);
}

TEST(ArgumentsTest, AValueStartingWithADashGoesAfterDoubleDash) {
  absl::StatusOr<Invocation> in =
      Parse({"write", "L", "k", "--token", "2", "--", "-5"});
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_EQ(in->value, "-5");
}

TEST(ArgumentsTest, RunTakesEverythingAfterDoubleDashAsTheCommand) {
  absl::StatusOr<Invocation> in =
      Parse({"run", "L", "--try", "--ttl", "10s", "--", "sh", "-c",
             "echo --ttl", "--shared"});
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_EQ(in->command_line,
            (std::vector<std::string>{"sh", "-c", "echo --ttl", "--shared"}));
  EXPECT_TRUE(in->try_only);
  EXPECT_FALSE(in->shared);
  EXPECT_EQ(*in->ttl, absl::Seconds(10));
}

TEST(ArgumentsTest, RunDefaultsToA30SecondLeaseAndWaitingForever) {
  absl::StatusOr<Invocation> in = Parse({"run", "L", "--", "true"});
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_EQ(*in->ttl, absl::Seconds(30));
  EXPECT_FALSE(in->wait.has_value());
  EXPECT_EQ(in->kill_grace, absl::Seconds(10));
}

TEST(ArgumentsTest, UsageErrorsSayWhatIsWrong) {
  struct Case {
    std::vector<std::string> args;
    const char* problem;
  } cases[] = {
      {{"frobnicate"}, "unknown command"},
      {{"inspect", "L", "--bogus"}, "unknown flag --bogus"},
      {{"inspect", "L", "-x"}, "unknown flag -x"},
      {{"acquire", "L", "--ttl", "1s"}, "needs --client"},
      {{"acquire", "L", "--client", "c"}, "needs --ttl"},
      {{"renew", "L", "--client", "c"}, "needs --ttl"},
      {{"release", "L"}, "needs --client"},
      {{"write", "L", "k", "v"}, "needs --token"},
      {{"write", "L", "k", "v", "--token", "0"}, "--token"},
      {{"write", "L", "k", "v", "--token", "x"}, "--token"},
      {{"acquire", "L", "--client", "c", "--ttl", "30"}, "invalid duration"},
      {{"acquire", "L", "--client", "c", "--ttl", "0s"}, "outside"},
      {{"acquire", "L", "--client", "c", "--ttl", "25h"}, "outside"},
      {{"acquire", "L", "--client", "c", "--ttl", "1s", "--try"},
       "does not take --try"},
      {{"inspect", "L", "--token", "3"}, "does not take --token"},
      {{"run", "L", "--try", "--wait", "1s", "--", "true"}, "exclude"},
      {{"run", "L"}, "needs a command after --"},
      {{"run", "L", "--"}, "needs a command after --"},
      {{"inspect"}, "missing arguments"},
      {{"inspect", "L", "M"}, "unexpected arguments"},
      {{"read", "L"}, "missing arguments"},
      {{"inspect", ""}, "must not be empty"},
      {{"inspect", "L", "-o", "yaml"}, "table or json"},
      {{"inspect", "L", "--server"}, "needs a value"},
      {{"inspect", "L", "--tls=yes"}, "takes no value"},
      {{"inspect", "L", "-o", "json", "-o", "table"}, "given twice"},
      {{"inspect", "L", "--cert", "c.pem"}, "--cert and --key"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Invocation> in = Parse(c.args);
    ASSERT_FALSE(in.ok()) << "accepted: " << testing::PrintToString(c.args);
    EXPECT_EQ(in.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(in.status().message().find(c.problem), absl::string_view::npos)
        << "for " << testing::PrintToString(c.args) << " got \""
        << in.status().message() << "\", want \"" << c.problem << "\"";
  }
}

TEST(ArgumentsTest, TlsFlagsImplyTls) {
  absl::StatusOr<Invocation> in = Parse({"locks", "--ca", "roots.pem"});
  ASSERT_TRUE(in.ok()) << in.status();
  EXPECT_TRUE(in->tls);
  EXPECT_EQ(in->tls_ca_file, "roots.pem");
  EXPECT_FALSE(Parse({"locks"})->tls);
}

TEST(ArgumentsTest, UsageDocumentsTheExitCodes) {
  const std::string usage = Usage();
  for (const char* line :
       {"0   success", "1   error", "2   usage", "75  lock busy"}) {
    EXPECT_NE(usage.find(line), std::string::npos) << line;
  }
}

}  // namespace
}  // namespace leasekeeper::ctl
