#include "server/owner_rules.h"

namespace leasekeeper::server {

OwnerRules::OwnerRules(const ServerConfig& config,
                       DurableStateMachine& machine, const OwnerClock& time,
                       WatchHub& hub)
    : labels(machine),
      sessions(SessionLifecycle::Options{
                   .grace_ms = config.session_grace_ms,
                   .restart_grace_ms = config.durability.restart_grace_ms},
               config.limits, machine),
      retries(config.retry_cache, machine),
      applier(machine, counters, hub, time),
      digest(EventDigest::Parts{.machine = machine,
                                .parked = parked,
                                .retries = retries,
                                .labels = labels,
                                .sessions = sessions.table(),
                                .counters = counters,
                                .clock = time}),
      acquires(AcquireFlow::Parts{.limits = config.limits,
                                  .machine = machine,
                                  .applier = applier,
                                  .digest = digest,
                                  .parked = parked,
                                  .retries = retries,
                                  .sessions = sessions,
                                  .labels = labels,
                                  .clock = time}),
      leases(LeaseCalls::Parts{.machine = machine,
                               .applier = applier,
                               .digest = digest,
                               .parked = parked,
                               .retries = retries,
                               .sessions = sessions,
                               .labels = labels,
                               .counters = counters,
                               .clock = time}),
      session_calls(SessionCalls::Parts{.sessions = sessions,
                                        .machine = machine,
                                        .applier = applier,
                                        .digest = digest,
                                        .counters = counters}) {}

}  // namespace leasekeeper::server
