// RpcClient: one typed call per LockService RPC, and nothing else: plain
// structs in and out, no session, no renewal, no state. leasekeeper-ctl's
// one-shot commands use it, and Client builds its leases on it.
//
// Every call runs with the deadline CallOptions::timeout (for all attempts
// together) and returns the server's answer or error as listed per call
// (and in proto/leasekeeper/v1/lock_service.proto), mapped by
// FromGrpcStatus; or CANCELLED once CallOptions::cancel is stopped (a
// waiting Acquire is withdrawn by the server), UNAVAILABLE when the server
// cannot be reached, DEADLINE_EXCEEDED when the timeout passes. A unary
// call rides over a failover within its timeout: on NOT_LEADER, a refused
// connection or (for a call that may be repeated) another transport
// failure, it goes again, to the leader a node names or the next
// endpoint, with backoff, until the timeout; then it returns the last
// answer, naming its endpoint and the number of attempts. A call without a
// request id that may have reached the leader is not repeated. How:
// internal/call_retry.h, docs/design/clients.md ("One-shot calls over a
// failover").
//
// Thread-safety: thread-safe; calls may run concurrently from any thread.
#ifndef LEASEKEEPER_CLIENT_RPC_CLIENT_H_
#define LEASEKEEPER_CLIENT_RPC_CLIENT_H_

#include <grpcpp/channel.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "client/channel.h"
#include "client/types.h"
#include "leasekeeper/v1/lock_service.grpc.pb.h"

