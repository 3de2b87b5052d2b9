// OwnerRules: the server's state beside the core and the rules over it,
// wired together once: the parked calls, the holder labels, the sessions,
// the retry gate and the counters, and the rules that share them
// (OperationApplier, EventDigest, AcquireFlow, LeaseCalls, SessionCalls).
// CoreOwner holds one under its core mutex; a test of one rule holds one
// alone, on plain ticks.
// Thread-safety: none; the owner's mutex guards it and the machine.
#ifndef LEASEKEEPER_SERVER_OWNER_RULES_H_
#define LEASEKEEPER_SERVER_OWNER_RULES_H_

#include "server/acquire_flow.h"
#include "server/durable_state_machine.h"
#include "server/event_digest.h"
#include "server/lease_calls.h"
#include "server/operation_applier.h"
#include "server/owner_clock.h"
#include "server/owner_counters.h"
#include "server/parked_calls.h"
#include "server/query_answers.h"
#include "server/retry_gate.h"
#include "server/server_config.h"
#include "server/session_calls.h"
#include "server/session_lifecycle.h"
#include "server/watch_hub.h"

namespace leasekeeper::server {

struct OwnerRules {
  // `config`, `machine`, `time` and `hub` outlive the rules; `machine` is
  // not used before the rules are constructed (it may be constructed after
  // them).
  OwnerRules(const ServerConfig& config, DurableStateMachine& machine,
             const OwnerClock& time, WatchHub& hub);
  OwnerRules(const OwnerRules&) = delete;
  OwnerRules& operator=(const OwnerRules&) = delete;

  ParkedCalls parked;
  HolderLabels labels;
  SessionLifecycle sessions;  // logs through the machine
  RetryGate retries;          // logs through the machine
  OwnerCounters counters;
  OperationApplier applier;
  EventDigest digest;
  AcquireFlow acquires;
  LeaseCalls leases;
  SessionCalls session_calls;
};

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_OWNER_RULES_H_
