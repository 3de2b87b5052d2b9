// leasekeeper-ctl's command line: every command's shape, where flags may
// go, the environment variables, per-command help, and the usage errors
// that make it exit 2 (each naming its command).
#include "client/ctl/arguments.h"

#include <stdlib.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace leasekeeper::ctl {
namespace {

using Action = ParsedArguments::Action;

// Parses `args`; fails the test unless they are accepted.
Invocation Accepted(const std::vector<std::string>& args) {
  ParsedArguments parsed = ParseArguments(args);
  EXPECT_EQ(parsed.action, Action::kExecute)
      << testing::PrintToString(args) << ":\n"
      << parsed.text;
  return parsed.invocation;
}

// Sets an environment variable for the scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    setenv(name, value, 1);
  }
  ~ScopedEnv() { unsetenv(name_); }

 private:
  const char* name_;
};

TEST(ArgumentsTest, AcquireTakesLockClientTtlSharedWaitAndLabel) {
  Invocation in =
      Accepted({"acquire", "exports/daily", "--client", "etl-a", "--ttl=30s",
                "--shared", "--wait", "5m", "--label", "pod-7"});
  EXPECT_EQ(in.command, Command::kAcquire);
  EXPECT_EQ(in.lock, "exports/daily");
  EXPECT_EQ(in.client_id, "etl-a");
  EXPECT_EQ(*in.ttl, absl::Seconds(30));
  EXPECT_TRUE(in.shared);
  EXPECT_EQ(*in.wait, absl::Minutes(5));
  EXPECT_EQ(in.label, "pod-7");
}

TEST(ArgumentsTest, ClusterStatusIsACommandAndOtherActionsAreUsageErrors) {
  Invocation in = Accepted({"cluster", "status", "-o", "json"});
  EXPECT_EQ(in.command, Command::kClusterStatus);
  EXPECT_EQ(in.output, OutputFormat::kJson);
  ParsedArguments bad = ParseArguments({"cluster", "elect"});
  EXPECT_EQ(bad.action, ParsedArguments::Action::kUsageError);
  EXPECT_NE(bad.text.find("leasekeeper-ctl cluster:"), std::string::npos)
      << bad.text;
  EXPECT_EQ(ParseArguments({"cluster"}).action,
            ParsedArguments::Action::kUsageError);
}

TEST(ArgumentsTest, PartitionOfTakesAKeyACountAndTheScheme) {
  Invocation in = Accepted({"partition-of", "shard/7", "--count", "64"});
  EXPECT_EQ(in.command, Command::kPartitionOf);
  EXPECT_EQ(in.key, "shard/7");
  EXPECT_EQ(in.partitions, 64u);
  EXPECT_FALSE(in.consistent);
  EXPECT_TRUE(
      Accepted({"partition-of", "k", "--count=3", "--consistent"}).consistent);
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"partition-of", "k"},
        std::vector<std::string>{"partition-of", "k", "--count", "0"},
        std::vector<std::string>{"partition-of", "k", "--count", "2147483648"},
        std::vector<std::string>{"partition-of", "--count", "4"}}) {
    EXPECT_EQ(ParseArguments(bad).action, Action::kUsageError)
        << testing::PrintToString(bad);
  }
}

TEST(ArgumentsTest, ServerTakesAListOfEndpointsFromTheFlagOrTheEnvironment) {
  EXPECT_EQ(Accepted({"--server", "a:1,b:1,c:1", "inspect", "L"}).server,
            "a:1,b:1,c:1");
  EXPECT_EQ(Accepted({"--server", "[::1]:7233,dns:///locks.svc:7233",
                      "inspect", "L"})
                .server,
            "[::1]:7233,dns:///locks.svc:7233");
  ScopedEnv env("LEASEKEEPER_SERVER", "x:1,y:1");
  EXPECT_EQ(Accepted({"inspect", "L"}).server, "x:1,y:1");
}

TEST(ArgumentsTest, GlobalFlagsMayComeBeforeOrAfterTheCommand) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--server", "locks:7233", "-o", "json",
                                 "release", "L", "--client", "c"},
        std::vector<std::string>{"release", "L", "--client", "c",
                                 "--server=locks:7233", "--output", "json"}}) {
    Invocation in = Accepted(args);
    EXPECT_EQ(in.command, Command::kRelease);
    EXPECT_EQ(in.server, "locks:7233");
    EXPECT_EQ(in.output, OutputFormat::kJson);
  }
}