namespace leasekeeper::client {

struct CallOptions {
  // The call's transport deadline, counted from its start. Infinite: none.
  absl::Duration timeout = absl::Seconds(10);
  // Stopping it cancels the call.
  std::stop_token cancel;
  // Wait (within the timeout) for the channel to connect instead of failing
  // at once with UNAVAILABLE while it cannot. For retries: a call that waits
  // also drives the connection attempt, which a call that fails at once
  // does not (gRPC may then not notice the server is back for seconds).
  bool wait_for_ready = false;
};

struct AcquireCall {
  std::string client_id;
  std::string lock;
  absl::Duration ttl;
  LockMode mode = LockMode::kExclusive;
  // kSemaphore: the semaphore's capacity (1..kMaxSemaphoreCapacity); 0 for
  // the other modes.
  uint32_t capacity = 0;
  // Zero: answer at once, granted or queued (a queued request STAYS queued;
  // Release withdraws it). Positive: wait up to this long for a grant (at
  // most kMaxServerWait; rounded down to whole milliseconds, at least 1 ms).
  absl::Duration wait = absl::ZeroDuration();
  // Optional idempotency key: a retry with the same key gets the first
  // call's answer instead of acquiring twice.
  std::string request_id;
  // Optional: the session the request belongs to (see Client).
  std::string session_id;
  // Optional label for humans, shown by Inspect, Status and ListLocks.
  std::string holder_label;
};

enum class AcquireOutcome {
  kGranted,    // the caller holds the lock
  kQueued,     // wait == 0 only: the request waits at `position`
  kWithdrawn,  // wait > 0 only: the wait ended without a grant
};

enum class WithdrawReason {
  kUnspecified,
  kReleasedByClient,  // the client's own Release withdrew it
  kSessionEnded,      // the client's session ended
};

struct AcquireResult {
  AcquireOutcome outcome = AcquireOutcome::kGranted;
  // kGranted: the fencing token, the time left on the lease when the server
  // produced the answer, and how long the request waited in the queue.
  FencingToken token = 0;
  absl::Duration ttl = absl::ZeroDuration();
  absl::Duration waited = absl::ZeroDuration();
  // kQueued: 1 = next in line.
  int64_t position = 0;
  // kWithdrawn.
  WithdrawReason withdraw_reason = WithdrawReason::kUnspecified;
  // Clients aborted as deadlock victims to make room, in abort order.
  std::vector<std::string> aborted_clients;
};

struct RenewCall {
  std::string client_id;
  std::string lock;
  absl::Duration ttl;
  std::string request_id;
  std::string session_id;
};

struct RenewResult {
  FencingToken token = 0;
  // The lease lasts this long from the moment of the answer.
  absl::Duration ttl = absl::ZeroDuration();
};

struct ReleaseCall {
  std::string client_id;
  std::string lock;
  std::string request_id;
  std::string session_id;
};

// A write to the fenced store.
struct WriteCall {
  std::string lock;
  std::string key;
  std::string value;
  FencingToken token = 0;
  // The writer. With require_held the server accepts the write only if this
  // client holds a live lease on `lock` with exactly `token` at that
  // instant; without it only the token rule protects the store (a holder
  // that stalled past its lease can still write before its successor does).
  std::string client_id;
  bool require_held = true;
};

// A delete from the fenced store: always holder-checked (the server
// accepts it only if client_id holds a live lease on `lock` with exactly
// `token`).
struct DeleteCall {
  std::string lock;
  std::string key;
  FencingToken token = 0;
  std::string client_id;
};

enum class ReleaseOutcome {
  kReleased,   // the caller held the lock; it passed on
  kWithdrawn,  // the caller waited; its request left the queue
};

// One lease, as Inspect, Status and ListLocks show it.
struct HolderInfo {
  std::string client_id;
  std::string lock;
  LockMode mode = LockMode::kExclusive;
  FencingToken token = 0;
  // Time left on the lease when the server answered (>= 1 ms).
  absl::Duration expires_in = absl::ZeroDuration();
  // The server's wall-clock rendering of the expiry, for humans only: never
  // compute with it (wall clocks jump). InfinitePast when not sent.
  absl::Time expires_at_wall = absl::InfinitePast();
  std::string holder_label;
};

// One queued request.
struct WaiterInfo {
  std::string client_id;
  LockMode mode = LockMode::kExclusive;
  // The lease duration it gets when granted.
  absl::Duration ttl = absl::ZeroDuration();
  int64_t position = 0;  // 1 = next in line
  std::string holder_label;
};

struct LockInfo {
  std::vector<HolderInfo> holders;  // by token, lowest first
  std::vector<WaiterInfo> queue;    // oldest first
  uint32_t capacity = 0;  // a semaphore's, while held or awaited; else 0
};

enum class SessionState {
  kUnspecified,
  kNone,   // the client has no session
  kOpen,   // its session stream is connected
  kGrace,  // its stream ended; the session ends after the grace
};
absl::string_view SessionStateName(SessionState state);  // "none", ...

struct ClientStatus {
  bool registered = false;
  uint64_t age = 0;               // registration number; 0 if unregistered
  std::vector<HolderInfo> holds;  // by lock name
  std::string waiting_for;        // empty when not waiting
  SessionState session = SessionState::kUnspecified;
};

struct LockSummary {
  std::string lock;
  std::vector<HolderInfo> holders;  // by token, lowest first
  int64_t queue_length = 0;
  uint32_t capacity = 0;  // as LockInfo::capacity
};

struct LockPage {
  std::vector<LockSummary> locks;  // ascending by name
  std::string next_page_token;     // empty on the last page
};

// A page of a lock's key names in the fenced store (ListKeys).
struct KeysPage {
  std::vector<std::string> keys;  // ascending in byte order
  std::string next_after;         // empty on the last page
};

// A cluster member's role (leasekeeper.v1.MemberRole).
enum class MemberRole { kUnspecified, kLeader, kFollower, kCatchingUp,
                        kDisconnected };
absl::string_view MemberRoleName(MemberRole role);  // "leader", ...

struct ClusterMemberInfo {
  std::string node_id;
  std::string advertise;  // host:port clients use
  MemberRole role = MemberRole::kUnspecified;
  uint64_t applied_position = 0;
  uint64_t lag = 0;  // records behind the leader's last appended position
};

// The answering node's view of its cluster (ClusterStatus). A single node
// answers cluster "", role leader, itself as leader, epoch 0.
struct ClusterInfo {
  std::string cluster;
  std::string node_id;
  MemberRole role = MemberRole::kUnspecified;
  std::string leader_id;       // empty: no leader known
  std::string leader_address;  // empty: no leader known
  uint64_t epoch = 0;
  uint64_t last_position = 0;
  std::vector<ClusterMemberInfo> members;
  // Why the answering node cannot use etcd; empty while it can.
  std::string etcd_error;
};

namespace internal {
class ChannelSet;
}  // namespace internal

// Watch: what to follow, and what the stream says.
struct WatchCall {
  // One lock (non-empty), or with `prefix` every lock whose name starts
  // with it (empty: every lock).
  std::string name;
  bool prefix = false;
  // How long the stream's opening may take (bounded by the call's
  // timeout too): until its first message a refused or failed attempt
  // goes again, to the leader a node names or the next endpoint, as a
  // read does.
  absl::Duration open_within = absl::Seconds(10);
};

enum class WatchEventKind {
  kUnknown,        // a kind this client does not know (a newer server)
  kGranted,        // client_id holds the lock: mode, token, ttl
  kQueued,         // client_id joined the queue: mode, ttl asked for
  kReleased,       // client_id's lease (token) ended by a release
  kLapsed,         // client_id's lease (token) reached its end
  kWithdrawn,      // client_id's wait ended without a grant
  kForcedRelease,  // an operator ended client_id's lease (token)
  kDeadlockAbort,  // client_id lost this lease (token > 0) or wait (0)
};
// "granted", "queued", "released", "lapsed", "withdrawn", "forced-release",
// "deadlock-abort", "unknown".
absl::string_view WatchEventKindName(WatchEventKind kind);

struct WatchEvent {
  WatchEventKind kind = WatchEventKind::kUnknown;
  std::string lock;
  std::string client_id;
  LockMode mode = LockMode::kExclusive;
  FencingToken token = 0;
  absl::Duration ttl = absl::ZeroDuration();
  // The server's wall-clock rendering of the change, for humans only;
  // InfinitePast when not sent. Order events by `sequence`.
  absl::Time time = absl::InfinitePast();
  uint64_t sequence = 0;
};

// One message of a Watch stream: first the snapshot (kCurrent per lock in
// use, then kSynced), then kEvent per change.
struct WatchUpdate {
  enum class Kind { kCurrent, kSynced, kEvent };
  Kind kind = Kind::kEvent;
  std::string lock;      // kCurrent
  LockInfo current;      // kCurrent: its holders and queue
  uint64_t sequence = 0;  // kSynced: the last event before the snapshot
  int64_t locks = 0;      // kSynced: how many kCurrent came before
  WatchEvent event;       // kEvent
};

class RpcClient {
 public:
  // Over one channel, which it never leaves. REQUIRES: channel != nullptr.
  explicit RpcClient(std::shared_ptr<grpc::Channel> channel);
  // Over a ChannelSet (the client library's own). REQUIRES: not null.
  explicit RpcClient(std::shared_ptr<internal::ChannelSet> channels);
  // Over the service at `endpoints`: "host:port", "a,b,c", or one name that
  // resolves to several addresses (each then an endpoint; with TLS the
  // certificate is checked against the name). Channels are made with
  // `options`, lazily. Outcomes: the client; INVALID_ARGUMENT for an empty
  // list or entry, or an entry that is not a server address
  // (ParseEndpoints: `invalid server address "ADDR": REASON`).
  static absl::StatusOr<std::unique_ptr<RpcClient>> Connect(
      absl::string_view endpoints, const ChannelOptions& options = {});
  ~RpcClient();

