#include "server/flags.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>

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
  --max-client-id-bytes N     (default 256)
  --max-lock-name-bytes N     (default 256)
  --max-key-bytes N           (default 256)
  --max-value-bytes N         (default 1048576, at most 64 MiB)
  --max-label-bytes N         (default 256)
  --max-request-id-bytes N    (default 128)
  --max-waiters-per-lock N    (default 10000)
  --max-sessions N            (default 100000)
  --retry-cache-entries N     (default 100000)
  --retry-cache-ttl DUR       (default 10m)
  --shutdown-grace DUR        how long SIGTERM waits for in-flight calls
                              (default 2s, at most 4s)
  --help

Durations are like 2s, 500ms, 1m30s. Flags take --name=value or --name value.
)";
}

absl::StatusOr<DaemonOptions> ParseDaemonFlags(int argc,
                                               const char* const* argv) {
  DaemonOptions options;
  ServerConfig& config = options.config;
  Limits& limits = config.limits;

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
      {"max-client-id-bytes", size_flag(&limits.max_client_id_bytes, 65536)},
      {"max-lock-name-bytes", size_flag(&limits.max_lock_name_bytes, 65536)},
      {"max-key-bytes", size_flag(&limits.max_key_bytes, 65536)},
      {"max-value-bytes", size_flag(&limits.max_value_bytes, kMaxValueBytes)},
      {"max-label-bytes", size_flag(&limits.max_label_bytes, 65536)},
      {"max-request-id-bytes", size_flag(&limits.max_request_id_bytes, 65536)},
      {"max-sessions", size_flag(&limits.max_sessions, 100'000'000)},
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
  return options;
}

}  // namespace leasekeeper::server