TEST(ArgumentsTest, EveryGlobalFlagFallsBackToItsEnvironmentVariable) {
  ScopedEnv server("LEASEKEEPER_SERVER", "b:2");
  ScopedEnv output("LEASEKEEPER_OUTPUT", "json");
  ScopedEnv timeout("LEASEKEEPER_TIMEOUT", "3s");
  ScopedEnv ca("LEASEKEEPER_CA", "roots.pem");
  ScopedEnv cert("LEASEKEEPER_CERT", "me.crt");
  ScopedEnv key("LEASEKEEPER_KEY", "me.key");
  ScopedEnv name("LEASEKEEPER_TLS_SERVER_NAME", "locks.internal");
  ScopedEnv client("LEASEKEEPER_CLIENT", "ops");
  Invocation in = Accepted({"release", "L"});
  EXPECT_EQ(in.server, "b:2");
  EXPECT_EQ(in.output, OutputFormat::kJson);
  EXPECT_EQ(in.timeout, absl::Seconds(3));
  EXPECT_TRUE(in.tls);
  EXPECT_EQ(in.tls_ca_file, "roots.pem");
  EXPECT_EQ(in.tls_cert_file, "me.crt");
  EXPECT_EQ(in.tls_key_file, "me.key");
  EXPECT_EQ(in.tls_server_name, "locks.internal");
  EXPECT_EQ(in.client_id, "ops");
}

TEST(ArgumentsTest, AFlagWinsOverItsEnvironmentVariableAndEmptyIsUnset) {
  {
    ScopedEnv server("LEASEKEEPER_SERVER", "b:2");
    EXPECT_EQ(Accepted({"inspect", "L", "--server=a:1"}).server, "a:1");
  }
  {
    ScopedEnv client("LEASEKEEPER_CLIENT", "theirs");
    EXPECT_EQ(Accepted({"release", "L", "--client", "mine"}).client_id, "mine");
  }
  {
    ScopedEnv server("LEASEKEEPER_SERVER", "");
    EXPECT_EQ(Accepted({"inspect", "L"}).server, kDefaultServer);
  }
  EXPECT_EQ(Accepted({"inspect", "L"}).server, kDefaultServer);
  EXPECT_FALSE(Accepted({"inspect", "L"}).tls);
}

TEST(ArgumentsTest, TlsEnvironmentVariableTurnsTlsOn) {
  ScopedEnv tls("LEASEKEEPER_TLS", "1");
  EXPECT_TRUE(Accepted({"locks"}).tls);
}

TEST(ArgumentsTest, BadEnvironmentValuesAreUsageErrorsNamingTheFlag) {
  ScopedEnv timeout("LEASEKEEPER_TIMEOUT", "soon");
  ParsedArguments parsed = ParseArguments({"locks"});
  EXPECT_EQ(parsed.action, Action::kUsageError);
  EXPECT_NE(parsed.text.find("--timeout: invalid duration \"soon\""),
            std::string::npos)
      << parsed.text;
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
      {{"force-release", "L", "--reason", "why"}, Command::kForceRelease},
      {{"version"}, Command::kVersion},
      {{"health"}, Command::kHealth},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(Accepted(c.args).command, c.command)
        << testing::PrintToString(c.args);
  }
}

TEST(ArgumentsTest, WriteKeepsItsValueAndToken) {
  Invocation in = Accepted({"write", "L", "part-1", "rows 1-100", "--token",
                            "18446744073709551615"});
  EXPECT_EQ(in.key, "part-1");
  EXPECT_EQ(in.value, "rows 1-100");
  EXPECT_EQ(in.token, 18446744073709551615ull);
}

TEST(ArgumentsTest, DeleteAndKeysTakeTheirArgumentsAndFlags) {
  Invocation del = Accepted({"delete", "L", "part-1", "--token", "9",
                             "--client", "etl-a"});
  EXPECT_EQ(del.command, Command::kDelete);
  EXPECT_EQ(del.lock, "L");
  EXPECT_EQ(del.key, "part-1");
  EXPECT_EQ(del.token, 9u);
  EXPECT_EQ(del.client_id, "etl-a");
  Invocation keys = Accepted({"keys", "L", "--after", "part-1", "--limit", "5"});
  EXPECT_EQ(keys.command, Command::kKeys);
  EXPECT_EQ(keys.after, "part-1");
  EXPECT_EQ(keys.limit, 5);
  Invocation first = Accepted({"keys", "L"});
  EXPECT_EQ(first.after, "");
  EXPECT_EQ(first.limit, 0) << "the server's default";
}

