#include "server/flags.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace leasekeeper::server {
namespace {

constexpr int64_t kMaxValueBytes = int64_t{64} << 20;
constexpr int64_t kMaxShutdownGraceMs = 4'000;  // SIGTERM must exit in 5 s

absl::Status BadValue(absl::string_view flag, absl::string_view value,
                      absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("--", flag, "=", value, ": ", why));
}

absl::StatusOr<int64_t> ParseCount(absl::string_view flag,
                                   absl::string_view value, int64_t min,
                                   int64_t max) {
  int64_t n = 0;
  if (!absl::SimpleAtoi(value, &n))
    return BadValue(flag, value, "not a number");
  if (n < min || n > max) {
    return BadValue(flag, value,
                    absl::StrCat("must be in [", min, ", ", max, "]"));
  }
  return n;
}

absl::StatusOr<int64_t> ParseDurationMs(absl::string_view flag,
                                        absl::string_view value,
                                        int64_t max_ms) {
  absl::Duration duration;
  if (!absl::ParseDuration(value, &duration)) {
    return BadValue(flag, value, "not a duration (e.g. 2s, 500ms)");
  }
  const int64_t ms = absl::ToInt64Milliseconds(duration);
  if (duration < absl::ZeroDuration() || ms > max_ms) {
    return BadValue(flag, value,
                    absl::StrCat("must be in [0, ", max_ms, "ms]"));
  }
  return ms;
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

}  // namespace

std::string DaemonUsage() {
  return R"(usage: leasekeeperd [flags]

leasekeeper's lock service (gRPC leasekeeper.v1.LockService, server
reflection, grpc.health.v1.Health). Stops on SIGTERM/SIGINT.

  --listen ADDR               host:port to serve (default 127.0.0.1:7233,
                              loopback only; port 0 picks a free port)
  --log-level LEVEL           trace|debug|info|warn|error|critical|off
                              (default info)
  --session-grace DUR         how long a lost session may be resumed before
                              its locks are released (default 2s)
  --forget-idle-clients-after DUR
                              forget (unregister) a client that holds, waits
                              for and has a session for nothing after this
                              long (default 24h; 0 = never)
  --max-client-id-bytes N     (default 256)
  --max-lock-name-bytes N     (default 256)
  --max-key-bytes N           (default 256)
  --max-value-bytes N         (default 1048576, at most 64 MiB)
  --max-label-bytes N         (default 256)
  --max-request-id-bytes N    (default 128)
  --max-waiters-per-lock N    (default 10000)
  --max-sessions N            (default 100000)
  --max-locks-per-client N    leases one client may hold (default 1000)
  --max-store-bytes N         bytes of lock names, keys and values the
                              fenced store may hold (default 2147483648)
  --max-keys-per-lock N       keys one lock may hold in the fenced store
                              (default 10000)
  --max-request-bytes N       largest request message (default 0: the
                              larger of 4 MiB and max-value-bytes + 64 KiB)
  --retry-cache-entries N     (default 100000)
  --retry-cache-ttl DUR       (default 10m)
  --shutdown-grace DUR        how long SIGTERM waits for in-flight calls
                              (default 2s, at most 4s)
  --data-dir DIR              where the operation log and snapshots live
                              (default ./data, under the working directory;
                              one daemon per dir). --data-dir= (empty) keeps
                              nothing: a restart forgets every lock and
                              fencing counter (tests only)
  --fsync always|batch|never  when a mutation is durable enough to answer:
                              fsync per record, one fsync per group of
                              concurrent records (default), or on write to
                              the OS (survives a crash of leasekeeperd, not
                              of the machine)
  --snapshot-every N          snapshot the state after N logged operations,
                              bounding the replay at start (default 200000,
                              0 = never)
  --restart-grace DUR         after a restart every held lease lasts at
                              least this long, so a living holder can renew
                              (default 10s)
  --recover-truncate          start even if the log is corrupt before its
                              tail, cutting it at the first bad record
                              (loses what follows; read the error first)
  --metrics-listen ADDR       serve Prometheus metrics at http://ADDR/metrics
                              (plain HTTP; default off; e.g. 127.0.0.1:9464)
  --health-listen ADDR        an extra plaintext gRPC port for health probes
                              that carry no client certificate (default
                              off); LockService refuses calls on it when TLS
                              is on
  --tls-cert FILE             PEM server certificate (chain): serve TLS
  --tls-key FILE              PEM private key of --tls-cert
  --client-ca FILE            PEM CA(s) that sign client certificates: serve
                              mutual TLS; a request's client id must be the
                              certificate's identity (CN or a SAN) or
                              identity/suffix
  --policy FILE               JSON lock-name grants and admin identities
                              (needs --client-ca; deploy/policy.example.json)
  --help

