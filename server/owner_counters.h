// OwnerCounters: the cumulative counts and the Acquire wait histogram behind
// leasekeeperd's metrics (server/server_metrics.h), fed by CoreOwner with
// every operation the core applied and every event it reported.
// Thread-safety: none; CoreOwner guards it with the core mutex.
#ifndef LEASEKEEPER_SERVER_OWNER_COUNTERS_H_
#define LEASEKEEPER_SERVER_OWNER_COUNTERS_H_

#include <array>
#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "core/state_machine.h"

namespace leasekeeper::server {

class OwnerCounters {
 public:
  // Counts since the process started. Every operation the core applied is
  // counted once: a retry answered from the retry cache is not.
  struct Counts {
    uint64_t acquired_at_once = 0;    // Acquire granted at once
    uint64_t acquired_queued = 0;     // Acquire queued
    uint64_t acquired_deadlock = 0;   // Acquire whose caller was the victim
    uint64_t granted_from_queue = 0;  // waiters granted later
    uint64_t lapses = 0;              // leases that reached their end
    uint64_t renewals = 0;            // successful Renews (not keepalives)
    uint64_t releases = 0;            // leases ended by Release (any cause)
    uint64_t withdrawals = 0;         // waits withdrawn (any cause)
    uint64_t deadlock_victims = 0;    // clients aborted to break cycles
    uint64_t stale_writes_refused = 0;  // stale Writes and Deletes
    uint64_t store_writes = 0;   // Writes the store accepted
    uint64_t store_deletes = 0;  // Deletes accepted (also of absent keys)
    uint64_t sessions_lost = 0;    // ended by their grace running out
    uint64_t forced_releases = 0;  // leases ended by ForceRelease
    // Granted Acquire calls by how long they waited: acquire_waits[i] counts
    // waits <= kAcquireWaitBoundsMs[i] (and above the bound before it), the
    // last entry waits above every bound.
    static constexpr std::array<int64_t, 16> kAcquireWaitBoundsMs = {
        1,     5,      10,     25,     50,      100,     250,    500,
        1'000, 2'500,  5'000,  10'000, 30'000,  60'000,  300'000, 3'600'000};
    std::array<uint64_t, kAcquireWaitBoundsMs.size() + 1> acquire_waits{};
    uint64_t acquire_wait_ms_sum = 0;
  };

  // Counts `op` by the core's `reply`: an Acquire by its outcome (a grant
  // at once is a wait of 0) and its aborts, a Renew, a Release by what it
  // ended, a Withdraw that withdrew, an accepted Write or Delete. A refusal
  // counts only a stale write or delete.
  void CountApplied(const Operation& op, const absl::StatusOr<Reply>& reply);
  // Counts a lapse, a grant from the queue, a release or withdrawal the
  // core made for its owner. Aborts count nothing (CountApplied counts them
  // once per client, from the Acquire's abort list).
  void CountEvent(const Event& event);
  // Counts a granted Acquire call that waited `waited_ms` (>= 0).
  void CountAcquireWait(int64_t waited_ms);
  void CountSessionLost() { ++counts_.sessions_lost; }
  void CountForcedReleases(size_t released) {
    counts_.forced_releases += released;
  }

  const Counts& counts() const { return counts_; }

 private:
  Counts counts_;
};

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_OWNER_COUNTERS_H_
