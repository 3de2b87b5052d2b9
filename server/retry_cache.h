// RetryCache: the first answer of each idempotent request, by
// (client_id, request_id).
//
// Acquire, Renew and Release may carry a request_id. The first call with a
// given (client, request_id) is applied and its answer stored here; a retry
// with the same pair gets that answer instead of being applied again, so a
// lost response never turns into "client busy" or "not holder". A pending
// entry (no answer yet) belongs to an Acquire that is still waiting.
//
// Bounds: at most `max_entries` entries; the oldest inserted is evicted
// first when a new one needs room. An entry with an answer is kept at least
// `ttl_ms` after the answer was stored, unless evicted for room; after that
// Find treats it as absent. Pending entries do not expire.
//
// Invariants:
//  1. size() <= max_entries.
//  2. A (client, request_id) has at most one entry.
//
// Thread-safety: none; CoreOwner guards it with the core mutex.
#ifndef LEASEKEEPER_SERVER_RETRY_CACHE_H_
#define LEASEKEEPER_SERVER_RETRY_CACHE_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/lock_table.h"
#include "core/types.h"
#include "server/answers.h"
#include "server/server_config.h"

namespace leasekeeper::server {

// The arguments a retry must repeat. A request_id reused with different
// ones is refused (REQUEST_ID_REUSED) rather than answered wrongly.
struct Fingerprint {
  enum class Method { kAcquire, kRenew, kRelease };
  Method method = Method::kAcquire;
  std::string lock{};
  int64_t ttl_ms = 0;
  LockMode mode = LockMode::kExclusive;

  bool operator==(const Fingerprint& other) const = default;
};

using CachedAnswer = std::variant<AcquireResult, absl::StatusOr<RenewAnswer>,
                                  absl::StatusOr<ReleaseOutcome>>;

struct RetryEntry {
  Fingerprint fingerprint{};
  std::optional<CachedAnswer> answer{};  // nullopt: an Acquire still waiting
  Tick answered_at = 0;
  // Acquire only: calls that were handed this answer and have not finished
  // yet, and whether any of them delivered it. Used to undo a grant that no
  // call managed to deliver.
  int deliveries_in_flight = 0;
  bool delivered = false;
};

class RetryCache {
 public:
  explicit RetryCache(RetryCacheConfig config);
  RetryCache(const RetryCache&) = delete;
  RetryCache& operator=(const RetryCache&) = delete;

  // The live entry for (client, request_id), or nullptr if there is none or
  // its answer is older than the ttl (then it is dropped). O(1).
  RetryEntry* Find(absl::string_view client, absl::string_view request_id,
                   Tick now);

  // Adds a pending entry. REQUIRES: no live entry for the pair. Evicts the
  // oldest entries if the cache is full. Amortized O(1).
  RetryEntry& Insert(absl::string_view client, absl::string_view request_id,
                     Fingerprint fingerprint);

  // Stores the answer of a pending or answered entry, restarting its ttl.
  // No-op if the entry is gone (evicted). O(1).
  RetryEntry* Answer(absl::string_view client, absl::string_view request_id,
                     CachedAnswer answer, Tick now);

  void Erase(absl::string_view client, absl::string_view request_id);

  size_t size() const { return entries_.size(); }

 private:
  using Key = std::pair<std::string, std::string>;
  struct Slot {
    RetryEntry entry{};
    uint64_t generation = 0;  // matches order_ to skip erased slots
  };

  RetryCacheConfig config_;
  uint64_t next_generation_ = 1;
  absl::flat_hash_map<Key, Slot> entries_;
  // Insertion order, for eviction; may hold stale (erased) keys.
  std::deque<std::pair<Key, uint64_t>> order_;
};

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_RETRY_CACHE_H_
