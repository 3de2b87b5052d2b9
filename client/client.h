// Client: takes leasekeeper locks as leases that look after themselves.
//
//   auto client = Client::Connect("locks.internal:7233");
//   if (!client.ok()) return client.status();
//   absl::StatusOr<Lease> lease =
//       (*client)->Acquire("exports/daily", absl::Seconds(30),
//                          /*wait=*/absl::Minutes(1));
//   if (!lease.ok()) return lease.status();   // e.g. DEADLINE_EXCEEDED: busy
//   Export(lease->Ended());                   // stops when the lease is lost
//   (*client)->Write(*lease, "part-1", rows); // fenced by lease->token()
//   // ~Lease releases the lock.
//
// A Client is one client id at the server. It opens a session stream with
// its first Acquire and keeps it for as long as it lives: one keepalive
// every third of the shortest ttl renews every lease it holds, and if the
// process dies the server releases its locks after the session grace
// (--session-grace, 2 s by default) instead of after a whole ttl. Requests
// carry the session id, so a request that arrives after the session ended
// is refused and can never leave a lock behind.
//
// Which way calls travel: while the session stream is connected, Acquire,
// TryAcquire, Lease::Renew and Lease::Release go as calls on that stream
// (the server spends no HTTP/2 stream or call setup on them: about +20%
// throughput on a one-core server). Without a session, or while its stream
// is down or resuming, they are unary calls; a call whose stream drops
// before the answer is retried at once as a unary call with the same
// request id, so it still applies once. Outcomes and errors (ErrorReasonOf
// included) are the same either way, and an Acquire given up while waiting
// on the stream is withdrawn before it returns, as a cancelled unary one is.
//
// Riding over a dropped stream or a server restart. When the session stream
// drops (a network failure, leasekeeperd restarting), the Client resumes the
// same session: at once, then after a jittered backoff (100 ms doubling to
// 1 s), each attempt waiting for the channel to reconnect, for as long as it
// takes. The exact rule for a lease:
//  1. It is lost only when the server says so: NOT_HOLDER (its ttl lapsed at
//     the server, or an operator force-released it), SESSION_ENDED (the
//     session's grace ran out before the resume, or the server restarted
//     without keeping it: kSessionLost), DEADLOCK_VICTIM, or a LockNotice of
//     one of these; or when its own deadline passes on this client's clock
//     (kExpired; counted from the send of the request that granted or last
//     renewed it, Lease guarantee 2). An unreachable server, a dropped stream,
//     a failed keepalive or a failed call never end a lease by themselves.
//  2. While the stream is down the lease is renewed by Renew calls. One that
//     fails for a transient reason is retried with the same request id (the
//     server answers a repeat from its retry cache, so it applies once, and
//     the renewal counts from the first send) until one succeeds or the
//     deadline passes. After the resume one keepalive renews every lease.
//  3. An Acquire whose stream dropped while it waited is re-issued with the
//     same request id (a unary call, retried with backoff until `wait` runs
//     out), so it is granted at most once; it queues again behind whoever
//     came meanwhile (the server withdrew the wait when the stream ended).
//  4. Lease::Renew retries a transient failure with its request id until
//     the lease's deadline. Lease::Release retries for one call timeout, then
//     hands the release (same request id) to the background, which retries
//     until the server answers it (released, or NOT_HOLDER / SESSION_ENDED:
//     gone anyway), and at once when the session is resumed.
// So an outage or restart shorter than the session grace and than each
// lease's time left, against a server that still knows the session
// afterwards, is invisible to the holder: Ended() is not signalled and the
// fencing token stays valid. ClientEvent reports kSessionInterrupted and
// kSessionResumed.
//
// Riding over a failover (a cluster: Connect("a:7233,b:7233,c:7233"), or
// one name that resolves to the nodes' addresses). Only the leader serves
// lock calls; the other nodes refuse them with UNAVAILABLE NOT_LEADER and
// the leader's address in trailing metadata (leasekeeper-leader) when they
// know it. The Client finds the leader and follows it:
//  5. Every call and the session stream go to the current endpoint. A
//     NOT_LEADER that names a leader moves them to that address at once;
//     NOT_LEADER without one, an unreachable node, or one that does not
//     answer in time (a call or a keepalive's ack within the call timeout,
//     a session's open within half of it) moves them to the next endpoint
//     of the list. A whole round of
//     endpoints that all failed is followed by the backoff above (100 ms
//     doubling to 1 s, jittered) between moves, so a cluster without a
//     leader costs a bounded rate of attempts.
//  6. A leader's death is then what a restart is under rules 1-4: the
//     session is resumed on the new leader (durable sessions replicate with
//     the log), renewals and releases keep their request ids, and a waiting
//     Acquire is re-issued there with its request id, so each applies once
//     (the retry cache replicates too). A lease survives a failover shorter
//     than the session's failover grace and its own time left.
// A Client made with Create(channel) stays on that channel: it cannot make
// channels to the addresses the nodes name; NOT_LEADER is then a transient
// failure retried there.
//
// The server's rules the caller should know (proto/leasekeeper/v1):
//  - Waiters are FIFO; every grant takes the lock's next fencing token.
//  - A client holds any number of locks but waits for at most one at a time:
//    a second Acquire/TryAcquire on the same Client while one is waiting
//    fails with FAILED_PRECONDITION (CLIENT_BUSY). Use a Client per
//    concurrent waiter.
//  - When an Acquire closes a wait-for cycle, the youngest client on it is
//    aborted: its wait fails with ABORTED and every lease of that client ends
//    with kDeadlockVictim.
//
// Thread-safety: all methods are thread-safe. Leases may outlive the Client:
// destroying the Client releases every lease it still holds (they end with
// kReleased) and closes the session.
//
// Differences from the DynamoDB lock client (seed 000), and why:
//  - Acquire waits by parking one call at the server, which answers the
//    moment the lock is granted (FIFO, at the instant the previous lease
//    ended). There is no polling, no "seen the same version for a whole
//    lease" takeover, and a crashed holder is handed over within the session
//    grace, not after a whole lease (the pain of seed 002).
//  - TryAcquire asks the server with wait_timeout_ms = 0. The server then
//    queues a request it cannot grant; TryAcquire withdraws it at once
//    (Release), so a "no" leaves nothing behind. If the lock was granted in
//    between, the withdrawal releases that grant. Should the withdrawal
//    fail, the session's end withdraws it at the latest.
//  - The holder label is per Client (optionally per Acquire) and is shown by
//    Inspect/Status/ListLocks; the server never uses it in a decision.
#ifndef LEASEKEEPER_CLIENT_CLIENT_H_
#define LEASEKEEPER_CLIENT_CLIENT_H_

