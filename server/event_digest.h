// EventDigest: what each core event means beside the core, as effects
// (OwnerEffects): a lapse is logged and noticed to its session; a grant
// from the queue answers the waiter's parked call with the time it waited
// and is noticed; an aborted waiter's parked call is answered
// DeadlockVictim; a wait withdrawn by a session's end answers its parked
// call "withdrawn, session ended". Every event is counted, and whatever
// ended drops its holder label (a grant keeps the wait's). It also finishes
// parked calls for the owner's other rules (timeouts, cancels, shutdown).
// Thread-safety: none; CoreOwner's core mutex guards it and its parts.
#ifndef LEASEKEEPER_SERVER_EVENT_DIGEST_H_
#define LEASEKEEPER_SERVER_EVENT_DIGEST_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/lock_table.h"
#include "server/answers.h"
#include "server/durable_state_machine.h"
#include "server/owner_clock.h"
#include "server/owner_counters.h"
#include "server/owner_effects.h"
#include "server/parked_calls.h"
#include "server/query_answers.h"
#include "server/retry_gate.h"
#include "server/session_table.h"

namespace leasekeeper::server {

class EventDigest {
 public:
  // Every part outlives the digest.
  struct Parts {
    DurableStateMachine& machine;  // whose pending events Digest takes
    ParkedCalls& parked;
    RetryGate& retries;  // a parked call's answer is its request's first
    HolderLabels& labels;
    const SessionTable& sessions;  // who gets notices
    OwnerCounters& counters;
    const OwnerClock& clock;  // the grant rounding of a grant's ttl
  };
  explicit EventDigest(Parts parts) : p_(parts) {}
  EventDigest(const EventDigest&) = delete;
  EventDigest& operator=(const EventDigest&) = delete;

  // Takes the core's pending events and digests them (below).
  void DigestPending(Tick now, OwnerEffects& fx) {
    Digest(p_.machine.TakeEvents(), now, {}, fx);
  }
  void DigestPending(Tick now, const std::vector<std::string>& victims,
                     OwnerEffects& fx) {
    Digest(p_.machine.TakeEvents(), now, victims, fx);
  }
  // Turns `events` into effects, answering at `now` (the ttl a grant
  // reports is what surely remains then). `victims`: the abort list of the
  // Acquire that caused them (an aborted waiter's answer names them).
  // O(events).
  void Digest(std::vector<Event> events, Tick now,
              const std::vector<std::string>& victims, OwnerEffects& fx);

  // Ends the parked call of `key`, if any: queues its completion with
  // `result`, kept as its request_id's first answer (RetryGate::Answer),
  // or with `cache` false the request_id's entry is dropped (Forget).
  void FinishParked(const ParkedCalls::Key& key,
                    absl::StatusOr<AcquireAnswer> result, bool cache, Tick now,
                    OwnerEffects& fx);
  // Queues `notice` for the stream of `client`'s session, if attached.
  void Notify(const std::string& client, SessionNotice notice,
              OwnerEffects& fx);

 private:
  void GrantedFromQueue(const Event& e, Tick now, OwnerEffects& fx);

  Parts p_;
};

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_EVENT_DIGEST_H_
