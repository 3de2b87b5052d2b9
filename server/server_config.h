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
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/state_machine.h"
#include "storage/durable_store.h"
#include "storage/operation_log.h"
#include "storage/server_records.h"

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
  // Session streams, those that have not sent `open` yet included
  // (--max-sessions).
  size_t max_sessions = 100'000;
  // How long a Session stream may stay open before sending its `open`
  // message; it is then ended with DEADLINE_EXCEEDED
  // (--session-open-timeout). Measured on the real clock, like gRPC's own
  // deadlines.
  int64_t session_open_timeout_ms = 10'000;
  // Leases one client may hold at once; an Acquire beyond it is refused
  // (--max-locks-per-client).
  size_t max_locks_per_client = 1'000;
  // Payload bytes of the fenced store (lock names, keys, values) that a
  // Write may grow it to (--max-store-bytes). 2 GiB: a few thousand values
  // of the largest size; the store lives in memory and in every snapshot,
  // so lower it on a small machine. A write that does not grow the store is
  // never refused by it.
  size_t max_store_bytes = size_t{2} << 30;
  // Keys one lock may hold in the fenced store (--max-keys-per-lock).
  size_t max_keys_per_lock = 10'000;
  // Largest request message gRPC accepts, in bytes; a larger one is refused
  // by gRPC with RESOURCE_EXHAUSTED before any handler runs
  // (--max-request-bytes). 0: max(4 MiB, max_value_bytes + 64 KiB).
  size_t max_request_bytes = 0;
  // Watch streams open at once (--max-watchers), of them by prefix
  // (--max-prefix-watchers: each costs every event a lookup per distinct
  // prefix length), and the events each may have buffered before it is cut
  // as fallen behind (--watch-buffer-events).
  size_t max_watchers = 10'000;
  size_t max_prefix_watchers = 1'000;
  size_t watch_buffer_events = 1'024;
  int32_t default_page_size = 100;  // ListLocks page_size 0
  int32_t max_page_size = 1'000;    // ListLocks page_size cap
  int32_t default_detail_page_size = 1'000;  // Inspect/Status page_size 0
  int32_t max_detail_page_size = 1'000;      // Inspect/Status page_size cap
};

struct RetryCacheConfig {
  // Answers are kept at least this long (--retry-cache-ttl) ...
  int64_t ttl_ms = 10 * 60 * 1000;
  // ... unless this many newer ones push them out, oldest first
  // (--retry-cache-entries).
  size_t max_entries = 100'000;
};

// Durability (storage/durable_store.h): the write-ahead log and snapshots
// of the core's operation stream in a data directory.
struct DurabilityConfig {
  // --data-dir. leasekeeperd's default is ./data (under the working
  // directory; scripts/run runs from the repository root). Empty: nothing
  // is persisted, a restart forgets everything (in-process tests only).
  std::string data_dir;
  // --fsync always|batch|never: when a mutation counts as durable and may
  // be answered (see storage/durable_store.h).
  storage::FsyncPolicy fsync = storage::FsyncPolicy::kBatch;
  // --snapshot-every N: take a snapshot after N logged operations (0:
  // never), bounding the replay at the next start.
  uint64_t snapshot_every_records = 200'000;
  // --restart-grace DUR: after a restart every held lease lasts at least
  // this much longer, so a living holder can renew (storage/restart_grace.h).
  int64_t restart_grace_ms = 10'000;
  // --recover-truncate: start even with a corrupt log, cutting it at the
  // first bad record (storage/log.h explains what that risks).
  bool recover_truncate = false;

  // An operation log opened by its opening, with what its recovery found.
  struct OpenedLog {
    std::unique_ptr<storage::OperationLog> log;
    storage::RecoveryReport recovery;
    // > 0: while a lease is held, the clock is logged (an Advance record)
    // at least this often, so that whoever takes the log over continues
    // from a recent tick (DurableStateMachine::NextClockRecord). 0: never.
    int64_t clock_record_every_ms = 0;
  };
  // When set, CoreOwner::OpenStorage opens the log with this instead of the
  // local WAL in data_dir (cluster mode: server/cluster_node.h). Like
  // DurableStore::Open it recovers the (empty) machine and the server
  // state, and reports resume_tick. Not a flag.
  std::function<absl::StatusOr<OpenedLog>(StateMachine& machine,
                                          storage::ServerState& server)>
      open_log;
};

// Cluster mode (server/cluster_node.h): the operation log is replicated
// through etcd; one node leads, the others follow and redirect.
struct ClusterConfig {
  // --cluster NAME; empty: a single node with its local log.
  std::string name;
  // --etcd-endpoints A,B,C (host:port each).
  std::vector<std::string> etcd_endpoints;
  // --node-id: this node's name in the cluster (unique per node).
  std::string node_id;
  // --advertise HOST:PORT clients reach this node at; empty: the bound
  // listen address.
  std::string advertise;
  // --etcd-ca / --etcd-cert / --etcd-key: TLS to etcd.
  std::string etcd_ca_file;
  std::string etcd_cert_file;
  std::string etcd_key_file;
  // --etcd-lease-ttl: the leader's etcd lease. A new leader can be elected
  // at most about ttl + etcd's 500 ms expiry check after the leader dies.
  int64_t lease_ttl_ms = 1'000;
  // A deposed leader answers NOT_LEADER this long, then exits
  // (kDeposedExitCode) so that its supervisor restarts it as a follower.
  int64_t deposed_exit_after_ms = 2'000;
  // Runs then (leasekeeperd: exit with kDeposedExitCode); empty: the node
  // stays deposed. Not a flag.
  std::function<void()> deposed_exit;
};

// The exit code of a deposed leader (sysexits' EX_TEMPFAIL: restart me).
inline constexpr int kDeposedExitCode = 75;

// Transport security and authorization (security/tls_config.h,
// security/policy.h). All empty: plaintext, every caller may do anything.
struct SecurityConfig {
  std::string tls_cert_file;   // --tls-cert: PEM server certificate (chain)
  std::string tls_key_file;    // --tls-key: its PEM private key
  std::string client_ca_file;  // --client-ca: CA(s) of client certs; mTLS
  std::string policy_file;     // --policy: JSON grants; needs --client-ca
};

struct ServerConfig {
  std::string listen = kDefaultListenAddress;  // --listen
  // host:port of the Prometheus /metrics endpoint (plain HTTP); empty: off
  // (--metrics-listen).
  std::string metrics_listen;
  // host:port of an extra plaintext gRPC port for health probes that cannot
  // present a client certificate; LockService refuses every call on it when
  // TLS is on. Empty: none (--health-listen).
  std::string health_listen;
  SecurityConfig security;
  // How long a session whose stream ended may be resumed before the server
  // releases the client's leases and withdraws its wait (--session-grace).
  int64_t session_grace_ms = 2'000;
  Limits limits;
  RetryCacheConfig retry_cache;
  // A client that holds nothing, waits for nothing and has no session is
  // forgotten (unregistered: its age is gone, a later Acquire registers it
  // afresh) after this long (--forget-idle-clients-after); 0: never. The one
  // place the daemon departs from the contract's "a client stays
  // registered": without it a fleet that uses a fresh client id per run
  // grows the client table without bound.
  int64_t forget_idle_clients_after_ms = 86'400'000;
  // How long SIGTERM waits for in-flight calls before cancelling them.
  int64_t shutdown_grace_ms = 2'000;
  DurabilityConfig durability;
  ClusterConfig cluster;
};

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_SERVER_CONFIG_H_
