// ServerConfig: every knob of leasekeeperd, with its documented default.
//
// Limits bound every per-request, per-lock and per-client structure the
// server keeps beyond what the core bounds itself. A request over a size
// limit, or one that would grow a bounded structure past its limit, is
// refused with RESOURCE_EXHAUSTED naming the limit (its flag name) and
// changes nothing.
//
// Thread-safety: a plain value; read-only once the server starts.
#ifndef LEASEKEEPER_SERVER_SERVER_CONFIG_H_
#define LEASEKEEPER_SERVER_SERVER_CONFIG_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace leasekeeper::server {

// The default listening address: loopback only, so a fresh daemon is never
// reachable from the network by accident. Pass --listen 0.0.0.0:7233 (or a
// specific interface) to serve other hosts.
inline constexpr char kDefaultListenAddress[] = "127.0.0.1:7233";

// A lease or a wait may last at most 24 h (the contract's 86400 s).
inline constexpr int64_t kMaxTtlMs = 86'400'000;
inline constexpr int64_t kMaxWaitTimeoutMs = 86'400'000;

struct Limits {
  size_t max_client_id_bytes = 256;  // --max-client-id-bytes (also session ids)
  size_t max_lock_name_bytes = 256;  // --max-lock-name-bytes (also prefixes)
  size_t max_key_bytes = 256;        // --max-key-bytes
  size_t max_value_bytes = 1 << 20;  // --max-value-bytes
  size_t max_label_bytes = 256;      // --max-label-bytes
  size_t max_request_id_bytes = 128;      // --max-request-id-bytes
  int64_t max_waiters_per_lock = 10'000;  // --max-waiters-per-lock
  size_t max_sessions = 100'000;          // --max-sessions
  int32_t default_page_size = 100;        // ListLocks page_size 0
  int32_t max_page_size = 1'000;          // ListLocks page_size cap
};

struct RetryCacheConfig {
  // Answers are kept at least this long (--retry-cache-ttl) ...
  int64_t ttl_ms = 10 * 60 * 1000;
  // ... unless this many newer ones push them out, oldest first
  // (--retry-cache-entries).
  size_t max_entries = 100'000;
};

struct ServerConfig {
  std::string listen = kDefaultListenAddress;  // --listen
  // How long a session whose stream ended may be resumed before the server
  // releases the client's leases and withdraws its wait (--session-grace).
  int64_t session_grace_ms = 2'000;
  Limits limits;
  RetryCacheConfig retry_cache;
  // How long SIGTERM waits for in-flight calls before cancelling them.
  int64_t shutdown_grace_ms = 2'000;
};

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_SERVER_CONFIG_H_
