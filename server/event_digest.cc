#include "server/event_digest.h"

#include <algorithm>
#include <utility>

#include "server/server_errors.h"

namespace leasekeeper::server {

void EventDigest::Digest(std::vector<Event> events, Tick now,
                         const std::vector<std::string>& victims,
                         OwnerEffects& fx) {
  for (Event& e : events) {
    p_.counters.CountEvent(e);
    const ParkedCalls::Key key(e.client, e.lock);
    // Whatever ended, its label goes with it (a grant keeps the wait's).
    if (e.kind != Event::Kind::kGrantedFromQueue) p_.labels.erase(key);
    switch (e.kind) {
      case Event::Kind::kLapsed:
        if (ShouldLog(LogEvent::kLapsed)) {
          fx.logs.push_back(LogRecord{.event = LogEvent::kLapsed,
                                      .client = e.client,
                                      .lock = e.lock,
                                      .token = e.token});
        }
        Notify(e.client,
               SessionNotice{.kind = SessionNotice::Kind::kLeaseLapsed,
                             .lock = e.lock,
                             .token = e.token},
               fx);
        break;
      case Event::Kind::kGrantedFromQueue:
        GrantedFromQueue(e, now, fx);
        break;
      case Event::Kind::kAbortedWaiter:
        if (p_.parked.contains(key)) {
          FinishParked(key, DeadlockVictim(victims), /*cache=*/true, now, fx);
        }
        Notify(
            e.client,
            SessionNotice{.kind = SessionNotice::Kind::kAbortedDeadlockVictim,
                          .lock = e.lock},
            fx);
        break;
      case Event::Kind::kAbortedHolder:
        Notify(
            e.client,
            SessionNotice{.kind = SessionNotice::Kind::kAbortedDeadlockVictim,
                          .lock = e.lock,
                          .token = e.token},
            fx);
        break;
      case Event::Kind::kReleasedByOwner:
        break;
      case Event::Kind::kWithdrawnByOwner:
        if (p_.parked.contains(key)) {
          AcquireAnswer answer;
          answer.kind = AcquireAnswer::Kind::kWithdrawn;
          answer.withdraw_cause = WithdrawCause::kSessionEnded;
          FinishParked(key, std::move(answer), /*cache=*/true, now, fx);
        }
        break;
    }
  }
}

void EventDigest::GrantedFromQueue(const Event& e, Tick now, OwnerEffects& fx) {
  const int64_t ttl_left = p_.clock.SureLeft(e.expires_at, now);
  const ParkedCalls::Key key(e.client, e.lock);
  int64_t waited = 0;
  if (const ParkedCalls::Call* parked = p_.parked.Find(key)) {
    waited = std::max<int64_t>(0, e.at - parked->queued_at);
    p_.counters.CountAcquireWait(waited);
    AcquireAnswer answer;
    answer.kind = AcquireAnswer::Kind::kGranted;
    answer.token = e.token;
    answer.ttl_ms = ttl_left;
    answer.waited_ms = waited;
    FinishParked(key, std::move(answer), /*cache=*/true, now, fx);
  }
  if (ShouldLog(LogEvent::kGrantedFromQueue)) {
    fx.logs.push_back(LogRecord{.event = LogEvent::kGrantedFromQueue,
                                .client = e.client,
                                .lock = e.lock,
                                .token = e.token,
                                .lease_ms = e.expires_at - e.at,
                                .waited_ms = waited});
  }
  Notify(e.client,
         SessionNotice{.kind = SessionNotice::Kind::kGrantedFromQueue,
                       .lock = e.lock,
                       .token = e.token,
                       .ttl_ms = ttl_left},
         fx);
}

void EventDigest::FinishParked(const ParkedCalls::Key& key,
                               absl::StatusOr<AcquireAnswer> result, bool cache,
                               Tick now, OwnerEffects& fx) {
  std::optional<ParkedCalls::Call> finished = p_.parked.Finish(key);
  if (!finished.has_value()) return;
  ParkedCalls::Call& parked = *finished;
  bool tracked = false;
  if (!parked.request_id.empty()) {
    if (cache) {
      tracked = p_.retries.Answer(key.first, parked.request_id, result, now);
    } else {
      p_.retries.Forget(key.first, parked.request_id, now);
    }
  }
  fx.completions.emplace_back(parked.call,
                              AcquireCallAnswer{std::move(result), tracked});
}

void EventDigest::Notify(const std::string& client, SessionNotice notice,
                         OwnerEffects& fx) {
  std::shared_ptr<SessionSink> sink = p_.sessions.SinkOf(client);
  if (sink != nullptr) {
    fx.notices.emplace_back(std::move(sink), std::move(notice));
  }
}

}  // namespace leasekeeper::server
