// leasekeeperd's flags (server/flags.h): names, defaults, refusals that
// name the flag, and the grouped --help text.
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "server/flags.h"

namespace leasekeeper::server {
namespace {

absl::StatusOr<DaemonOptions> Parse(std::vector<std::string> args) {
  std::vector<const char*> argv = {"leasekeeperd"};
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  return ParseDaemonFlags(static_cast<int>(argv.size()), argv.data());
}

constexpr const char* kAddressFlags[] = {"listen", "health-listen",
                                         "metrics-listen"};
constexpr const char* kDurationFlags[] = {
    "session-grace", "session-open-timeout", "retry-cache-ttl",
    "shutdown-grace", "restart-grace"};

TEST(FlagsTest, EveryListenerRefusesAPortAbove65535NamingTheFlag) {
  for (const char* flag : kAddressFlags) {
    for (const char* port : {"70000", "99999", "65536", "123456"}) {
      const std::string arg = absl::StrCat("--", flag, "=127.0.0.1:", port);
      absl::StatusOr<DaemonOptions> options = Parse({arg});
      ASSERT_EQ(options.status().code(), absl::StatusCode::kInvalidArgument)
          << arg;
      EXPECT_EQ(
          options.status().message(),
          absl::StrCat(arg, ": port out of range (0-65535)"));
    }
  }
}

TEST(FlagsTest, EveryListenerRefusesAPortThatIsNotANumber) {
  for (const char* flag : kAddressFlags) {
    for (const char* address : {"127.0.0.1:", "127.0.0.1:-1", "127.0.0.1:7e3",
                                "127.0.0.1:http", ":7233", "localhost"}) {
      const std::string arg = absl::StrCat("--", flag, "=", address);
      absl::StatusOr<DaemonOptions> options = Parse({arg});
      ASSERT_EQ(options.status().code(), absl::StatusCode::kInvalidArgument)
          << arg;
      EXPECT_TRUE(
          absl::StartsWith(options.status().message(), absl::StrCat(arg, ": ")))
          << options.status().message();
    }
  }
}

TEST(FlagsTest, ListenersTakeEveryPortInRange) {
  absl::StatusOr<DaemonOptions> options =
      Parse({"--listen=127.0.0.1:65535", "--health-listen=[::1]:0",
             "--metrics-listen=0.0.0.0:9464"});
  ASSERT_TRUE(options.ok()) << options.status().message();
  EXPECT_EQ(options->config.listen, "127.0.0.1:65535");
  EXPECT_EQ(options->config.health_listen, "[::1]:0");
  EXPECT_EQ(options->config.metrics_listen, "0.0.0.0:9464");
  // The optional listeners are off when empty; the main one is not optional.
  EXPECT_TRUE(Parse({"--metrics-listen="}).ok());
  EXPECT_FALSE(Parse({"--listen="}).ok());
}

TEST(FlagsTest, EveryDurationRefusesANegativeValueNamingTheFlag) {
  for (const char* flag : kDurationFlags) {
    const std::string arg = absl::StrCat("--", flag, "=-1s");
    absl::StatusOr<DaemonOptions> options = Parse({arg});
    ASSERT_EQ(options.status().code(), absl::StatusCode::kInvalidArgument)
        << arg;
    EXPECT_EQ(options.status().message(),
              absl::StrCat(arg, ": must not be negative"));
  }
}

TEST(FlagsTest, DurationsAreWholeMillisecondsWithinTheirBound) {
  EXPECT_EQ(Parse({"--session-grace=1500us"}).status().message(),
            "--session-grace=1500us: must be a whole number of milliseconds");
  EXPECT_EQ(Parse({"--shutdown-grace=5s"}).status().message(),
            "--shutdown-grace=5s: must be at most 4s");
  absl::StatusOr<DaemonOptions> options =
      Parse({"--session-open-timeout", "750ms", "--restart-grace=0"});
  ASSERT_TRUE(options.ok()) << options.status().message();
  EXPECT_EQ(options->config.limits.session_open_timeout_ms, 750);
  EXPECT_EQ(options->config.durability.restart_grace_ms, 0);
}

TEST(FlagsTest, SessionOpenTimeoutDefaultsToTenSeconds) {
  absl::StatusOr<DaemonOptions> options = Parse({});
  ASSERT_TRUE(options.ok());
  EXPECT_EQ(options->config.limits.session_open_timeout_ms, 10'000);
  EXPECT_EQ(options->config.durability.data_dir, "./data");
}

TEST(FlagsTest, BooleanFlagAloneMeansTrue) {
  absl::StatusOr<DaemonOptions> options =
      Parse({"--recover-truncate", "--listen=127.0.0.1:0"});
  ASSERT_TRUE(options.ok()) << options.status().message();
  EXPECT_TRUE(options->config.durability.recover_truncate);
  EXPECT_EQ(options->config.listen, "127.0.0.1:0");
  EXPECT_FALSE(Parse({"--recover-truncate=yes"}).ok());
}

// The help text's lines from `header` up to the next blank line.
std::vector<std::string> Group(const std::string& help,
                               const std::string& header) {
  std::vector<std::string> lines = absl::StrSplit(help, '\n');
  std::vector<std::string> group;
  bool inside = false;
  for (const std::string& line : lines) {
    if (line == header) {
      inside = true;
    } else if (inside && line.empty()) {
      break;
    } else if (inside) {
      group.push_back(line);
    }
  }
  return group;
}

bool GroupHasFlag(const std::vector<std::string>& group,
                  const std::string& flag) {
  for (const std::string& line : group) {
    if (absl::StartsWith(line, absl::StrCat("  --", flag, " ")) ||
        line == absl::StrCat("  --", flag)) {
      return true;
    }
  }
  return false;
}

TEST(FlagsTest, HelpListsEveryFlagUnderItsGroup) {
  const std::string help = DaemonUsage();
  const std::vector<std::pair<std::string, std::vector<std::string>>> groups = {
      {"Serving:",
       {"listen", "health-listen", "metrics-listen", "log-level",
        "shutdown-grace"}},
      {"Leases and sessions:", {"session-grace", "session-open-timeout"}},
      {"Limits (a refusal is RESOURCE_EXHAUSTED naming the flag):",
       {"max-client-id-bytes", "max-lock-name-bytes", "max-key-bytes",
        "max-value-bytes", "max-label-bytes", "max-request-id-bytes",
        "max-waiters-per-lock", "max-sessions", "max-locks-per-client",
        "max-request-bytes"}},
      {"Retried requests:", {"retry-cache-entries", "retry-cache-ttl"}},
      {"Durability:",
       {"data-dir", "fsync", "snapshot-every", "restart-grace",
        "recover-truncate"}},
      {"Security:", {"tls-cert", "tls-key", "client-ca", "policy"}}};
  for (const auto& [header, flags] : groups) {
    const std::vector<std::string> group = Group(help, header);
    ASSERT_FALSE(group.empty()) << header << "\n" << help;
    for (const std::string& flag : flags) {
      EXPECT_TRUE(GroupHasFlag(group, flag)) << flag << " under " << header;
      // Each flag the help shows is one the parser knows.
      EXPECT_NE(Parse({"--" + flag}).status().message(),
                "unknown flag: --" + flag);
    }
  }
  EXPECT_TRUE(absl::StrContains(help, "  --help"));
}

TEST(FlagsTest, HelpShowsTheDefaultsTheParserUses) {
  // Collapses the wrapped text so that a default split over two lines reads
  // as one phrase.
  std::string help = DaemonUsage();
  std::string flat;
  for (absl::string_view word :
       absl::StrSplit(help, absl::ByAnyChar(" \n"), absl::SkipEmpty())) {
    absl::StrAppend(&flat, word, " ");
  }
  for (const char* shown :
       {"127.0.0.1:7233)", "(default info)", "(default 2s)", "(default 10s)",
        "(default 10m)", "(default ./data)", "(default batch)",
        "(default 200000)", "(default 100000)", "(default 1048576)"}) {
    EXPECT_TRUE(absl::StrContains(flat, shown)) << shown;
  }
  // The defaults shown are the parsed ones: each is taken back as a value.
  absl::StatusOr<DaemonOptions> again =
      Parse({"--listen=127.0.0.1:7233", "--session-grace=2s",
             "--session-open-timeout=10s", "--retry-cache-ttl=10m",
             "--fsync=batch", "--data-dir=./data"});
  absl::StatusOr<DaemonOptions> defaults = Parse({});
  ASSERT_TRUE(again.ok() && defaults.ok());
  EXPECT_EQ(again->config.listen, defaults->config.listen);
  EXPECT_EQ(again->config.session_grace_ms, defaults->config.session_grace_ms);
  EXPECT_EQ(again->config.limits.session_open_timeout_ms,
            defaults->config.limits.session_open_timeout_ms);
  EXPECT_EQ(again->config.retry_cache.ttl_ms,
            defaults->config.retry_cache.ttl_ms);
}


TEST(FlagsTest, EtcdEndpointsTakeEtcdsUrlFormsAsWritten) {
  for (const std::string& endpoints : std::vector<std::string>{
           "http://127.0.0.1:2379,http://127.0.0.1:2380",
        "https://etcd.example:2379", "127.0.0.1:2379"}) {
    absl::StatusOr<DaemonOptions> parsed =
        Parse({"--cluster=c1", "--etcd-endpoints=" + endpoints, "--node-id=n1"});
    ASSERT_TRUE(parsed.ok()) << endpoints << ": " << parsed.status();
    EXPECT_EQ(absl::StrJoin(parsed->config.cluster.etcd_endpoints, ","),
              endpoints);
  }
  absl::StatusOr<DaemonOptions> bad = Parse(
      {"--cluster=c1", "--etcd-endpoints=etcd:2379/x", "--node-id=n1"});
  EXPECT_TRUE(absl::IsInvalidArgument(bad.status()));
  EXPECT_NE(bad.status().message().find("--etcd-endpoints"), std::string::npos)
      << bad.status();
}

TEST(FlagsTest, ClusterFlagsNeedEachOther) {
  absl::StatusOr<DaemonOptions> ok =
      Parse({"--cluster=c1", "--etcd-endpoints=127.0.0.1:2379,127.0.0.1:2380",
             "--node-id=n1", "--advertise=10.0.0.1:7233"});
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->config.cluster.name, "c1");
  EXPECT_EQ(ok->config.cluster.etcd_endpoints.size(), 2u);
  EXPECT_EQ(ok->config.cluster.advertise, "10.0.0.1:7233");
  EXPECT_EQ(ok->config.cluster.lease_ttl_ms, 1000);
  for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{
           {"--cluster=c1", "--node-id=n1"},
           {"--cluster=c1", "--etcd-endpoints=127.0.0.1:2379"},
           {"--etcd-endpoints=127.0.0.1:2379", "--node-id=n1"},
           {"--cluster=c/1", "--etcd-endpoints=127.0.0.1:2379", "--node-id=n1"},
           {"--cluster=c1", "--etcd-endpoints=127.0.0.1:99999", "--node-id=n1"},
           {"--cluster=c1", "--etcd-endpoints=127.0.0.1:2379", "--node-id=n1",
            "--data-dir="},
           {"--cluster=c1", "--etcd-endpoints=127.0.0.1:2379", "--node-id=n1",
            "--etcd-cert=c.pem"},
           {"--cluster=c1", "--etcd-endpoints=127.0.0.1:2379", "--node-id=n1",
            "--etcd-lease-ttl=500ms"},
           {"--cluster=c1", "--etcd-endpoints=unix:///run/etcd", "--node-id=n1"},
           {"--cluster=c1",
            "--etcd-endpoints=http://127.0.0.1:2379,https://127.0.0.1:2380",
            "--node-id=n1"},
           {"--cluster=c1", "--etcd-endpoints=http://127.0.0.1:2379",
            "--node-id=n1", "--etcd-ca=ca.pem"}}) {
    absl::StatusOr<DaemonOptions> parsed = Parse(bad);
    EXPECT_TRUE(absl::IsInvalidArgument(parsed.status()))
        << absl::StrJoin(bad, " ");
  }
}

}  // namespace
}  // namespace leasekeeper::server
