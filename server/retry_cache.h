// RetryCache: the first answer of each request that carries a request_id,
// by (client_id, request_id), bounded and expiring; RetryGate applies the
// retry rule on it (docs/design/sessions-and-retries.md).
//
// Invariants:
//  1. size() <= max_entries; the oldest inserted is evicted first.
//  2. A (client, request_id) has at most one entry.
//  3. The records kept for eviction order number at most 2 * max_entries +
//     16 (live entries plus erased ones not yet dropped).
//  4. An answered entry lives at least `ttl_ms` after its answer unless
//     evicted; a pending entry (an Acquire still waiting) never expires.
//  5. Expired entries do not wait for a lookup to leave: each Answer first
//     drops those at the front (oldest inserted), up to the first entry
//     that is pending or still in its ttl. Under a steady stream of
//     requests the cache holds about one ttl of them, not max_entries.
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

#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
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
  uint32_t capacity = 0;  // a semaphore's

  bool operator==(const Fingerprint& other) const = default;
};

using CachedAnswer =
    std::variant<absl::StatusOr<AcquireAnswer>, absl::StatusOr<RenewAnswer>,
                 absl::StatusOr<ReleaseAnswer>>;

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

// What to do with a request that carries a request_id: the one retry
// protocol of Acquire, Renew and Release (RetryCache::Admit).
enum class RetryAdmission {
  kNew,       // no live entry: apply the request (Insert, apply, Answer)
  kReplay,    // answered before: send entry->answer again, apply nothing
  kInFlight,  // the first call still waits (an Acquire): the retry takes
              // its place
  kReused,    // the id came with other arguments: refuse REQUEST_ID_REUSED
};

struct Admitted {
  RetryAdmission kind = RetryAdmission::kNew;
  RetryEntry* entry = nullptr;  // kReplay and kInFlight
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

  // Admits a request with `request_id` (REQUIRES: not empty), by its live
  // entry: none, kNew; another fingerprint, kReused; an answer, kReplay; no
  // answer yet, kInFlight if `first_call_waits` (only an Acquire can still
  // wait), else the entry is dropped (its call died with its stream) and
  // the request is kNew. Adds nothing: the caller Inserts once it applies
  // the request (after its own checks). O(1).
  Admitted Admit(absl::string_view client, absl::string_view request_id,
                 const Fingerprint& fingerprint, Tick now,
                 bool first_call_waits);

  // Drops the expired oldest entries (invariant 5), then stores the answer
  // of a pending or answered entry, restarting its ttl. No-op if the entry
  // is gone (evicted or expired). Amortized O(1).
  RetryEntry* Answer(absl::string_view client, absl::string_view request_id,
                     CachedAnswer answer, Tick now);

  // Drops the entry. Returns true if it had an answer (so its answer was
  // logged and the log must learn that it is gone). O(1).
  bool Erase(absl::string_view client, absl::string_view request_id);

  // Puts back an answered entry recovered after a restart, as the newest.
  // Its delivery is unknown, so it counts as delivered: a later cancelled
  // retry never undoes an answer that the first call may have delivered.
  // Amortized O(1).
  void Restore(absl::string_view client, absl::string_view request_id,
               Fingerprint fingerprint, CachedAnswer answer, Tick answered_at);

  // Calls fn(client, request_id, entry) for every live entry that has an
  // answer, oldest inserted first. O(size).
  template <typename Fn>
  void ForEachAnswered(Fn&& fn) const {
    for (const Record& record : order_) {
      if (record.live && record.entry.answer.has_value()) {
        fn(record.client, record.request_id, record.entry);
      }
    }
  }

  size_t size() const { return index_.size(); }

 private:
  struct Record {
    std::string client;
    std::string request_id;
    RetryEntry entry;
    bool live = true;  // false once erased or evicted (not in index_)
  };
  using KeyView = std::pair<absl::string_view, absl::string_view>;
  // Hash and equality of records by (client, request_id), so that index_
  // finds a record by a KeyView.
  struct RecordHash {
    using is_transparent = void;
    size_t operator()(const KeyView& key) const {
      return absl::Hash<KeyView>{}(key);
    }
    size_t operator()(const Record* record) const {
      return (*this)(KeyView(record->client, record->request_id));
    }
  };
  struct RecordEq {
    using is_transparent = void;
    static KeyView KeyOf(const KeyView& key) { return key; }
    static KeyView KeyOf(const Record* record) {
      return KeyView(record->client, record->request_id);
    }
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return KeyOf(a) == KeyOf(b);
    }
  };

  // Takes the record out of index_ and marks it dead (its strings freed).
  void Kill(Record& record);

  // Pops records from the front while they are dead or answered longer
  // than the ttl ago (invariant 5).
  void DropExpiredOldest(Tick now);

  RetryCacheConfig config_;
  // Insertion order, oldest first. std::deque keeps references to records
  // valid while records are added at the back and dropped at the front;
  // only a compaction moves them (and rebuilds index_).
  std::deque<Record> order_;
  absl::flat_hash_set<Record*, RecordHash, RecordEq> index_;  // live records
};

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_RETRY_CACHE_H_
