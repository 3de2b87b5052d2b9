// LeaseCalls: Renew, Release and an operator's forced release of the leases
// the core holds. Renew and Release are checked against their session and
// admitted by the retry rule (RetryGate: a replay gets its first answer,
// nothing applied; they answer at once, so they are never in flight); a
// Release that withdraws a wait answers its parked call "withdrawn,
// released by client". A forced release ends leases as Release operations
// (so the log replays it) without touching sessions or the retry cache.
// Thread-safety: none; CoreOwner's core mutex guards it and its parts.
#ifndef LEASEKEEPER_SERVER_LEASE_CALLS_H_
#define LEASEKEEPER_SERVER_LEASE_CALLS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/answers.h"
#include "server/durable_state_machine.h"
#include "server/event_digest.h"
#include "server/operation_applier.h"
#include "server/owner_clock.h"
#include "server/owner_counters.h"
#include "server/owner_effects.h"
#include "server/parked_calls.h"
#include "server/query_answers.h"
#include "server/retry_gate.h"
#include "server/session_lifecycle.h"

namespace leasekeeper::server {

class LeaseCalls {
 public:
  // Every part outlives the calls.
  struct Parts {
    DurableStateMachine& machine;  // read: a lock's holders
    OperationApplier& applier;     // every change
    EventDigest& digest;
    ParkedCalls& parked;
    RetryGate& retries;
    const SessionLifecycle& sessions;
    HolderLabels& labels;
    OwnerCounters& counters;
    const OwnerClock& clock;
  };
  explicit LeaseCalls(Parts parts) : p_(parts) {}
  LeaseCalls(const LeaseCalls&) = delete;
  LeaseCalls& operator=(const LeaseCalls&) = delete;

  // Outcomes: the renewed lease (its ttl what surely remains); core
  // errors; the session's refusal (SessionEnded, InvalidField);
  // RequestIdReused.
  absl::StatusOr<RenewAnswer> Renew(const RenewArgs& args, Tick now,
                                    OwnerEffects& fx);
  // Outcomes: kReleased / kWithdrawn; core errors; the session's refusal;
  // RequestIdReused.
  absl::StatusOr<ReleaseAnswer> Release(const ReleaseArgs& args, Tick now,
                                        OwnerEffects& fx);
  // Ends the lease `client` holds on `lock`, or every lease on `lock` when
  // `client` is empty, lowest token first (a waiter granted by one of them
  // is not released in turn). Outcomes: the leases ended; NOT_HOLDER if no
  // lease matched (nothing changed). O(holders of the lock).
  absl::StatusOr<std::vector<ForcedRelease>> ForceRelease(
      const std::string& lock, const std::string& client, Tick now,
      OwnerEffects& fx);

 private:
  // Checks the session, admits a retry or else calls apply() and keeps its
  // answer.
  template <typename Answer, typename Args, typename Apply>
  absl::StatusOr<Answer> Retriable(const Args& args,
                                   const Fingerprint& fingerprint, Tick now,
                                   Apply apply);
  absl::StatusOr<RenewAnswer> ApplyRenew(const RenewArgs& args, Tick now,
                                         OwnerEffects& fx);
  absl::StatusOr<ReleaseAnswer> ApplyRelease(const ReleaseArgs& args, Tick now,
                                             OwnerEffects& fx);

  Parts p_;
};

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_LEASE_CALLS_H_
