// ParkedCalls: the waiting Acquire calls the server holds, by (client,
// lock), with their wait deadlines.
//
// A call is parked when its request is queued in the core and it asked to
// wait; it leaves by Finish (granted, withdrawn, timed out, cancelled,
// shut down: the owner decides and answers it) or is replaced by a retry
// of the same request (Supersede). The table only keeps this bookkeeping;
// applying withdrawals and answering calls are the owner's (CoreOwner),
// which asks "which wait ends first, and is it due at now?" (NextDue).
//
// Time is a parameter: deadlines are ticks the caller computes.
//
// Thread-safety: none; the owner guards it (CoreOwner's core mutex).
//
// Invariants (checked by CheckInvariants):
//  1. Each parked call has exactly one entry in the deadline index, at its
//     deadline; the index has nothing else.
//  2. Deadlines are ordered by (deadline, parking order): two waits ending
//     at the same tick time out in the order they were parked.
//
// Cost: O(log parked calls) per method, except Keys and CheckInvariants
// (O(parked calls)).
#ifndef LEASEKEEPER_SERVER_PARKED_CALLS_H_
#define LEASEKEEPER_SERVER_PARKED_CALLS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "core/types.h"
#include "server/answers.h"

namespace leasekeeper::server {

// The answer handed to an Acquire call, plus bookkeeping the call gives back
// in CoreOwner::ReportAcquireCall.
struct AcquireCallAnswer {
  absl::StatusOr<AcquireAnswer> result;
  // True if this answer is the retry-cache entry's answer and was counted
  // as one of its deliveries in flight.
  bool tracked = false;
};

// A waiting Acquire call (the gRPC layer's reactor).
class PendingAcquire {
 public:
  // Delivers the call's answer. Called exactly once for every call handed
  // to CoreOwner::Acquire, once the answer is durable (CoreOwner's
  // "Answers"): from any thread, possibly before Acquire returns, never
  // under the core mutex.
  virtual void Complete(AcquireCallAnswer reply) = 0;

 protected:
  ~PendingAcquire() = default;
};

class ParkedCalls {
 public:
  using Key = std::pair<std::string, std::string>;  // (client, lock)
  struct Call {
    PendingAcquire* call = nullptr;
    std::string request_id{};  // empty: not idempotent
    Tick queued_at = 0;
    Tick deadline = 0;
  };

  ParkedCalls() = default;
  ParkedCalls(const ParkedCalls&) = delete;
  ParkedCalls& operator=(const ParkedCalls&) = delete;

  // The parked call for `key`, or nullptr.
  const Call* Find(const Key& key) const;
  bool contains(const Key& key) const { return calls_.contains(key); }

  // Parks `call`, waiting until `deadline`. REQUIRES: !contains(key).
  void Park(const Key& key, PendingAcquire* call, std::string request_id,
            Tick queued_at, Tick deadline);

  // A retry of the parked request takes its place, waiting until
  // `deadline` (its wait starts again, queued_at stays). Returns the call it
  // replaced (the owner answers it "superseded"). REQUIRES: contains(key).
  PendingAcquire* Supersede(const Key& key, PendingAcquire* call,
                            Tick deadline);

  // Removes the parked call and returns it; nullopt if there was none.
  std::optional<Call> Finish(const Key& key);

  // The earliest wait deadline; kMaxTick if none.
  Tick NextDeadline() const;
  // The call whose wait ends first (invariant 2), if its deadline is
  // <= now; nullopt otherwise. It stays until Finish.
  std::optional<Key> NextDue(Tick now) const;

  // Every parked key, in no particular order (shutdown withdraws them all).
  std::vector<Key> Keys() const;

  size_t size() const { return calls_.size(); }

  absl::Status CheckInvariants() const;

 private:
  struct Slot {
    Call call;
    uint64_t sequence = 0;  // parking order, the tie-break of deadlines_
  };
  using DeadlineKey = std::pair<Tick, uint64_t>;

  absl::flat_hash_map<Key, Slot> calls_;
  absl::btree_map<DeadlineKey, Key> deadlines_;
  uint64_t next_sequence_ = 1;
};

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_PARKED_CALLS_H_
