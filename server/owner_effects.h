// OwnerEffects: what one CoreOwner call does besides changing the core (the
// answers of parked calls, session notices, stream ends, log lines, the
// call's own answer), collected under the core mutex and performed after it
// is released, once every record they may reflect is durable
// (docs/design/sessions-and-retries.md, "Effects and answers").
// Thread-safety: a plain value, owned by one call.
#ifndef LEASEKEEPER_SERVER_OWNER_EFFECTS_H_
#define LEASEKEEPER_SERVER_OWNER_EFFECTS_H_

#include <memory>
#include <utility>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "server/event_log.h"
#include "server/owner_calls.h"
#include "server/parked_calls.h"
#include "server/session_table.h"
#include "storage/operation_log.h"

namespace leasekeeper::server {

struct OwnerEffects {
  std::vector<std::pair<PendingAcquire*, AcquireCallAnswer>> completions;
  std::vector<std::pair<std::shared_ptr<SessionSink>, SessionNotice>> notices;
  std::vector<std::pair<std::shared_ptr<SessionSink>, absl::Status>>
      stream_ends;
  std::vector<LogRecord> logs;
  bool wake_timer = false;
  // The call's own answer, given the durability outcome; run last.
  absl::AnyInvocable<void(absl::Status) &&> answer;
  // What all of the above waits for: the last record appended by the end
  // of the call.
  storage::LogPosition position = 0;

  bool empty() const {
    return completions.empty() && notices.empty() && stream_ends.empty() &&
           logs.empty() && !answer;
  }

  // Sets the call's answer: `result`, or the durability failure instead.
  template <typename T>
  void SetAnswer(T result, Completion<T> done) {
    answer = [result = std::move(result),
              done = std::move(done)](absl::Status durable) mutable {
      if (!durable.ok()) result = std::move(durable);
      std::move(done)(std::move(result));
    };
  }

  // Performs everything, the parked calls' answers first (they are what
  // waiting clients measure), the call's own answer last. If `durable` is
  // not OK nothing not durable is told: parked calls get `durable`,
  // notices are dropped, streams still end.
  void Perform(const absl::Status& durable);
};

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_OWNER_EFFECTS_H_