TEST(ArgumentsTest, DeleteAndKeysRefuseWhatTheServerWould) {
  const struct {
    std::vector<std::string> args;
    const char* problem;
  } cases[] = {
      {{"delete", "L", "k"}, "delete: --token is required"},
      {{"delete", "L", "k", "--token", "0"}, "--token: must be a whole"},
      {{"delete", "L"}, "delete: "},
      {{"delete", "L", "k", "v", "--token", "1"}, "delete: "},
      {{"keys"}, "keys: "},
      {{"keys", "L", "--limit", "0"}, "--limit"},
      {{"keys", "L", "--limit", "1001"}, "--limit"},
      {{"keys", "L", "--token", "1"}, "keys: "},
  };
  for (const auto& c : cases) {
    ParsedArguments parsed = ParseArguments(c.args);
    EXPECT_EQ(parsed.action, Action::kUsageError)
        << testing::PrintToString(c.args);
    EXPECT_NE(parsed.text.find(c.problem), std::string::npos)
        << testing::PrintToString(c.args) << "\n" << parsed.text;
  }
}

TEST(ArgumentsTest, AValueStartingWithADashGoesAfterDoubleDash) {
  EXPECT_EQ(Accepted({"write", "L", "k", "--token", "2", "--", "-5"}).value,
            "-5");
}

TEST(ArgumentsTest, RunTakesEverythingAfterDoubleDashAsTheCommand) {
  Invocation in = Accepted({"run", "L", "--try", "--ttl", "10s", "--", "sh",
                            "-c", "echo --ttl", "--shared"});
  EXPECT_EQ(in.command_line,
            (std::vector<std::string>{"sh", "-c", "echo --ttl", "--shared"}));
  EXPECT_TRUE(in.try_only);
  EXPECT_FALSE(in.shared);
  EXPECT_EQ(*in.ttl, absl::Seconds(10));
}

TEST(ArgumentsTest, RunAndAcquireTakeOneOfNPermitsWithSemaphore) {
  Invocation run = Accepted({"run", "encoders", "--semaphore", "4", "--",
                             "./encode.sh"});
  EXPECT_EQ(run.semaphore, 4u);
  EXPECT_FALSE(run.shared);
  Invocation acquire = Accepted({"acquire", "encoders", "--client", "c",
                                 "--ttl", "1s", "--semaphore=65535"});
  EXPECT_EQ(acquire.semaphore, 65535u);
  EXPECT_EQ(Accepted({"run", "L", "--", "true"}).semaphore, 0u);
}

TEST(ArgumentsTest, SemaphoreOutsideItsRangeOrWithSharedIsAUsageError) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"run", "L", "--semaphore", "0", "--", "true"},
        std::vector<std::string>{"run", "L", "--semaphore", "65536", "--",
                                 "true"},
        std::vector<std::string>{"run", "L", "--semaphore", "x", "--", "true"},
        std::vector<std::string>{"run", "L", "--semaphore", "2", "--shared",
                                 "--", "true"}}) {
    ParsedArguments parsed = ParseArguments(args);
    EXPECT_EQ(parsed.action, Action::kUsageError)
        << testing::PrintToString(args);
    EXPECT_NE(parsed.text.find("--semaphore"), std::string::npos)
        << parsed.text;
  }
}

TEST(ArgumentsTest, RunDefaultsToA30SecondLeaseAndWaitingForever) {
  Invocation in = Accepted({"run", "L", "--", "true"});
  EXPECT_EQ(*in.ttl, absl::Seconds(30));
  EXPECT_FALSE(in.wait.has_value());
  EXPECT_EQ(in.kill_grace, absl::Seconds(10));
  EXPECT_TRUE(in.client_id.empty());
}

