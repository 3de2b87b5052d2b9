// Vocabulary of the leasekeeper client library: fencing tokens, lock modes,
// why a lease ended, and the limits the server enforces on what a client
// sends.
//
// The client links only the generated protocol code, never core/, so these
// types are its own (in namespace leasekeeper::client); they carry the same
// meaning as the core's and the proto's.
//
// Thread-safety: plain values and pure functions.
#ifndef LEASEKEEPER_CLIENT_TYPES_H_
#define LEASEKEEPER_CLIENT_TYPES_H_

#include <cstddef>
#include <cstdint>
#include <optional>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace leasekeeper::client {

// A per-lock fencing token: every grant of a lock takes the next one, from 1
// up; renewals keep it. A newer holder always has a higher token, so a store
// that refuses tokens below the highest it accepted refuses a stale holder.
using FencingToken = uint64_t;

// A lock is held by one kExclusive lease, or by any number of kShared ones,
// or by at most N kSemaphore leases (a counting semaphore of capacity N,
// 1..kMaxSemaphoreCapacity, fixed by the acquire that found it idle).
enum class LockMode { kExclusive, kShared, kSemaphore };

inline constexpr uint32_t kMaxSemaphoreCapacity = 65535;

// "exclusive" / "shared" / "semaphore".
absl::string_view LockModeName(LockMode mode);
// Inverse of LockModeName; nullopt for any other spelling.
std::optional<LockMode> ParseLockMode(absl::string_view name);

// Why a lease is no longer held. Losing a lease is final: acquire the lock
// again for a new lease (with a new, higher token).
enum class LeaseEndReason {
  // Released by Lease::Release(), the Lease's destructor or the Client's
  // shutdown.
  kReleased,
  // The server says this client does not hold the lock any more: the lease
  // lapsed there (a LEASE_LAPSED notice), or the server holds the lock for
  // this client under another grant (a renewal answered another token).
  kNotHolder,
  // The client's own deadline passed without a successful renewal. The
  // deadline is counted on the client's monotonic clock from the moment the
  // last successful grant or renewal was sent, so it passes no later than
  // the lease ends at the server (if both clocks run at about the same rate).
  kExpired,
  // The server aborted this client to break a wait-for cycle (deadlock);
  // every lease of the client ended with it.
  kDeadlockVictim,
  // The client's session ended at the server (it was cut for longer than
  // the server's session grace, replaced by a newer session of the same
  // client id, or the server restarted), which released every lease of the
  // session.
  kSessionLost,
  // The server ended the lease before it could have lapsed: a renewal or
  // the release was answered NOT_HOLDER while the client's deadline had
  // not passed (the server's lease lasts longer than that deadline), so
  // someone else released it: an operator's ForceRelease, or a Release
  // with this client's id from elsewhere. The server does not tell the
  // holder; the next keepalive's count of renewed leases reveals it.
  kForced,
};

// "released", "not_holder", "expired", "deadlock_victim", "session_lost",
// "forced": the words leasekeeper-ctl and the Python client use too.
absl::string_view LeaseEndReasonName(LeaseEndReason reason);

// Lease durations the server accepts: 1 ms to 24 h. Background renewal runs
// every third of the ttl and retries no later than a sixth, so ttls below a
// few hundred milliseconds leave little room for a slow network.
inline constexpr absl::Duration kMinTtl = absl::Milliseconds(1);
inline constexpr absl::Duration kMaxTtl = absl::Hours(24);
// The longest wait a single Acquire call can ask the server for; longer
// waits are made of several calls.
inline constexpr absl::Duration kMaxServerWait = absl::Hours(24);

// Default server limits (each a leasekeeperd flag). The client checks
// nothing against them except the holder label; the server answers
// RESOURCE_EXHAUSTED for anything longer.
inline constexpr size_t kMaxClientIdBytes = 256;
inline constexpr size_t kMaxLockNameBytes = 256;
inline constexpr size_t kMaxHolderLabelBytes = 256;

}  // namespace leasekeeper::client

#endif  // LEASEKEEPER_CLIENT_TYPES_H_