  RpcClient(const RpcClient&) = delete;
  RpcClient& operator=(const RpcClient&) = delete;

  // Outcomes: granted, queued (wait == 0), withdrawn (wait > 0);
  // INVALID_ARGUMENT (INVALID_ARGUMENTS, INVALID_TTL, REQUEST_ID_REUSED);
  // RESOURCE_EXHAUSTED LIMIT_EXCEEDED; FAILED_PRECONDITION CLIENT_BUSY or
  // SESSION_ENDED; ABORTED DEADLOCK_VICTIM (DeadlockVictimsOf lists them);
  // DEADLINE_EXCEEDED WAIT_TIMEOUT (withdrawn); UNAVAILABLE SHUTTING_DOWN;
  // CANCELLED SUPERSEDED_BY_RETRY. Give a waiting call a timeout longer
  // than its wait.
  absl::StatusOr<AcquireResult> Acquire(const AcquireCall& call,
                                        const CallOptions& options = {}) const;

  // Outcomes: the renewed lease; INVALID_ARGUMENT; FAILED_PRECONDITION
  // NOT_HOLDER (including a lease that already lapsed) or SESSION_ENDED.
  absl::StatusOr<RenewResult> Renew(const RenewCall& call,
                                    const CallOptions& options = {}) const;

  // Outcomes: released or withdrawn; INVALID_ARGUMENT; FAILED_PRECONDITION
  // NOT_HOLDER (neither holds nor waits) or SESSION_ENDED.
  absl::StatusOr<ReleaseOutcome> Release(const ReleaseCall& call,
                                         const CallOptions& options = {}) const;