TEST(ArgumentsTest, UsageErrorsNameTheCommandAndSayWhatIsWrong) {
  struct Case {
    std::vector<std::string> args;
    const char* problem;
  } cases[] = {
      {{"frobnicate"}, "leasekeeper-ctl: unknown command \"frobnicate\""},
      {{"inspect", "L", "--bogus"}, "leasekeeper-ctl inspect: "},
      {{"inspect", "L", "--bogus"}, "--bogus"},
      {{"acquire", "L", "--ttl", "1s"}, "acquire: --client is required"},
      {{"acquire", "L", "--client", "c"}, "acquire: --ttl is required"},
      {{"renew", "L", "--client", "c"}, "renew: --ttl is required"},
      {{"release", "L"}, "release: --client is required"},
      {{"write", "L", "k", "v"}, "write: --token is required"},
      {{"write", "L", "k", "v", "--token", "0"}, "--token: must be a whole"},
      {{"write", "L", "k", "v", "--token", "x"}, "--token: must be a whole"},
      {{"watch", "L", "--count", "0"}, "--count: must be a whole"},
      {{"watch", "L", "--count", "x"}, "--count: must be a whole"},
      {{"acquire", "L", "--client", "c", "--ttl", "30"},
       "acquire: --ttl: invalid duration \"30\""},
      {{"acquire", "L", "--client", "c", "--ttl", "0s"}, "outside 1ms..24h"},
      {{"acquire", "L", "--client", "c", "--ttl", "25h"}, "outside"},
      {{"acquire", "L", "--client", "c", "--ttl", "1s", "--try"}, "acquire: "},
      {{"inspect", "L", "--token", "3"}, "inspect: "},
      {{"run", "L", "--try", "--wait", "1s", "--", "true"}, "excludes"},
      {{"run", "L"}, "run: needs a command after --"},
      {{"run", "L", "--"}, "run: needs a command after --"},
      {{"run", "L", "true"}, "run: needs a command after --"},
      {{"inspect"}, "inspect: LOCK is required"},
      {{"inspect", "L", "M"}, "inspect: "},
      {{"read", "L"}, "read: KEY is required"},
      {{"inspect", ""}, "must not be empty"},
      {{"release", "L", "--client", ""}, "--client: must not be empty"},
      {{"inspect", "L", "-o", "yaml"}, "must be table or json, not \"yaml\""},
      {{"inspect", "L", "--server"}, "--server"},
      {{"inspect", "L", "-o", "json", "-o", "table"}, "inspect: "},
      {{"inspect", "L", "--cert", "c.pem"}, "--cert requires --key"},
      {{"acquire", "L", "--client", "c", "--ttl", "1s", "--label",
        std::string(client::kMaxHolderLabelBytes + 1, 'x')},
       "--label: longer than"},
  };
  for (const Case& c : cases) {
    ParsedArguments parsed = ParseArguments(c.args);
    ASSERT_EQ(parsed.action, Action::kUsageError)
        << "accepted: " << testing::PrintToString(c.args);
    EXPECT_NE(parsed.text.find(c.problem), std::string::npos)
        << "for " << testing::PrintToString(c.args) << " got \"" << parsed.text
        << "\", want \"" << c.problem << "\"";
  }
}

TEST(ArgumentsTest, AUsageErrorIsTheProblemAndWhereToReadTheUsage) {
  ParsedArguments parsed = ParseArguments({"renew", "L", "--client", "c"});
  ASSERT_EQ(parsed.action, Action::kUsageError);
  EXPECT_EQ(parsed.text,
            "leasekeeper-ctl renew: --ttl is required\n"
            "run 'leasekeeper-ctl renew --help' for its usage\n");
  parsed = ParseArguments({"frobnicate"});
  EXPECT_EQ(parsed.text,
            "leasekeeper-ctl: unknown command \"frobnicate\"\n"
            "run 'leasekeeper-ctl --help' for its usage\n");
}

TEST(ArgumentsTest, UnderJsonEveryUsageErrorIsOneJsonObjectWithAUsageHint) {
  struct Case {
    std::vector<std::string> args;
    const char* message;
    const char* usage;
  } cases[] = {
      {{"-o", "json", "acquire", "L", "--client", "c", "--ttl", "10x"},
       "--ttl: invalid duration \"10x\" (use e.g. 500ms, 30s, 5m, 1h)",
       "leasekeeper-ctl acquire --help"},
      // -o after the problem, and -o=json / -ojson spellings.
      {{"acquire", "L", "--ttl", "1m", "--output=json"},
       "--client is required", "leasekeeper-ctl acquire --help"},
      {{"inspect", "-ojson"}, "LOCK is required",
       "leasekeeper-ctl inspect --help"},
      {{"-o", "json", "inspect", "L", "--mode", "bogus"},
       "unknown flag --mode (inspect takes only the global flags)",
       "leasekeeper-ctl inspect --help"},
      {{"-o", "json", "frobnicate"}, "unknown command \"frobnicate\"",
       "leasekeeper-ctl --help"},
      {{"-o", "json", "completion", "fish"}, "SHELL: fish not in {bash,zsh}",
       "leasekeeper-ctl completion --help"},
  };
  for (const Case& c : cases) {
    ParsedArguments parsed = ParseArguments(c.args);
    ASSERT_EQ(parsed.action, Action::kUsageError)
        << testing::PrintToString(c.args);
    const nlohmann::json expected = {{"error",
                                      {{"code", "INVALID_ARGUMENT"},
                                       {"reason", nullptr},
                                       {"message", c.message},
                                       {"usage", c.usage}}}};
    EXPECT_EQ(parsed.text, expected.dump() + "\n")
        << testing::PrintToString(c.args);
  }
  ScopedEnv output("LEASEKEEPER_OUTPUT", "json");
  ParsedArguments parsed = ParseArguments({"inspect"});
  EXPECT_EQ(nlohmann::json::parse(parsed.text)["error"]["message"],
            "LOCK is required");
}