#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "client/channel.h"
#include "client/lease.h"
#include "client/rpc_client.h"
#include "client/types.h"

namespace grpc {
class Channel;
}  // namespace grpc

namespace leasekeeper::client {

namespace internal {
class ChannelSet;
class ClientCore;
}  // namespace internal

// Things that happen in the background, which no call of the caller
// returns. For logs and metrics.
struct ClientEvent {
  enum class Kind {
    kSessionOpened,       // a new session is open
    kSessionResumed,      // the stream dropped and the session was resumed
    kSessionInterrupted,  // the stream dropped; resuming
    kSessionLost,         // the session ended at the server
    kRenewalFailed,       // a renewal failed and will be retried (status)
    kLeaseLost,           // a lease ended without Release (reason)
    kReleaseFailed,       // a release failed; retried in the background
  };
  Kind kind;
  std::string lock;  // empty for session events
  FencingToken token = 0;
  std::optional<LeaseEndReason> reason;
  absl::Status status;
};

struct ClientOptions {
  // The client id at the server. Empty (the default): "<hostname>/<pid>/
  // <8 random hex digits>", unique per Client. Two Clients (or processes)
  // with the same id share their leases and wait slot: do not.
  std::string client_id;
  // Shown next to every lease and wait of this Client (Inspect, Status,
  // ListLocks), e.g. a pod name; at most kMaxHolderLabelBytes. Default: none.
  std::string holder_label;
  // Tie leases to a session stream (default). false: every lease is renewed
  // by its own Renew call and a crashed process's locks pass on only when
  // their ttl lapses.
  bool use_session = true;
  // The transport deadline of each call (an Acquire's wait comes on top).
  absl::Duration call_timeout = absl::Seconds(5);
  // Keepalive period while no lease needs one sooner; a keepalive whose ack
  // does not come within call_timeout makes the client reconnect and resume.
  absl::Duration idle_keepalive_interval = absl::Seconds(5);
  // Called for each ClientEvent on the thread where it happens (a client
  // thread). Must be quick and must not call back into the Client.
  std::function<void(const ClientEvent&)> on_event;
};

struct AcquireOptions {
  LockMode mode = LockMode::kExclusive;
  // kSemaphore: the semaphore's capacity, 1..kMaxSemaphoreCapacity (use
  // AcquireSemaphore); 0 for the other modes.
  uint32_t capacity = 0;
  // Replaces ClientOptions::holder_label for this lease.
  std::optional<std::string> holder_label;
  // Stopping it abandons the Acquire: the server withdraws the waiting
  // request and Acquire returns CANCELLED.
  std::stop_token stop;
};

class Client {
 public:
  // A Client over `channel`. No I/O happens until the first call.
  // Outcomes: the client; INVALID_ARGUMENT for an over-long holder label or
  // client id, or a non-positive call timeout.
  static absl::StatusOr<std::unique_ptr<Client>> Create(
      std::shared_ptr<grpc::Channel> channel, ClientOptions options = {});
  // A Client of the service at `target`: "host:port", several separated by
  // commas ("a:7233,b:7233,c:7233", a cluster's nodes, the leader found as
  // rule 5 says), or one name that resolves to several addresses (each one
  // an endpoint; TLS then checks the certificate against the name unless
  // TlsOptions::server_name_override says otherwise). Channels are made by
  // MakeChannel with `channel_options`, lazily. Outcomes: the client; those
  // of Create; INVALID_ARGUMENT for an empty list or an empty entry.
  static absl::StatusOr<std::unique_ptr<Client>> Connect(
      absl::string_view target, const ChannelOptions& channel_options = {},
      ClientOptions options = {});