Durations are like 2s, 500ms, 1m30s. Flags take --name=value or --name value.
)";
}

absl::StatusOr<DaemonOptions> ParseDaemonFlags(int argc,
                                               const char* const* argv) {
  DaemonOptions options;
  ServerConfig& config = options.config;
  Limits& limits = config.limits;
  config.durability.data_dir = "./data";

  using Setter = std::function<absl::Status(absl::string_view flag,
                                            absl::string_view value)>;
  auto size_flag = [](size_t* target, int64_t max) -> Setter {
    return [target, max](absl::string_view flag, absl::string_view value) {
      absl::StatusOr<int64_t> n = ParseCount(flag, value, 1, max);
      if (!n.ok()) return n.status();
      *target = static_cast<size_t>(*n);
      return absl::OkStatus();
    };
  };
  auto path_flag = [](std::string* target) -> Setter {
    return [target](absl::string_view, absl::string_view value) {
      *target = std::string(value);
      return absl::OkStatus();
    };
  };
  const std::map<std::string, Setter, std::less<>> setters = {
      {"listen",
       [&](absl::string_view flag, absl::string_view value) {
         if (value.find(':') == absl::string_view::npos) {
           return BadValue(flag, value, "expected host:port");
         }
         config.listen = std::string(value);
         return absl::OkStatus();
       }},
      {"log-level",
       [&](absl::string_view flag, absl::string_view value) {
         static constexpr absl::string_view kLevels[] = {
             "trace", "debug", "info", "warn", "error", "critical", "off"};
         if (std::find(std::begin(kLevels), std::end(kLevels), value) ==
             std::end(kLevels)) {
           return BadValue(flag, value,
                           "expected trace|debug|info|warn|error|critical|off");
         }
         options.log_level = std::string(value);
         return absl::OkStatus();
       }},
      {"session-grace",
       [&](absl::string_view flag, absl::string_view value) {
         absl::StatusOr<int64_t> ms = ParseDurationMs(flag, value, kMaxTtlMs);
         if (!ms.ok()) return ms.status();
         config.session_grace_ms = *ms;
         return absl::OkStatus();
       }},
      {"forget-idle-clients-after",
       [&](absl::string_view flag, absl::string_view value) {
         absl::StatusOr<int64_t> ms =
             ParseDurationMs(flag, value, 365 * kMaxTtlMs);
         if (!ms.ok()) return ms.status();
         config.forget_idle_clients_after_ms = *ms;
         return absl::OkStatus();
       }},
      {"max-client-id-bytes", size_flag(&limits.max_client_id_bytes, 65536)},
      {"max-lock-name-bytes", size_flag(&limits.max_lock_name_bytes, 65536)},
      {"max-key-bytes", size_flag(&limits.max_key_bytes, 65536)},
      {"max-value-bytes", size_flag(&limits.max_value_bytes, kMaxValueBytes)},
      {"max-label-bytes", size_flag(&limits.max_label_bytes, 65536)},
      {"max-request-id-bytes", size_flag(&limits.max_request_id_bytes, 65536)},
      {"max-sessions", size_flag(&limits.max_sessions, 100'000'000)},
      {"max-locks-per-client",
       size_flag(&limits.max_locks_per_client, 100'000'000)},
      {"max-store-bytes",
       size_flag(&limits.max_store_bytes, int64_t{1} << 50)},
      {"max-keys-per-lock",
       size_flag(&limits.max_keys_per_lock, 100'000'000)},
      {"max-request-bytes",
       [&](absl::string_view flag, absl::string_view value) {
         absl::StatusOr<int64_t> n =
             ParseCount(flag, value, 0, kMaxValueBytes + (1 << 20));
         if (!n.ok()) return n.status();
         limits.max_request_bytes = static_cast<size_t>(*n);
         return absl::OkStatus();
       }},
      {"metrics-listen",
       [&](absl::string_view flag, absl::string_view value) {
         if (!value.empty() && value.find(':') == absl::string_view::npos) {
           return BadValue(flag, value, "expected host:port");
         }
         config.metrics_listen = std::string(value);
         return absl::OkStatus();
       }},
      {"health-listen",
       [&](absl::string_view flag, absl::string_view value) {
         if (!value.empty() && value.find(':') == absl::string_view::npos) {
           return BadValue(flag, value, "expected host:port");
         }
         config.health_listen = std::string(value);
         return absl::OkStatus();
       }},
      {"tls-cert", path_flag(&config.security.tls_cert_file)},
      {"tls-key", path_flag(&config.security.tls_key_file)},
      {"client-ca", path_flag(&config.security.client_ca_file)},
      {"policy", path_flag(&config.security.policy_file)},
      {"retry-cache-entries",
       size_flag(&config.retry_cache.max_entries, 100'000'000)},
      {"max-waiters-per-lock",
       [&](absl::string_view flag, absl::string_view value) {
         absl::StatusOr<int64_t> n = ParseCount(flag, value, 1, 100'000'000);
         if (!n.ok()) return n.status();
         limits.max_waiters_per_lock = *n;
         return absl::OkStatus();
       }},
      {"retry-cache-ttl",
       [&](absl::string_view flag, absl::string_view value) {
         absl::StatusOr<int64_t> ms = ParseDurationMs(flag, value, kMaxTtlMs);
         if (!ms.ok()) return ms.status();
         config.retry_cache.ttl_ms = *ms;
         return absl::OkStatus();
       }},
      {"shutdown-grace",
       [&](absl::string_view flag, absl::string_view value) {
         absl::StatusOr<int64_t> ms =
             ParseDurationMs(flag, value, kMaxShutdownGraceMs);
         if (!ms.ok()) return ms.status();
         config.shutdown_grace_ms = *ms;
         return absl::OkStatus();
       }},
      {"data-dir",
       [&](absl::string_view, absl::string_view value) {
         config.durability.data_dir = std::string(value);
         return absl::OkStatus();
       }},
      {"fsync",
       [&](absl::string_view flag, absl::string_view value) {
         std::optional<storage::FsyncPolicy> policy =
             storage::ParseFsyncPolicy(value);
         if (!policy.has_value()) {
           return BadValue(flag, value, "expected always|batch|never");
         }
         config.durability.fsync = *policy;
         return absl::OkStatus();
       }},
      {"snapshot-every",
       [&](absl::string_view flag, absl::string_view value) {
         absl::StatusOr<int64_t> n =
             ParseCount(flag, value, 0, 1'000'000'000'000);
         if (!n.ok()) return n.status();
         config.durability.snapshot_every_records = static_cast<uint64_t>(*n);
         return absl::OkStatus();
       }},
      {"recover-truncate",
       [&](absl::string_view flag, absl::string_view value) {
         if (value != "true" && value != "false") {
           return BadValue(flag, value, "expected true|false (or no value)");
         }
         config.durability.recover_truncate = value == "true";
         return absl::OkStatus();
       }},
      {"restart-grace",
       [&](absl::string_view flag, absl::string_view value) {
         absl::StatusOr<int64_t> ms = ParseDurationMs(flag, value, kMaxTtlMs);
         if (!ms.ok()) return ms.status();
         config.durability.restart_grace_ms = *ms;
         return absl::OkStatus();
       }},
  };

  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg.substr(0, 2) != "--") {
      return absl::InvalidArgumentError(
          absl::StrCat("unexpected argument: ", arg));
    }
    arg.remove_prefix(2);
    std::string name(arg.substr(0, arg.find('=')));
    absl::StrReplaceAll({{"_", "-"}}, &name);
    if (name == "help") {
      options.help = true;
      continue;
    }
    if (name == "recover-truncate" && arg.find('=') == absl::string_view::npos) {
      config.durability.recover_truncate = true;
      continue;
    }
    auto setter = setters.find(name);
    if (setter == setters.end()) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag: --", name));
    }
    absl::string_view value;
    if (const size_t eq = arg.find('='); eq != absl::string_view::npos) {
      value = arg.substr(eq + 1);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, " needs a value"));
    }
    if (absl::Status s = setter->second(name, value); !s.ok()) return s;
  }
  if (absl::Status s = CheckFlagCombinations(config); !s.ok()) return s;
  return options;
}

}  // namespace leasekeeper::server