TEST(ArgumentsTest, HelpAskedForIsShownEvenWhenAVariableIsBad) {
  ScopedEnv server("LEASEKEEPER_SERVER", "127.0.0.1:99999");
  ScopedEnv timeout("LEASEKEEPER_TIMEOUT", "soon");
  ParsedArguments overview = ParseArguments({"--help"});
  ASSERT_EQ(overview.action, Action::kPrintText) << overview.text;
  EXPECT_EQ(overview.text, OverviewHelp());
  ParsedArguments inspect = ParseArguments({"inspect", "--help"});
  ASSERT_EQ(inspect.action, Action::kPrintText) << inspect.text;
  EXPECT_NE(inspect.text.find("usage: leasekeeper-ctl inspect"),
            std::string::npos)
      << inspect.text;
  EXPECT_EQ(ParseArguments({"inspect", "L"}).action, Action::kUsageError);
}

TEST(ArgumentsTest, AnUnknownFlagIsNamedNotListedBackwardsWithItsValue) {
  ParsedArguments parsed = ParseArguments(
      {"acquire", "L", "--client", "c", "--ttl", "1s", "--mode", "bogus"});
  ASSERT_EQ(parsed.action, Action::kUsageError);
  EXPECT_EQ(parsed.text.find(
                "leasekeeper-ctl acquire: unknown flag --mode (acquire takes "
                "--client, --ttl, --shared, --semaphore, --wait, --label and "
                "the global flags)\n"),
            0u)
      << parsed.text;
  parsed = ParseArguments({"inspect", "L", "M", "N"});
  EXPECT_EQ(parsed.text.find("leasekeeper-ctl inspect: unexpected argument "
                             "\"M\"\n"),
            0u)
      << parsed.text;
}

TEST(ArgumentsTest, AValueOutsideItsChoicesNamesTheValueAndTheChoices) {
  ParsedArguments parsed = ParseArguments({"completion", "fish"});
  ASSERT_EQ(parsed.action, Action::kUsageError);
  EXPECT_EQ(parsed.text,
            "leasekeeper-ctl completion: SHELL: fish not in {bash,zsh}\n"
            "run 'leasekeeper-ctl completion --help' for its usage\n");
  ParsedArguments help = ParseArguments({"completion", "--help"});
  ASSERT_EQ(help.action, Action::kPrintText);
  EXPECT_NE(help.text.find("usage: leasekeeper-ctl completion"),
            std::string::npos)
      << help.text;
  EXPECT_EQ(help.text.find("Commands:"), std::string::npos) << help.text;
}

TEST(ArgumentsTest, AServerAddressGrpcWouldMisreadIsAUsageErrorNamingTheFlag) {
  struct Case {
    const char* server;
    const char* problem;
  } cases[] = {
      {"127.0.0.1:99999",
       "--server: invalid server address \"127.0.0.1:99999\": port out of "
       "range (1-65535)"},
      {"127.0.0.1", "--server: invalid server address \"127.0.0.1\": "
                    "missing port"},
      {"http://127.0.0.1:7233",
       "--server: invalid server address \"http://127.0.0.1:7233\": scheme "
       "not supported; write host:port"},
      {"a:1,b", "--server: invalid server address \"b\": missing port"},
  };
  for (const Case& c : cases) {
    ParsedArguments parsed = ParseArguments({"--server", c.server, "health"});
    ASSERT_EQ(parsed.action, Action::kUsageError) << c.server;
    EXPECT_EQ(parsed.text.find(absl::StrCat("leasekeeper-ctl health: ",
                                            c.problem, "\n")),
              0u)
        << parsed.text;
  }
  ScopedEnv server("LEASEKEEPER_SERVER", "[::1]");
  EXPECT_NE(ParseArguments({"locks"}).text.find(
                "invalid server address \"[::1]\": missing port"),
            std::string::npos);
}

