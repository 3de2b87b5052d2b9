#include "server/flags.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "client/host_port.h"
#include "cluster/etcd_endpoints.h"

namespace leasekeeper::server {
namespace {

constexpr int64_t kMaxValueBytes = int64_t{64} << 20;
constexpr int64_t kMaxShutdownGraceMs = 4'000;  // SIGTERM must exit in 5 s
constexpr size_t kHelpColumn = 30;  // where a flag's description starts
constexpr size_t kHelpWidth = 78;

// Where a flag's value goes, and its default: a field of DaemonOptions.
template <typename T>
using Field = T& (*)(DaemonOptions&);

// One flag: the single source of its parsing and of its --help entry, so
// the two cannot drift apart.
struct FlagSpec {
  absl::string_view group;
  absl::string_view name;
  absl::string_view value_name;  // "" for a boolean flag
  absl::string_view help;
  // Parses `value` into the options; INVALID_ARGUMENT saying why not.
  std::function<absl::Status(absl::string_view value, DaemonOptions&)> set;
  // The default as the flag would spell it; "" when there is none to show.
  std::function<std::string(DaemonOptions&)> show_default;
};

absl::Status BadValue(absl::string_view flag, absl::string_view value,
                      absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("--", flag, "=", value, ": ", why));
}

absl::StatusOr<int64_t> ParseCount(absl::string_view value, int64_t min,
                                   int64_t max) {
  int64_t n = 0;
  if (!absl::SimpleAtoi(value, &n)) {
    return absl::InvalidArgumentError("not a number");
  }
  if (n < min || n > max) {
    return absl::InvalidArgumentError(
        absl::StrCat("must be in [", min, ", ", max, "]"));
  }
  return n;
}

absl::StatusOr<int64_t> ParseDurationMs(absl::string_view value,
                                        int64_t max_ms) {
  absl::Duration duration;
  if (!absl::ParseDuration(value, &duration)) {
    return absl::InvalidArgumentError("not a duration (e.g. 2s, 500ms)");
  }
  if (duration < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("must not be negative");
  }
  if (duration > absl::Milliseconds(max_ms)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "must be at most ", absl::FormatDuration(absl::Milliseconds(max_ms))));
  }
  if (duration % absl::Milliseconds(1) != absl::ZeroDuration()) {
    return absl::InvalidArgumentError("must be a whole number of milliseconds");
  }
  return absl::ToInt64Milliseconds(duration);
}

std::string FormatDurationMs(int64_t ms) {
  return absl::FormatDuration(absl::Milliseconds(ms));
}

FlagSpec Count(absl::string_view group, absl::string_view name,
               absl::string_view help, Field<size_t> field, int64_t min,
               int64_t max) {
  return {group,
          name,
          "N",
          help,
          [field, min, max](absl::string_view value, DaemonOptions& options) {
            absl::StatusOr<int64_t> n = ParseCount(value, min, max);
            if (!n.ok()) return n.status();
            field(options) = static_cast<size_t>(*n);
            return absl::OkStatus();
          },
          [field](DaemonOptions& defaults) {
            return absl::StrCat(field(defaults));
          }};
}

FlagSpec Duration(absl::string_view group, absl::string_view name,
                  absl::string_view help, Field<int64_t> field,
                  int64_t max_ms) {
  return {group,
          name,
          "DUR",
          help,
          [field, max_ms](absl::string_view value, DaemonOptions& options) {
            absl::StatusOr<int64_t> ms = ParseDurationMs(value, max_ms);
            if (!ms.ok()) return ms.status();
            field(options) = *ms;
            return absl::OkStatus();
          },
          [field](DaemonOptions& defaults) {
            return FormatDurationMs(field(defaults));
          }};
}

FlagSpec Path(absl::string_view group, absl::string_view name,
              absl::string_view help, Field<std::string> field) {
  return {group,
          name,
          "FILE",
          help,
          [field](absl::string_view value, DaemonOptions& options) {
            field(options) = std::string(value);
            return absl::OkStatus();
          },
          [](DaemonOptions&) { return std::string(); }};
}

// `optional`: the empty value means "off".
FlagSpec Address(absl::string_view group, absl::string_view name,
                 absl::string_view help, Field<std::string> field,
                 bool optional) {
  return {group,
          name,
          "ADDR",
          help,
          [field, optional](absl::string_view value, DaemonOptions& options) {
            if (!(optional && value.empty())) {
              if (absl::Status s = CheckListenAddress(value); !s.ok()) {
                return s;
              }
            }
            field(options) = std::string(value);
            return absl::OkStatus();
          },
          [field, optional](DaemonOptions& defaults) {
            const std::string& value = field(defaults);
            return optional && value.empty() ? std::string("off") : value;
          }};
}