  // Writes call.value under (call.lock, call.key) if call.token was issued
  // for the lock, is at least the highest token the store accepted for it
  // and, with require_held, is the token of call.client_id's live lease.
  // Outcomes: OK; INVALID_ARGUMENT (also: require_held without a client
  // id); FAILED_PRECONDITION TOKEN_NOT_ISSUED, NOT_HOLDER or STALE_TOKEN
  // (nothing changed); RESOURCE_EXHAUSTED; PERMISSION_DENIED.
  absl::Status Write(const WriteCall& call,
                     const CallOptions& options = {}) const;

  // The last accepted value for (lock, key), or nullopt if none was ever
  // accepted. Outcomes: that; INVALID_ARGUMENT.
  absl::StatusOr<std::optional<std::string>> Read(
      absl::string_view lock, absl::string_view key,
      const CallOptions& options = {}) const;

  // Deletes (call.lock, call.key) with Write's checks under require_held,
  // in Write's order. An accepted delete raises the store's mark to
  // call.token as a write does. Outcomes: whether the key had a value (false:
  // nothing to delete, accepted all the same); INVALID_ARGUMENT (also: no
  // client id); FAILED_PRECONDITION TOKEN_NOT_ISSUED, NOT_HOLDER or
  // STALE_TOKEN (nothing changed); RESOURCE_EXHAUSTED; PERMISSION_DENIED.
  absl::StatusOr<bool> Delete(const DeleteCall& call,
                              const CallOptions& options = {}) const;

  // One page of `lock`'s key names after `after` (empty: from the first),
  // ascending; no token needed. limit 0 means the server's default (100),
  // above 1,000 is 1,000. Outcomes: the page; INVALID_ARGUMENT (an empty
  // lock, a negative limit); RESOURCE_EXHAUSTED; PERMISSION_DENIED.
  absl::StatusOr<KeysPage> ListKeys(absl::string_view lock,
                                    absl::string_view after, int32_t limit,
                                    const CallOptions& options = {}) const;

  // A lock's holders and queue (two empty lists for a lock nobody uses),
  // every page of them: one call per page of the server's default size,
  // until the last. Pages are separate reads, so entries that change in
  // between may be missed or differ from a single snapshot. Cost: one call
  // per page. Outcomes: that; INVALID_ARGUMENT (an empty name);
  // PERMISSION_DENIED.
  absl::StatusOr<LockInfo> Inspect(absl::string_view lock,
                                   const CallOptions& options = {}) const;

