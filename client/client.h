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
// A Client is one client id at the server, with one session stream that
// renews all its leases and rides over dropped streams, restarts and
// failovers; when a lease is lost, and why: docs/design/clients.md.
// Thread-safety: all methods are thread-safe; Leases may outlive the Client.
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
  // A Client over `channel`. No I/O happens until the first call. It stays
  // on that channel: a NOT_LEADER refusal is a transient failure retried
  // there, since it cannot make channels to the addresses the nodes name.
  // Outcomes: the client; INVALID_ARGUMENT for an over-long holder label or
  // client id, or a non-positive call timeout.
  static absl::StatusOr<std::unique_ptr<Client>> Create(
      std::shared_ptr<grpc::Channel> channel, ClientOptions options = {});
  // A Client of the service at `target`: "host:port", several separated by
  // commas ("a:7233,b:7233,c:7233", a cluster's nodes: calls and the
  // session follow the leader, moving at once to the one a NOT_LEADER
  // refusal names, else to the next endpoint, with a backoff after a whole
  // round failed), or one name that resolves to several addresses (each one
  // an endpoint; TLS then checks the certificate against the name unless
  // TlsOptions::server_name_override says otherwise). Channels are made by
  // MakeChannel with `channel_options`, lazily. Outcomes: the client; those
  // of Create; INVALID_ARGUMENT for an empty list or entry, or an entry
  // that is not a server address: `invalid server address "ADDR": REASON`
  // (ParseEndpoints: a port outside 1..65535, no port, an http:// URL, ...).
  static absl::StatusOr<std::unique_ptr<Client>> Connect(
      absl::string_view target, const ChannelOptions& channel_options = {},
      ClientOptions options = {});

  // Releases every lease still held (they end with kReleased), closes the
  // session (the server releases what is left) and stops the background
  // threads. Blocks for at most about two call timeouts.
  ~Client();

  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  const std::string& client_id() const;

  // Takes `lock` with a lease of `ttl`, waiting up to `wait` for it
  // (InfiniteDuration: until granted or options.stop). Waiters are FIFO;
  // every grant takes the lock's next fencing token. A Client waits for at
  // most one lock at a time: use a Client per concurrent waiter. An Acquire
  // whose session stream drops while it waits is re-issued with the same
  // request id, so it is granted at most once.
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
  //  - ABORTED DEADLOCK_VICTIM: this client, the youngest in a deadlock its
  //    request or another's closed, was aborted to break it; all its leases
  //    ended with kDeadlockVictim;
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

  // Takes `lock` if it can be granted now, without waiting (the server
  // queues the request, and a busy answer is withdrawn at once; should the
  // withdrawal fail, the session's end withdraws it at the latest).
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

  // Deletes (lease.lock(), key) from the fenced store with the lease's
  // token, holder-checked as Write is (the same local check first, the
  // same server checks). The accepted delete fences the lock as a write
  // does. Outcomes: whether the key had a value (false: nothing to delete,
  // which is not an error); the errors of Write.
  absl::StatusOr<bool> Delete(const Lease& lease, absl::string_view key);

  // One page of `lock`'s key names after `after` (empty: from the first),
  // ascending; pass next_after for the next page. limit 0: the server's
  // default (100). Outcomes: the page; INVALID_ARGUMENT; UNAVAILABLE.
  absl::StatusOr<KeysPage> ListKeys(absl::string_view lock,
                                    absl::string_view after = "",
                                    int32_t limit = 0);

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
