// AcquireFlow: the steps of an Acquire call beside the core, and how its
// wait ends. An Acquire is refused while shutting down if it would wait,
// checked against its session, admitted by the retry rule (RetryGate: a
// replay gets its first answer, a retry of a parked request takes over the
// parked slot), checked against the limits (the ttl's error first), then
// applied: granted, queued (answered at once, or parked until its wait
// ends), or refused as a deadlock. A parked wait ends by a grant (the
// digest), its timeout, a cancel, or shutdown; an answer that reached no
// client is undone (a lock is never granted to nobody).
// Thread-safety: none; CoreOwner's core mutex guards it and its parts.
#ifndef LEASEKEEPER_SERVER_ACQUIRE_FLOW_H_
#define LEASEKEEPER_SERVER_ACQUIRE_FLOW_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/answers.h"
#include "server/durable_state_machine.h"
#include "server/event_digest.h"
#include "server/operation_applier.h"
#include "server/owner_clock.h"
#include "server/owner_effects.h"
#include "server/parked_calls.h"
#include "server/query_answers.h"
#include "server/retry_gate.h"
#include "server/server_config.h"
#include "server/session_lifecycle.h"

namespace leasekeeper::server {

class AcquireFlow {
 public:
  // Every part outlives the flow.
  struct Parts {
    const Limits& limits;
    DurableStateMachine& machine;  // read: queue lengths, views
    OperationApplier& applier;     // every change
    EventDigest& digest;
    ParkedCalls& parked;
    RetryGate& retries;
    const SessionLifecycle& sessions;
    HolderLabels& labels;
    const OwnerClock& clock;
  };
  explicit AcquireFlow(Parts parts) : p_(parts) {}
  AcquireFlow(const AcquireFlow&) = delete;
  AcquireFlow& operator=(const AcquireFlow&) = delete;

  // Applies the Acquire (REQUIRES: args validated) at `now`. Outcomes: the
  // call's answer (granted, queued with its position, or an error:
  // ShuttingDown for a waiting Acquire while `shutting_down`, the session's
  // refusal, RequestIdReused, LimitExceeded, core errors, DeadlockVictim);
  // nullopt: `call` is parked (or took over a parked slot, the earlier call
  // then answered SupersededByRetry) and is answered when its wait ends.
  std::optional<AcquireCallAnswer> Acquire(const AcquireArgs& args,
                                           PendingAcquire* call,
                                           bool shutting_down, Tick now,
                                           OwnerEffects& fx);

  // The gRPC call of a parked Acquire was cancelled: if `call` still holds
  // the parked slot of (client, lock), its request is withdrawn and the
  // call answered WaitCancelled (its request_id forgotten). Otherwise
  // nothing happens.
  void CancelWait(const std::string& client, const std::string& lock,
                  PendingAcquire* call, Tick now, OwnerEffects& fx);

  // An Acquire call finished (`cancelled`: its answer did not reach the
  // client). If no call delivered a grant (or a queued request) it
  // answered, the very lease is released (or the request withdrawn) again.
  void CallFinished(const AcquireArgs& args, const AcquireCallAnswer& reply,
                    bool cancelled, Tick now, OwnerEffects& fx);

  // The parked wait of `key` ran out at `at`: withdrawn, answered
  // WaitTimedOut (kept as its request_id's answer).
  void TimeOut(const ParkedCalls::Key& key, Tick at, Tick now,
               OwnerEffects& fx);

  // Shutdown: every parked request withdrawn, its call answered
  // ShuttingDown (its request_id forgotten). O(parked calls).
  void WithdrawAll(Tick now, OwnerEffects& fx);

 private:
  // A retry whose first call still waits takes its place.
  std::optional<AcquireCallAnswer> TakeOverWait(const AcquireArgs& args,
                                                PendingAcquire* call, Tick now,
                                                OwnerEffects& fx);
  // Applies the Acquire and turns the core's outcome into its answer.
  std::optional<absl::StatusOr<AcquireAnswer>> Apply(const AcquireArgs& args,
                                                     PendingAcquire* call,
                                                     Tick now,
                                                     OwnerEffects& fx);
  // OK, or the limit the Acquire would exceed. O(leases of the client).
  absl::Status CheckLimits(const AcquireArgs& args, Tick now) const;
  // Withdraws the wait of (client, lock) at `at`; whether there was one.
  bool Withdraw(const std::string& client, const std::string& lock, Tick at);
  void SetLabel(const AcquireArgs& args);

  Parts p_;
};

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_ACQUIRE_FLOW_H_
