// Vocabulary types shared by every layer of leasekeeper.
//
// Thread-safety: plain values; safe to copy between threads.
#ifndef LEASEKEEPER_CORE_TYPES_H_
#define LEASEKEEPER_CORE_TYPES_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace leasekeeper {

// A point in time, in the unit chosen by the owner of the core: the replay
// uses the contract's seconds, leasekeeperd uses monotonic milliseconds.
// The core never reads a clock; every operation carries its Tick.
using Tick = int64_t;

// Ticks are bounded so that `now + ttl` can never overflow.
inline constexpr Tick kMaxTick = Tick{1} << 62;
inline constexpr Tick kMinTick = -kMaxTick;

// A per-lock fencing token. Tokens start at 1, rise by one per grant of that
// lock and are never issued twice. Unsigned so that the FencedStore can take
// any client-supplied token >= 1 without overflow.
using FencingToken = uint64_t;

// kExclusive and kShared are the contract's modes. kSemaphore is the
// daemon's counting semaphore (a lock held by at most its capacity of
// holders at once, see LockTable); the contract knows no such mode, so the
// replay never produces it. One byte: a lease and a queue entry in the
// LockTable keep their semaphore's capacity beside it.
enum class LockMode : uint8_t { kExclusive, kShared, kSemaphore };

// "exclusive" / "shared" (the contract's spelling) / "semaphore".
absl::string_view LockModeName(LockMode mode);
// The contract's modes only: "exclusive" or "shared"; nullopt for any other
// spelling, "semaphore" included (the replay parses modes with it).
std::optional<LockMode> ParseLockMode(absl::string_view name);

// A semaphore's capacity is in [1, kMaxSemaphoreCapacity] (it fits 16 bits).
inline constexpr uint32_t kMaxSemaphoreCapacity = 65535;

// Limits of the core itself. Everything else (name sizes, waiters per lock)
// is a server policy and lives in the server's config.
// The largest max_ttl the core accepts: a lease keeps its ttl in 32 bits
// (docs/design/core-rules.md, "Memory per held lock"). A larger
// CoreConfig::max_ttl is treated as this value.
inline constexpr int64_t kMaxCoreTtl = std::numeric_limits<int32_t>::max();

struct CoreConfig {
  // A ttl is valid in [1, max_ttl]. The contract's 86400 seconds; the server
  // sets 86,400,000 for milliseconds. At most kMaxCoreTtl.
  int64_t max_ttl = 86400;
  // Whether LockTable keeps Events for TakeEvents(). The server needs them;
  // the replay does not, and skips their cost.
  bool record_events = true;
  // Whether LockTable keeps its index of idle clients (OldestIdleClient),
  // for a daemon that forgets them. The replay keeps the contract (a client
  // stays registered) and skips the index.
  bool track_idle_clients = false;
};

}  // namespace leasekeeper

#endif  // LEASEKEEPER_CORE_TYPES_H_
