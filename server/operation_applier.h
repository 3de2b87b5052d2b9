// OperationApplier: the one way an operation reaches the core. It applies
// the operation through the durable path (DurableStateMachine), counts it
// (OwnerCounters) and publishes what it changed to the watch hub at the log
// position of its record (WatchPublisher), so every applied operation feeds
// the watches, whoever applied it.
// Thread-safety: none; CoreOwner's core mutex guards it and what it refers
// to (the hub has its own mutex).
#ifndef LEASEKEEPER_SERVER_OPERATION_APPLIER_H_
#define LEASEKEEPER_SERVER_OPERATION_APPLIER_H_

#include "absl/status/statusor.h"
#include "core/state_machine.h"
#include "server/durable_state_machine.h"
#include "server/owner_clock.h"
#include "server/owner_counters.h"
#include "server/watch_hub.h"
#include "server/watch_publisher.h"

namespace leasekeeper::server {

class OperationApplier {
 public:
  // All four outlive the applier; `clock` is the owner's reading, the
  // instant watch events carry.
  OperationApplier(DurableStateMachine& machine, OwnerCounters& counters,
                   WatchHub& hub, const OwnerClock& clock)
      : machine_(machine),
        counters_(counters),
        publisher_(hub),
        clock_(clock) {}
  OperationApplier(const OperationApplier&) = delete;
  OperationApplier& operator=(const OperationApplier&) = delete;

  // Applies `op`. Outcomes: the core's reply or error (counted, its changes
  // and events published); the failed log's error, with the op refused
  // before it reached the core (counting nothing; the passage of time it
  // carried still applies and is published, as of the records before it).
  // An accepted op whose record the failed log could not take is applied
  // but never published (the watches end with the log).
  absl::StatusOr<Reply> Apply(const Operation& op);

  // While set, a Release is published as an operator's forced release.
  void set_forced_release(bool forced) {
    publisher_.set_forced_release(forced);
  }

 private:
  DurableStateMachine& machine_;
  OwnerCounters& counters_;
  WatchPublisher publisher_;
  const OwnerClock& clock_;
};

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_OPERATION_APPLIER_H_