TEST(ArgumentsTest, CommandHelpShowsOnlyThatCommandsFlags) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"write", "--help"},
        std::vector<std::string>{"help", "write"},
        std::vector<std::string>{"write", "L", "-h"}}) {
    ParsedArguments parsed = ParseArguments(args);
    ASSERT_EQ(parsed.action, Action::kPrintText)
        << testing::PrintToString(args);
    EXPECT_NE(parsed.text.find("usage: leasekeeper-ctl write [FLAGS] LOCK KEY "
                               "VALUE"),
              std::string::npos)
        << parsed.text;
    EXPECT_NE(parsed.text.find("--token"), std::string::npos);
    EXPECT_EQ(parsed.text.find("--ttl"), std::string::npos);
    EXPECT_EQ(parsed.text.find("Commands:"), std::string::npos);
  }
}

TEST(ArgumentsTest, OverviewListsCommandsFlagsAndExitCodes) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{}, std::vector<std::string>{"--help"},
        std::vector<std::string>{"help"}}) {
    ParsedArguments parsed = ParseArguments(args);
    ASSERT_EQ(parsed.action, Action::kPrintText);
    EXPECT_EQ(parsed.text, OverviewHelp());
  }
  const std::string overview = OverviewHelp();
  for (const char* text :
       {"acquire", "renew", "release", "write", "read", "delete", "keys",
        "inspect", "status", "locks", "run", "LEASEKEEPER_SERVER", "LEASEKEEPER_CA",
        "LEASEKEEPER_CERT", "LEASEKEEPER_KEY", "LEASEKEEPER_TLS_SERVER_NAME",
        "0   success", "1   error", "2   usage", "75  lock busy"}) {
    EXPECT_NE(overview.find(text), std::string::npos) << text;
  }
}

TEST(ArgumentsTest, ForceReleaseTakesHolderAndReasonButNotLeasekeeperClient) {
  ScopedEnv client("LEASEKEEPER_CLIENT", "ops");
  Invocation in = Accepted(
      {"force-release", "L", "--holder", "etl-a", "--reason", "INC-1"});
  EXPECT_EQ(in.holder, "etl-a");
  EXPECT_EQ(in.reason, "INC-1");
  // The operator's own client id never picks whose lease ends.
  EXPECT_EQ(Accepted({"force-release", "L", "--reason", "x"}).holder, "");
  EXPECT_EQ(ParseArguments({"force-release", "L"}).action, Action::kUsageError);
}

TEST(ArgumentsTest, HealthAsksAboutTheWholeServerUnlessGivenAService) {
  EXPECT_EQ(Accepted({"health"}).service, "");
  EXPECT_EQ(Accepted({"health", "--service", "leasekeeper.v1.LockService"})
                .service,
            "leasekeeper.v1.LockService");
  EXPECT_EQ(ParseArguments({"health", "extra"}).action, Action::kUsageError);
}

TEST(ArgumentsTest, VersionFlagPrintsTheVersionLine) {
  ParsedArguments parsed = ParseArguments({"--version"});
  ASSERT_EQ(parsed.action, Action::kPrintText);
  EXPECT_EQ(parsed.text, VersionLine() + "\n");
  EXPECT_EQ(VersionLine().find("leasekeeper-ctl "), 0u);
}

TEST(ArgumentsTest, CompletionNamesEveryCommandAndRefusesOtherShells) {
  ParsedArguments bash = ParseArguments({"completion", "bash"});
  ASSERT_EQ(bash.action, Action::kPrintText);
  for (const char* word : {"acquire", "force-release", "--kill-grace",
                           "--tls-server-name", "complete -F"}) {
    EXPECT_NE(bash.text.find(word), std::string::npos) << word;
  }
  ParsedArguments zsh = ParseArguments({"completion", "zsh"});
  EXPECT_EQ(zsh.text.find("#compdef leasekeeper-ctl\n"), 0u);
  EXPECT_EQ(ParseArguments({"completion", "fish"}).action, Action::kUsageError);
}

}  // namespace
}  // namespace leasekeeper::ctl