  // Releases every lease still held (they end with kReleased), closes the
  // session and stops the background threads. Blocks for at most about two
  // call timeouts.
  ~Client();

  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  const std::string& client_id() const;

  // Takes `lock` with a lease of `ttl`, waiting up to `wait` for it
  // (InfiniteDuration: until granted or options.stop).
  // Outcomes:
  //  - the Lease (it may have ended already if the answer took longer than
  //    the ttl to arrive; check IsHeld() before relying on it);
  //  - DEADLINE_EXCEEDED: not granted within `wait` (ErrorReasonOf is
  //    kWaitTimeout when the server timed it out); nothing is left queued;
  //  - CANCELLED: options.stop was requested; nothing is left queued;
  //  - INVALID_ARGUMENT: empty lock, ttl outside [kMinTtl, kMaxTtl],
  //    negative wait, or the server refused an argument;
  //  - FAILED_PRECONDITION: this Client already holds `lock` (refused
  //    locally, before any call), or the server says CLIENT_BUSY (this
  //    client id waits for some lock, or holds `lock` through another
  //    process using the same id);
  //  - ABORTED DEADLOCK_VICTIM: this client was aborted to break a deadlock;
  //    all its leases ended with kDeadlockVictim;
  //  - UNAVAILABLE: the server could not be reached (transient failures are
  //    retried with the same request id until `wait` runs out, at least for
  //    one call timeout), or the session ended while waiting;
  //  - RESOURCE_EXHAUSTED: a server limit (e.g. waiters per lock).
  absl::StatusOr<Lease> Acquire(absl::string_view lock, absl::Duration ttl,
                                absl::Duration wait,
                                const AcquireOptions& options = {});

  // Takes one of the `n` permits of the semaphore `lock` with a lease of
  // `ttl`, waiting up to `wait`: Acquire with options.mode = kSemaphore and
  // options.capacity = n (other options as given). The Lease is a lease
  // like any other, with its own fencing token.
  // Outcomes: those of Acquire, and
  //  - INVALID_ARGUMENT: n outside [1, kMaxSemaphoreCapacity] (refused
  //    locally);
  //  - FAILED_PRECONDITION CAPACITY_MISMATCH: the semaphore is held or
  //    awaited with another capacity; MODE_MISMATCH: `lock` is held or
  //    awaited as an exclusive/shared lock.
  absl::StatusOr<Lease> AcquireSemaphore(absl::string_view lock, uint32_t n,
                                         absl::Duration ttl,
                                         absl::Duration wait,
                                         AcquireOptions options = {});

  // Takes `lock` if it can be granted now, without waiting.
  // Outcomes: a Lease; nullopt if the lock is busy (held incompatibly or
  // someone is queued), with no request left in the queue; otherwise the
  // errors of Acquire (no DEADLINE_EXCEEDED for a busy lock).
  absl::StatusOr<std::optional<Lease>> TryAcquire(
      absl::string_view lock, absl::Duration ttl,
      const AcquireOptions& options = {});

  // Writes `value` under (lease.lock(), key) in the fenced store with the
  // lease's token, as a holder-checked write: the server accepts it only if
  // this client still holds that very lease at the instant of the write.
  // Outcomes: OK (accepted); FAILED_PRECONDITION if the lease has ended
  // (nothing is sent), NOT_HOLDER if the server found it ended (it lapsed,
  // or was released or forced off), or STALE_TOKEN if the store has
  // accepted a higher token for the lock (a shared holder with a newer
  // token wrote); INVALID_ARGUMENT; RESOURCE_EXHAUSTED; UNAVAILABLE.
  // The local check only avoids writes this client already knows to be
  // refused; the server's check is the one that protects.
  absl::Status Write(const Lease& lease, absl::string_view key,
                     absl::string_view value);

  // The last value accepted for (lock, key); nullopt if none.
  // Outcomes: that; INVALID_ARGUMENT; UNAVAILABLE.
  absl::StatusOr<std::optional<std::string>> Read(absl::string_view lock,
                                                  absl::string_view key);

  // The stateless calls (Inspect, Status, ListLocks, ...) on this Client's
  // channel. Calls made through it are not tied to this Client's leases.
  const RpcClient& rpc() const;

  // Testing: stops (true) or resumes (false) all background renewal,
  // keepalives included, so that leases run into their deadline while the
  // session stream stays connected.
  void PauseRenewalsForTesting(bool paused);
  // Testing: cuts the session stream and does not resume it for `duration`,
  // as if the process had hung or its network had failed; with a duration
  // longer than the server's grace the session ends there.
  void SuspendSessionForTesting(absl::Duration duration);

 private:
  explicit Client(std::shared_ptr<internal::ClientCore> core);
  // Create and Connect after their own checks.
  static absl::StatusOr<std::unique_ptr<Client>> Start(
      std::shared_ptr<internal::ChannelSet> channels, ClientOptions options);

  std::shared_ptr<internal::ClientCore> core_;
};

}  // namespace leasekeeper::client

#endif  // LEASEKEEPER_CLIENT_CLIENT_H_