constexpr char kServing[] = "Serving";
constexpr char kSessions[] = "Leases and sessions";
constexpr char kLimits[] =
    "Limits (a refusal is RESOURCE_EXHAUSTED naming the flag)";
constexpr char kRetries[] = "Retried requests";
constexpr char kDurability[] = "Durability";
constexpr char kSecurity[] = "Security";
constexpr char kCluster[] =
    "Cluster (the log replicated through etcd; docs/cluster.md)";
constexpr absl::string_view kGroups[] = {kServing,    kSessions, kLimits,
                                         kRetries,    kDurability, kSecurity,
                                         kCluster};

// A cluster or node name: it becomes part of etcd keys.
absl::Status CheckClusterName(absl::string_view value) {
  if (value.empty() || value.size() > 64 ||
      !std::all_of(value.begin(), value.end(), [](char c) {
        return absl::ascii_isalnum(c) || c == '-' || c == '_' || c == '.';
      })) {
    return absl::InvalidArgumentError(
        "1 to 64 of letters, digits, '-', '_', '.'");
  }
  return absl::OkStatus();
}

constexpr absl::string_view kLogLevels[] = {"trace", "debug",    "info", "warn",
                                            "error", "critical", "off"};

const std::vector<FlagSpec>& Specs() {
  static const std::vector<FlagSpec>* const specs = new std::vector<FlagSpec>{
      Address(
          kServing, "listen",
          "host:port to serve; loopback only by default, port 0 picks a "
          "free port and prints it",
          [](DaemonOptions& o) -> std::string& { return o.config.listen; },
          /*optional=*/false),
      Address(
          kServing, "health-listen",
          "an extra plaintext gRPC port for health probes that carry no "
          "client certificate; LockService refuses calls on it when TLS "
          "is on",
          [](DaemonOptions& o) -> std::string& {
            return o.config.health_listen;
          },
          /*optional=*/true),
      Address(
          kServing, "metrics-listen",
          "serve Prometheus metrics at http://ADDR/metrics (plain HTTP; "
          "e.g. 127.0.0.1:9464)",
          [](DaemonOptions& o) -> std::string& {
            return o.config.metrics_listen;
          },
          /*optional=*/true),
      {kServing, "log-level", "LEVEL",
       "trace|debug|info|warn|error|critical|off",
       [](absl::string_view value, DaemonOptions& options) {
         if (std::find(std::begin(kLogLevels), std::end(kLogLevels), value) ==
             std::end(kLogLevels)) {
           return absl::InvalidArgumentError(
               "expected trace|debug|info|warn|error|critical|off");
         }
         options.log_level = std::string(value);
         return absl::OkStatus();
       },
       [](DaemonOptions& defaults) { return defaults.log_level; }},
      Duration(
          kServing, "shutdown-grace",
          "how long SIGTERM waits for in-flight calls (at most 4s)",
          [](DaemonOptions& o) -> int64_t& {
            return o.config.shutdown_grace_ms;
          },
          kMaxShutdownGraceMs),

      Duration(
          kSessions, "session-grace",
          "how long a lost session may be resumed before its locks are "
          "released",
          [](DaemonOptions& o) -> int64_t& {
            return o.config.session_grace_ms;
          },
          kMaxTtlMs),
      Duration(
          kSessions, "session-open-timeout",
          "how long a Session stream may stay open without sending its "
          "`open` message before the server ends it (it counts against "
          "--max-sessions meanwhile); 0 ends it at once",
          [](DaemonOptions& o) -> int64_t& {
            return o.config.limits.session_open_timeout_ms;
          },
          kMaxTtlMs),
      Duration(
          kSessions, "forget-idle-clients-after",
          "forget (unregister) a client that holds, waits for and has a "
          "session for nothing after this long; 0 = never",
          [](DaemonOptions& o) -> int64_t& {
            return o.config.forget_idle_clients_after_ms;
          },
          365 * kMaxTtlMs),

      Count(
          kLimits, "max-client-id-bytes", "also session ids",
          [](DaemonOptions& o) -> size_t& {
            return o.config.limits.max_client_id_bytes;
          },
          1, 65536),
      Count(
          kLimits, "max-lock-name-bytes", "also ListLocks prefixes",
          [](DaemonOptions& o) -> size_t& {
            return o.config.limits.max_lock_name_bytes;
          },
          1, 65536),
      Count(
          kLimits, "max-key-bytes", "",
          [](DaemonOptions& o) -> size_t& {
            return o.config.limits.max_key_bytes;
          },
          1, 65536),
      Count(
          kLimits, "max-value-bytes", "at most 64 MiB",
          [](DaemonOptions& o) -> size_t& {
            return o.config.limits.max_value_bytes;
          },
          1, kMaxValueBytes),
      Count(
          kLimits, "max-label-bytes", "",
          [](DaemonOptions& o) -> size_t& {
            return o.config.limits.max_label_bytes;
          },
          1, 65536),
      Count(
          kLimits, "max-request-id-bytes", "",
          [](DaemonOptions& o) -> size_t& {
            return o.config.limits.max_request_id_bytes;
          },
          1, 65536),
      {kLimits, "max-waiters-per-lock", "N", "",
       [](absl::string_view value, DaemonOptions& options) {
         absl::StatusOr<int64_t> n = ParseCount(value, 1, 100'000'000);
         if (!n.ok()) return n.status();
         options.config.limits.max_waiters_per_lock = *n;
         return absl::OkStatus();
       },
       [](DaemonOptions& defaults) {
         return absl::StrCat(defaults.config.limits.max_waiters_per_lock);
       }},
      Count(
          kLimits, "max-sessions",
          "open Session streams, counting those that have not sent `open` "
          "yet",
          [](DaemonOptions& o) -> size_t& {
            return o.config.limits.max_sessions;
          },
          1, 100'000'000),
      Count(
          kLimits, "max-watchers", "open Watch streams",
          [](DaemonOptions& o) -> size_t& {
            return o.config.limits.max_watchers;
          },
          1, 100'000'000),
      Count(
          kLimits, "max-prefix-watchers",
          "open Watch streams by prefix (also counted as watchers)",
          [](DaemonOptions& o) -> size_t& {
            return o.config.limits.max_prefix_watchers;
          },
          1, 100'000'000),
      Count(
          kLimits, "watch-buffer-events",
          "events a Watch stream may have unsent before it is cut as "
          "fallen behind",
          [](DaemonOptions& o) -> size_t& {
            return o.config.limits.watch_buffer_events;
          },
          1, 1'000'000),
      Count(
          kLimits, "max-locks-per-client", "leases one client may hold",
          [](DaemonOptions& o) -> size_t& {
            return o.config.limits.max_locks_per_client;
          },
          1, 100'000'000),
      Count(
          kLimits, "max-store-bytes",
          "bytes of lock names, keys and values the fenced store may hold",
          [](DaemonOptions& o) -> size_t& {
            return o.config.limits.max_store_bytes;
          },
          1, int64_t{1} << 50),
      Count(
          kLimits, "max-keys-per-lock", "keys one lock may hold in the store",
          [](DaemonOptions& o) -> size_t& {
            return o.config.limits.max_keys_per_lock;
          },
          1, 100'000'000),
      Count(
          kLimits, "max-request-bytes",
          "largest request message; 0: the larger of 4 MiB and "
          "max-value-bytes + 64 KiB",
          [](DaemonOptions& o) -> size_t& {
            return o.config.limits.max_request_bytes;
          },
          0, kMaxValueBytes + (1 << 20)),

      Count(
          kRetries, "retry-cache-entries",
          "answers kept for retried requests (request_id)",
          [](DaemonOptions& o) -> size_t& {
            return o.config.retry_cache.max_entries;
          },
          1, 100'000'000),
      Duration(
          kRetries, "retry-cache-ttl",
          "how long an answer is kept at least, unless newer ones push "
          "it out",
          [](DaemonOptions& o) -> int64_t& {
            return o.config.retry_cache.ttl_ms;
          },
          kMaxTtlMs),

      {kDurability, "data-dir", "DIR",
       "where the operation log and snapshots live (relative to the working "
       "directory; one daemon per dir). --data-dir= (empty) keeps nothing: "
       "a restart forgets every lock and fencing counter (tests only)",
       [](absl::string_view value, DaemonOptions& options) {
         options.config.durability.data_dir = std::string(value);
         return absl::OkStatus();
       },
       [](DaemonOptions& defaults) {
         return defaults.config.durability.data_dir;
       }},
      {kDurability, "fsync", "POLICY",
       "always|batch|never: when a mutation is durable enough to answer: "
       "fsync per record, one fsync per group of concurrent records, or on "
       "write to the OS (survives a crash of leasekeeperd, not of the "
       "machine)",
       [](absl::string_view value, DaemonOptions& options) {
         std::optional<storage::FsyncPolicy> policy =
             storage::ParseFsyncPolicy(value);
         if (!policy.has_value()) {
           return absl::InvalidArgumentError("expected always|batch|never");
         }
         options.config.durability.fsync = *policy;
         return absl::OkStatus();
       },
       [](DaemonOptions& defaults) {
         return std::string(
             storage::FsyncPolicyName(defaults.config.durability.fsync));
       }},
      {kDurability, "snapshot-every", "N",
       "snapshot the state after N logged operations, bounding the replay "
       "at start (0 = never)",
       [](absl::string_view value, DaemonOptions& options) {
         absl::StatusOr<int64_t> n = ParseCount(value, 0, 1'000'000'000'000);
         if (!n.ok()) return n.status();
         options.config.durability.snapshot_every_records =
             static_cast<uint64_t>(*n);
         return absl::OkStatus();
       },
       [](DaemonOptions& defaults) {
         return absl::StrCat(defaults.config.durability.snapshot_every_records);
       }},
      Duration(
          kDurability, "restart-grace",
          "after a restart every held lease lasts at least this long, "
          "so a living holder can renew",
          [](DaemonOptions& o) -> int64_t& {
            return o.config.durability.restart_grace_ms;
          },
          kMaxTtlMs),
      {kDurability, "recover-truncate", "",
       "start even if the log is corrupt before its tail, cutting it at the "
       "first bad record (loses what follows; read the error first)",
       [](absl::string_view value, DaemonOptions& options) {
         if (value != "true" && value != "false") {
           return absl::InvalidArgumentError(
               "expected true|false (or no value)");
         }
         options.config.durability.recover_truncate = value == "true";
         return absl::OkStatus();
       },
       [](DaemonOptions&) { return std::string(); }},

      Path(kSecurity, "tls-cert", "PEM server certificate (chain): serve TLS",
           [](DaemonOptions& o) -> std::string& {
             return o.config.security.tls_cert_file;
           }),
      Path(kSecurity, "tls-key", "PEM private key of --tls-cert",
           [](DaemonOptions& o) -> std::string& {
             return o.config.security.tls_key_file;
           }),
      Path(kSecurity, "client-ca",
           "PEM CA(s) that sign client certificates: serve mutual TLS; a "
           "request's client id must be the certificate's identity (CN or a "
           "SAN) or identity/suffix",
           [](DaemonOptions& o) -> std::string& {
             return o.config.security.client_ca_file;
           }),
      Path(kSecurity, "policy",
           "JSON lock-name grants and admin identities (needs --client-ca; "
           "deploy/policy.example.json)",
           [](DaemonOptions& o) -> std::string& {
             return o.config.security.policy_file;
           }),

      {kCluster, "cluster", "NAME",
       "run as a member of this cluster: the operation log lives in etcd, "
       "one member leads, the others follow and answer NOT_LEADER with the "
       "leader's address (needs --etcd-endpoints and --node-id; --data-dir "
       "keeps local snapshots)",
       [](absl::string_view value, DaemonOptions& options) {
         if (absl::Status s = CheckClusterName(value); !s.ok()) return s;
         options.config.cluster.name = std::string(value);
         return absl::OkStatus();
       },
       [](DaemonOptions&) { return std::string("off"); }},
      {kCluster, "etcd-endpoints", "A,B,C",
       "each etcd member as host:port, http://host:port or "
       "https://host:port (TLS: --etcd-ca, or the default roots without "
       "it); one DNS name stands for every address it resolves to",
       [](absl::string_view value, DaemonOptions& options) {
         std::vector<std::string> endpoints = absl::StrSplit(value, ',');
         absl::StatusOr<storage::EtcdEndpoints> parsed =
             storage::ParseEtcdEndpoints(endpoints);
         if (!parsed.ok()) return parsed.status();
         options.config.cluster.etcd_endpoints = std::move(endpoints);
         return absl::OkStatus();
       },
       [](DaemonOptions&) { return std::string(); }},
      {kCluster, "node-id", "ID",
       "this member's name, unique in the cluster",
       [](absl::string_view value, DaemonOptions& options) {
         if (absl::Status s = CheckClusterName(value); !s.ok()) return s;
         options.config.cluster.node_id = std::string(value);
         return absl::OkStatus();
       },
       [](DaemonOptions&) { return std::string(); }},
      Address(kCluster, "advertise",
              "host:port clients reach this member at (sent to them with "
              "NOT_LEADER); empty: the bound --listen address",
              [](DaemonOptions& o) -> std::string& {
                return o.config.cluster.advertise;
              },
              /*optional=*/true),
      Path(kCluster, "etcd-ca", "PEM CA of etcd's server certificates: TLS to etcd",
           [](DaemonOptions& o) -> std::string& {
             return o.config.cluster.etcd_ca_file;
           }),
      Path(kCluster, "etcd-cert",
           "PEM client certificate for etcd's --client-cert-auth (needs "
           "--etcd-key and --etcd-ca)",
           [](DaemonOptions& o) -> std::string& {
             return o.config.cluster.etcd_cert_file;
           }),
      Path(kCluster, "etcd-key", "PEM private key of --etcd-cert",
           [](DaemonOptions& o) -> std::string& {
             return o.config.cluster.etcd_key_file;
           }),
      {kCluster, "etcd-lease-ttl", "DUR",
       "the leader's etcd lease (whole seconds, at least 1s): a dead "
       "leader is replaced about this long plus 0.5 s later; etcd raises a "
       "TTL below 1.5 x its --election-timeout",
       [](absl::string_view value, DaemonOptions& options) {
         absl::StatusOr<int64_t> ms = ParseDurationMs(value, 60'000);
         if (!ms.ok()) return ms.status();
         if (*ms < 1000 || *ms % 1000 != 0) {
           return absl::InvalidArgumentError("must be whole seconds, >= 1s");
         }
         options.config.cluster.lease_ttl_ms = *ms;
         return absl::OkStatus();
       },
       [](DaemonOptions& defaults) {
         return FormatDurationMs(defaults.config.cluster.lease_ttl_ms);
       }},
  };
  return *specs;
}

const FlagSpec* FindSpec(absl::string_view name) {
  for (const FlagSpec& spec : Specs()) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

DaemonOptions Defaults() {
  DaemonOptions options;
  options.config.durability.data_dir = "./data";
  return options;
}

// Flags that only make sense together. Files are read later, at Start.
absl::Status CheckFlagCombinations(const ServerConfig& config) {
  const SecurityConfig& security = config.security;
  if (security.tls_cert_file.empty() != security.tls_key_file.empty()) {
    return absl::InvalidArgumentError(security.tls_cert_file.empty()
                                          ? "--tls-key needs --tls-cert"
                                          : "--tls-cert needs --tls-key");
  }
  if (!security.client_ca_file.empty() && security.tls_cert_file.empty()) {
    return absl::InvalidArgumentError(
        "--client-ca needs --tls-cert and --tls-key (mutual TLS is TLS)");
  }
  if (!security.policy_file.empty() && security.client_ca_file.empty()) {
    return absl::InvalidArgumentError(
        "--policy needs --client-ca: grants are for client certificate "
        "identities");
  }
  const ClusterConfig& cluster = config.cluster;
  const bool cluster_flags = !cluster.etcd_endpoints.empty() ||
                             !cluster.node_id.empty() ||
                             !cluster.advertise.empty() ||
                             !cluster.etcd_ca_file.empty() ||
                             !cluster.etcd_cert_file.empty() ||
                             !cluster.etcd_key_file.empty();
  if (cluster.name.empty() && cluster_flags) {
    return absl::InvalidArgumentError(
        "--etcd-endpoints, --node-id, --advertise and --etcd-* need "
        "--cluster");
  }
  if (!cluster.name.empty()) {
    if (cluster.etcd_endpoints.empty()) {
      return absl::InvalidArgumentError("--cluster needs --etcd-endpoints");
    }
    if (cluster.node_id.empty()) {
      return absl::InvalidArgumentError("--cluster needs --node-id");
    }
    if (config.durability.data_dir.empty()) {
      return absl::InvalidArgumentError(
          "--cluster needs a --data-dir (its local snapshots)");
    }
    if (cluster.etcd_cert_file.empty() != cluster.etcd_key_file.empty()) {
      return absl::InvalidArgumentError("--etcd-cert and --etcd-key go together");
    }
    if (!cluster.etcd_cert_file.empty() && cluster.etcd_ca_file.empty()) {
      return absl::InvalidArgumentError("--etcd-cert needs --etcd-ca");
    }
    absl::StatusOr<storage::EtcdEndpoints> endpoints =
        storage::ParseEtcdEndpoints(cluster.etcd_endpoints);
    if (!endpoints.ok()) return endpoints.status();
    if (!cluster.etcd_ca_file.empty() &&
        endpoints->scheme == storage::EtcdEndpoints::Scheme::kHttp) {
      return absl::InvalidArgumentError(
          "--etcd-ca with http:// --etcd-endpoints: use https:// for TLS");
    }
  }
  const size_t max_request = config.limits.max_request_bytes;
  if (max_request != 0 &&
      max_request < config.limits.max_value_bytes + (64 << 10)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-request-bytes=", max_request,
                     " must be at least --max-value-bytes + 64 KiB (",
                     config.limits.max_value_bytes + (64 << 10), ")"));
  }
  return absl::OkStatus();
}

