// EventLog: one spdlog line per significant event, with a stable name.
//
// Operators grep these names; they do not change:
//   info  granted_from_queue        a waiter got the lock (push hand-over)
//   info  lapsed                    a lease reached its end without renewal
//   info  released_by_session_loss  a session ended after its grace; the
//                                   client's leases were released
//   info  deadlock_victims          an Acquire aborted clients to break a
//                                   wait-for cycle
//   info  stale_write_refused       a Write carried a token below the lock's
//                                   high-water mark
//   info  undelivered_grant_released a grant whose call was cancelled before
//                                   the answer arrived was released again
//   info  session_replaced          a new session of a client ended its
//                                   previous one
//   info  session_stream_lost       a session's stream ended without close;
//                                   the grace period starts
//   debug wait_timed_out, wait_cancelled, session_opened, session_resumed,
//         session_closed
// Ordinary requests log nothing at info.
//
// Lines are logfmt: `event=lapsed client=etl-a lock=exports/daily token=1`.
//
// CoreOwner builds LogRecords while it holds the core mutex (only if
// ShouldLog says the level is on) and writes them after unlocking.
//
// Thread-safety: all functions may be called from any thread.
#ifndef LEASEKEEPER_SERVER_EVENT_LOG_H_
#define LEASEKEEPER_SERVER_EVENT_LOG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/types.h"

namespace leasekeeper::server {

enum class LogEvent {
  kGrantedFromQueue,
  kLapsed,
  kReleasedBySessionLoss,
  kDeadlockVictims,
  kStaleWriteRefused,
  kUndeliveredGrantReleased,
  kSessionReplaced,
  kSessionStreamLost,
  kWaitTimedOut,
  kWaitCancelled,
  kSessionOpened,
  kSessionResumed,
  kSessionClosed,
};

// Fields that do not apply to an event stay empty/zero and are not printed.
struct LogRecord {
  LogEvent event = LogEvent::kLapsed;
  std::string client{};
  std::string lock{};
  std::string session{};
  std::string key{};
  FencingToken token = 0;
  FencingToken high_water = 0;  // kStaleWriteRefused
  int64_t lease_ms = 0;         // kGrantedFromQueue
  int64_t waited_ms = 0;        // kGrantedFromQueue (parked calls)
  int64_t count = 0;            // kReleasedBySessionLoss: leases released
  std::vector<std::string> victims{};  // kDeadlockVictims
};

absl::string_view EventName(LogEvent event);

// Whether a record of this event would be written at the current level.
bool ShouldLog(LogEvent event);

// Writes one line. REQUIRES: the core mutex is not held.
void WriteLog(const LogRecord& record);

// `text` as a logfmt value: bare if it needs no quoting, else quoted, with
// quotes, backslashes and control bytes escaped.
std::string LogfmtValue(absl::string_view text);

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_EVENT_LOG_H_
