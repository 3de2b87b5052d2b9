// Command-line flags of leasekeeperd.
//
// Syntax: --name=value or --name value; dashes or underscores in names.
// Durations are Go-style: "2s", "500ms", "1m30s", "0".
//
//   --listen ADDR               host:port to serve (default 127.0.0.1:7233,
//                               loopback only; port 0 picks a free port)
//   --log-level LEVEL           trace|debug|info|warn|error|critical|off
//                               (default info)
//   --session-grace DUR         how long a lost session may be resumed before
//                               its locks are released (default 2s)
//   --max-client-id-bytes N     (default 256)
//   --max-lock-name-bytes N     (default 256)
//   --max-key-bytes N           (default 256)
//   --max-value-bytes N         (default 1048576, at most 64 MiB)
//   --max-label-bytes N         (default 256)
//   --max-request-id-bytes N    (default 128)
//   --max-waiters-per-lock N    (default 10000)
//   --max-sessions N            (default 100000)
//   --max-locks-per-client N    (default 1000)
//   --max-request-bytes N       (default 0: max(4 MiB, value limit + 64 KiB))
//   --metrics-listen ADDR       Prometheus /metrics (default off)
//   --health-listen ADDR        plaintext health-only gRPC port (default off)
//   --tls-cert FILE, --tls-key FILE    serve TLS
//   --client-ca FILE            serve mutual TLS (client certificates)
//   --policy FILE               lock grants and admins (needs --client-ca)
//   --retry-cache-entries N     (default 100000)
//   --retry-cache-ttl DUR       (default 10m)
//   --shutdown-grace DUR        how long SIGTERM waits for in-flight calls
//                               (default 2s, at most 4s)
//   --data-dir DIR              the operation log and snapshots (default
//                               ./data; empty: nothing persisted)
//   --fsync always|batch|never  (default batch)
//   --snapshot-every N          (default 200000; 0 = never)
//   --restart-grace DUR         (default 10s)
//   --recover-truncate          cut a corrupt log at its first bad record
//   --help
//
// Thread-safety: pure functions.
#ifndef LEASEKEEPER_SERVER_FLAGS_H_
#define LEASEKEEPER_SERVER_FLAGS_H_

#include <string>

#include "absl/status/statusor.h"
#include "server/server_config.h"

namespace leasekeeper::server {

struct DaemonOptions {
  ServerConfig config;
  std::string log_level = "info";
  bool help = false;
};

// Outcomes: the options; INVALID_ARGUMENT naming the flag for an unknown
// flag, a missing or malformed value, a value out of range, or flags that
// need each other (--tls-cert/--tls-key, --client-ca, --policy,
// --max-request-bytes below --max-value-bytes + 64 KiB).
absl::StatusOr<DaemonOptions> ParseDaemonFlags(int argc,
                                               const char* const* argv);

// The --help text.
std::string DaemonUsage();

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_FLAGS_H_