// Appends `text` word-wrapped to kHelpWidth, every line but the first
// indented to kHelpColumn; the first continues at `column`.
void AppendWrapped(absl::string_view text, size_t column, std::string& out) {
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    if (column > kHelpColumn && column + 1 + word.size() > kHelpWidth) {
      absl::StrAppend(&out, "\n", std::string(kHelpColumn, ' '));
      column = kHelpColumn;
    } else if (column > kHelpColumn) {
      out += ' ';
      ++column;
    }
    absl::StrAppend(&out, word);
    column += word.size();
  }
}

}  // namespace

absl::Status CheckListenAddress(absl::string_view address) {
  return client::ParseHostPort(address, 0).status();
}

std::string DaemonUsage() {
  std::string out = R"(usage: leasekeeperd [flags]

leasekeeper's lock service (gRPC leasekeeper.v1.LockService, server
reflection, grpc.health.v1.Health). Stops on SIGTERM/SIGINT; SIGHUP
re-reads the TLS files and the policy.
)";
  DaemonOptions defaults = Defaults();
  for (absl::string_view group : kGroups) {
    absl::StrAppend(&out, "\n", group, ":\n");
    for (const FlagSpec& spec : Specs()) {
      if (spec.group != group) continue;
      std::string head = absl::StrCat("  --", spec.name);
      if (!spec.value_name.empty())
        absl::StrAppend(&head, " ", spec.value_name);
      out += head;
      size_t column = head.size();
      if (column + 2 > kHelpColumn) {
        absl::StrAppend(&out, "\n", std::string(kHelpColumn, ' '));
      } else {
        out += std::string(kHelpColumn - column, ' ');
      }
      column = kHelpColumn;
      std::string text(spec.help);
      const std::string shown = spec.show_default(defaults);
      if (!shown.empty()) {
        absl::StrAppend(&text, text.empty() ? "" : " ", "(default ", shown,
                        ")");
      }
      AppendWrapped(text, column, out);
      out += '\n';
    }
  }
  out += R"(
  --help                      this text

