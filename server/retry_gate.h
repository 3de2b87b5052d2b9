// RetryGate: the one retry rule of Acquire, Renew and Release. A request
// with a request_id is admitted here before it is applied, its first answer
// is kept (RetryCache) and logged as a server record, so a retry, even after
// a restart, gets that answer instead of being applied again.
// Owned by CoreOwner. Thread-safety: none; CoreOwner's core mutex guards it
// and the DurableStateMachine it logs to.
#ifndef LEASEKEEPER_SERVER_RETRY_GATE_H_
#define LEASEKEEPER_SERVER_RETRY_GATE_H_

#include <cstddef>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/types.h"
#include "server/durable_state_machine.h"
#include "server/retry_cache.h"
#include "server/server_config.h"
#include "storage/server_records.h"

namespace leasekeeper::server {

class RetryGate {
 public:
  // `log` receives the gate's server records; it outlives the gate's use.
  RetryGate(RetryCacheConfig config, DurableStateMachine& log);
  RetryGate(const RetryGate&) = delete;
  RetryGate& operator=(const RetryGate&) = delete;

  template <typename Answer>
  struct Admitted {
    RetryAdmission kind = RetryAdmission::kNew;
    std::optional<Answer> first{};  // kReplay: the first answer
  };

  // Admits a request with `request_id` (REQUIRES: not empty) whose answer
  // type is `Answer`. Outcomes:
  //  - kNew: apply it (Begin, apply, Answer); a pending entry whose call no
  //    longer waits (`first_call_waits` false) was taken over and dropped.
  //  - kReplay: `first` is the first answer; an Acquire's counts one more
  //    delivery in flight (see CallFinished). Nothing is applied.
  //  - kInFlight: the first call still waits (an Acquire): the retry takes
  //    its place.
  //  - kReused: the id came with other arguments (or another method):
  //    refuse REQUEST_ID_REUSED.
  // O(1).
  template <typename Answer>
  Admitted<Answer> Admit(const std::string& client,
                         const std::string& request_id,
                         const Fingerprint& fingerprint, Tick now,
                         bool first_call_waits) {
    Admitted<Answer> admitted;
    const ::leasekeeper::server::Admitted found = cache_.Admit(
        client, request_id, fingerprint, now, first_call_waits);
    admitted.kind = found.kind;
    if (found.kind != RetryAdmission::kReplay) return admitted;
    const Answer* first = std::get_if<Answer>(&*found.entry->answer);
    if (first == nullptr) {
      admitted.kind = RetryAdmission::kReused;
      return admitted;
    }
    admitted.first = *first;
    if (IsAcquire(*found.entry)) ++found.entry->deliveries_in_flight;
    return admitted;
  }

  // The admitted (kNew) request is being applied: its entry is pending
  // until Answer. O(1) amortized.
  void Begin(const std::string& client, const std::string& request_id,
             Fingerprint fingerprint);
  // Keeps `answer` as the request's first answer and logs it. Returns
  // whether the entry still exists and is an Acquire's, which then counts
  // one delivery in flight (the caller hands the answer to a call and
  // reports its end to CallFinished). False if it was evicted. O(1).
  bool Answer(const std::string& client, const std::string& request_id,
              CachedAnswer answer, Tick now);
  // Drops the request's entry, so a retry applies afresh; logs that an
  // answered one is gone. O(1).
  void Forget(const std::string& client, const std::string& request_id,
              Tick now);
  // A call handed an Acquire's tracked answer finished; `cancelled`: the
  // answer did not reach its client. Returns whether that answer went
  // undelivered: cancelled, and (while the entry lives) no other call
  // delivered it or still may; the entry is then forgotten. O(1).
  bool CallFinished(const std::string& client, const std::string& request_id,
                    bool cancelled, Tick now);

  // The answered entries, for a snapshot. O(entries).
  void SaveTo(storage::ServerState& state) const;
  // Puts back the entries recovered after a restart; their delivery is
  // unknown, so they count as delivered. An Acquire answered "queued" is
  // not restored (the restart withdrew every wait). Returns how many
  // entries could not be read (their retries then apply afresh).
  // O(entries).
  size_t Restore(std::vector<storage::ServerState::Retry> retries);

  size_t size() const { return cache_.size(); }

 private:
  static bool IsAcquire(const RetryEntry& entry) {
    return entry.fingerprint.method == Fingerprint::Method::kAcquire;
  }

  RetryCache cache_;
  DurableStateMachine& log_;
};

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_RETRY_GATE_H_