  // A client's age, leases, wait and session state, following the pages of
  // leases as Inspect does. Outcomes: that (a client the server does not
  // know is not registered and holds nothing); INVALID_ARGUMENT (an empty
  // id); PERMISSION_DENIED.
  absl::StatusOr<ClientStatus> Status(absl::string_view client_id,
                                      const CallOptions& options = {}) const;

  // One page of the locks that have a holder or a waiter, ascending by name,
  // only those starting with `prefix`. page_size 0 means the server's
  // default (100). Outcomes: the page; INVALID_ARGUMENT.
  absl::StatusOr<LockPage> ListLocks(absl::string_view prefix,
                                     int32_t page_size,
                                     absl::string_view page_token,
                                     const CallOptions& options = {}) const;

  // Every page of ListLocks, up to `max_locks` locks (each page its own
  // call with `options`). Cost: one call per 1,000 locks. Outcomes: those of
  // ListLocks.
  absl::StatusOr<std::vector<LockSummary>> ListAllLocks(
      absl::string_view prefix, size_t max_locks,
      const CallOptions& options = {}) const;

  // The answering node's view of its cluster. Answered by every node, so
  // it is never redirected. Outcomes: that; UNIMPLEMENTED (an older daemon).
  absl::StatusOr<ClusterInfo> ClusterStatus(
      const CallOptions& options = {}) const;

  // Runs `invoke` (a call on the given stub with the given context) as this
  // class's own calls run: deadline, cancel, the endpoint choice, the
  // retry over a failover. For the RPCs this class leaves to its users
  // (ServerInfo, ForceRelease). Without `repeatable` (repeating the call
  // is harmless: a read, or a call with a request id) only refusals that
  // applied nothing (NOT_LEADER, a refused connection) go again.
  // Outcomes: what `invoke` returned, as FromGrpcStatus maps it.
  absl::Status CallWith(
      const CallOptions& options, bool repeatable,
      const std::function<grpc::Status(leasekeeper::v1::LockService::Stub&,
                                       grpc::ClientContext*)>& invoke) const;

  // The stub of the endpoint calls go to now. Calls made on it directly do
  // not follow NOT_LEADER: use CallWith. Valid for this RpcClient's life.
  leasekeeper::v1::LockService::Stub& stub() const;
  // The endpoint choice, shared with Sessions on this client.
  internal::ChannelSet& channels() const { return *channels_; }

  // Follows call.name (see WatchCall), calling `on_update` on this thread
  // for each message until it returns false (the call is then cancelled
  // and Watch returns OK) or the stream ends. options.timeout bounds the
  // whole stream (InfiniteDuration: none); stopping options.cancel ends
  // it. Its opening rides over a failover (call.open_within); a stream
  // that breaks once it runs returns the failure: the proto has no
  // position to resume from, so watch again for a fresh snapshot.
  // Outcomes: OK (on_update stopped it); RESOURCE_EXHAUSTED
  // WATCH_FELL_BEHIND (this client read too slowly and was cut: watch
  // again for a fresh snapshot); INVALID_ARGUMENT; RESOURCE_EXHAUSTED
  // LIMIT_EXCEEDED (max-watchers, max-prefix-watchers, a name too long);
  // UNAVAILABLE SHUTTING_DOWN or a store failure; PERMISSION_DENIED;
  // CANCELLED (options.cancel); transport failures.
  absl::Status Watch(const WatchCall& call,
                     const std::function<bool(const WatchUpdate&)>& on_update,
                     const CallOptions& options = {}) const;

 private:
  std::shared_ptr<internal::ChannelSet> channels_;
};

}  // namespace leasekeeper::client

#endif  // LEASEKEEPER_CLIENT_RPC_CLIENT_H_