Durations are like 2s, 500ms, 1m30s. Flags take --name=value or --name value;
underscores may stand for dashes. A bad value stops the daemon at start with
the flag's name and exit code 2.
)";
  return out;
}

absl::StatusOr<DaemonOptions> ParseDaemonFlags(int argc,
                                               const char* const* argv) {
  DaemonOptions options = Defaults();
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg.substr(0, 2) != "--") {
      return absl::InvalidArgumentError(
          absl::StrCat("unexpected argument: ", arg));
    }
    arg.remove_prefix(2);
    const size_t eq = arg.find('=');
    std::string name(arg.substr(0, eq));
    absl::StrReplaceAll({{"_", "-"}}, &name);
    if (name == "help") {
      options.help = true;
      continue;
    }
    const FlagSpec* spec = FindSpec(name);
    if (spec == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag: --", name));
    }
    absl::string_view value;
    if (eq != absl::string_view::npos) {
      value = arg.substr(eq + 1);
    } else if (spec->value_name.empty()) {
      value = "true";  // a boolean flag alone
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, " needs a value"));
    }
    if (absl::Status s = spec->set(value, options); !s.ok()) {
      return BadValue(name, value, s.message());
    }
  }
  if (absl::Status s = CheckFlagCombinations(options.config); !s.ok()) {
    return s;
  }
  return options;
}

}  // namespace leasekeeper::server
