#include "server/convert.h"

#include <algorithm>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/errors.h"
#include "proto/lock_mode.h"
#include "server/limit_checks.h"
#include "server/server_errors.h"

namespace leasekeeper::server {
namespace {

namespace pb = ::leasekeeper::v1;

absl::Status BadArgument(absl::string_view field) {
  return InvalidField(ErrorCode::kInvalidArguments, field);
}

// Collects checks in contract order: the first failure wins.
class Checker {
 public:
  // An empty required string.
  Checker& Required(absl::string_view value, absl::string_view field) {
    if (status_.ok() && value.empty()) status_ = BadArgument(field);
    return *this;
  }
  Checker& Argument(bool ok, absl::string_view field) {
    if (status_.ok() && !ok) status_ = BadArgument(field);
    return *this;
  }
  Checker& Ttl(int64_t ttl_ms, absl::string_view field) {
    if (status_.ok() && (ttl_ms < 1 || ttl_ms > kMaxTtlMs)) {
      status_ = InvalidField(ErrorCode::kInvalidTtl, field);
    }
    return *this;
  }
  // A limit's refusal (LimitChecks), if any.
  Checker& Within(absl::Status refusal) {
    if (status_.ok() && !refusal.ok()) status_ = std::move(refusal);
    return *this;
  }
  // Acquire, Renew, Release: the lengths of the caller's client id and the
  // lock's name ...
  template <typename Request>
  Checker& CallerAndLockSizes(const Request& request, const Limits& limits) {
    return Within(LimitChecks(limits).ClientId(request.client_id()))
        .Within(LimitChecks(limits).LockName(request.lock()));
  }
  // ... and of its request and session ids.
  template <typename Request>
  Checker& IdSizes(const Request& request, const Limits& limits) {
    return Within(LimitChecks(limits).RequestId(request.request_id()))
        .Within(LimitChecks(limits).ClientId(request.session_id()));
  }
  absl::Status status() const { return status_; }

 private:
  absl::Status status_;
};

bool ValidMode(int mode) {
  return mode == pb::LOCK_MODE_UNSPECIFIED || mode == pb::LOCK_MODE_EXCLUSIVE ||
         mode == pb::LOCK_MODE_SHARED || mode == pb::LOCK_MODE_SEMAPHORE;
}

// A semaphore names its capacity; no other mode has one.
bool ValidCapacity(const pb::AcquireRequest& request) {
  if (request.mode() != pb::LOCK_MODE_SEMAPHORE) return request.capacity() == 0;
  return request.capacity() >= 1 &&
         request.capacity() <= kMaxSemaphoreCapacity;
}

void SetTimestamp(absl::Time time, google::protobuf::Timestamp* proto) {
  const int64_t nanos = absl::ToUnixNanos(time);
  int64_t seconds = nanos / 1'000'000'000;
  int64_t rest = nanos % 1'000'000'000;
  if (rest < 0) {
    rest += 1'000'000'000;
    --seconds;
  }
  proto->set_seconds(seconds);
  proto->set_nanos(static_cast<int32_t>(rest));
}

void FillHolder(const HolderInfo& info, absl::Time wall_now,
                pb::Holder* holder) {
  holder->set_client_id(info.view.client);
  holder->set_lock(info.view.lock);
  holder->set_mode(ModeToProto(info.view.mode));
  holder->set_token(info.view.token);
  holder->set_expires_in_ms(info.expires_in_ms);
  SetTimestamp(wall_now + absl::Milliseconds(info.expires_in_ms),
               holder->mutable_expires_at());
  holder->set_holder_label(info.label);
}

}  // namespace

absl::StatusOr<AcquireArgs> ParseAcquire(const pb::AcquireRequest& request,
                                         const Limits& limits) {
  absl::Status status =
      Checker()
          .Required(request.client_id(), "client_id")
          .Required(request.lock(), "lock")
          .Argument(ValidMode(request.mode()), "mode")
          .Argument(!ValidMode(request.mode()) || ValidCapacity(request),
                    "capacity")
          .Argument(request.wait_timeout_ms() >= 0 &&
                        request.wait_timeout_ms() <= kMaxWaitTimeoutMs,
                    "wait_timeout_ms")
          .Ttl(request.ttl_ms(), "ttl_ms")
          .CallerAndLockSizes(request, limits)
          .Within(LimitChecks(limits).Label(request.holder_label()))
          .IdSizes(request, limits)
          .status();
  if (!status.ok()) return status;
  AcquireArgs args;
  args.client = request.client_id();
  args.lock = request.lock();
  args.ttl_ms = request.ttl_ms();
  args.mode = LockModeFromProto<LockMode>(request.mode());
  args.capacity = request.capacity();
  args.wait_timeout_ms = request.wait_timeout_ms();
  args.request_id = request.request_id();
  args.session_id = request.session_id();
  args.label = request.holder_label();
  return args;
}

absl::StatusOr<RenewArgs> ParseRenew(const pb::RenewRequest& request,
                                     const Limits& limits) {
  absl::Status status =
      Checker()
          .Required(request.client_id(), "client_id")
          .Required(request.lock(), "lock")
          .Ttl(request.ttl_ms(), "ttl_ms")
          .CallerAndLockSizes(request, limits)
          .IdSizes(request, limits)
          .status();
  if (!status.ok()) return status;
  return RenewArgs{.client = request.client_id(),
                   .lock = request.lock(),
                   .ttl_ms = request.ttl_ms(),
                   .request_id = request.request_id(),
                   .session_id = request.session_id()};
}

absl::StatusOr<ReleaseArgs> ParseRelease(const pb::ReleaseRequest& request,
                                         const Limits& limits) {
  absl::Status status =
      Checker()
          .Required(request.client_id(), "client_id")
          .Required(request.lock(), "lock")
          .CallerAndLockSizes(request, limits)
          .IdSizes(request, limits)
          .status();
  if (!status.ok()) return status;
  return ReleaseArgs{.client = request.client_id(),
                     .lock = request.lock(),
                     .request_id = request.request_id(),
                     .session_id = request.session_id()};
}

absl::StatusOr<WriteArgs> ParseWrite(const pb::WriteRequest& request,
                                     const Limits& limits) {
  absl::Status status =
      Checker()
          .Required(request.lock(), "lock")
          .Required(request.key(), "key")
          .Required(request.value(), "value")
          .Argument(request.token() >= 1, "token")
          .Argument(!request.require_held() || !request.client_id().empty(),
                    "client_id")
          .CallerAndLockSizes(request, limits)
          .Within(LimitChecks(limits).Key(request.key()))
          .Within(LimitChecks(limits).Value(request.value()))
          .status();
  if (!status.ok()) return status;
  return WriteArgs{.lock = request.lock(),
                   .key = request.key(),
                   .value = request.value(),
                   .token = request.token(),
                   .client = request.client_id(),
                   .require_held = request.require_held()};
}

absl::StatusOr<ReadArgs> ParseRead(const pb::ReadRequest& request,
                                   const Limits& limits) {
  absl::Status status =
      Checker()
          .Required(request.lock(), "lock")
          .Required(request.key(), "key")
          .Within(LimitChecks(limits).LockName(request.lock()))
          .Within(LimitChecks(limits).Key(request.key()))
          .status();
  if (!status.ok()) return status;
  return ReadArgs{
      .lock = request.lock(), .key = request.key(), .token = request.token()};
}

absl::StatusOr<DeleteArgs> ParseDelete(const pb::DeleteRequest& request,
                                       const Limits& limits) {
  absl::Status status = Checker()
                            .Required(request.lock(), "lock")
                            .Required(request.key(), "key")
                            .Argument(request.token() >= 1, "token")
                            .Required(request.client_id(), "client_id")
                            .CallerAndLockSizes(request, limits)
                            .Within(LimitChecks(limits).Key(request.key()))
                            .status();
  if (!status.ok()) return status;
  return DeleteArgs{.lock = request.lock(),
                    .key = request.key(),
                    .token = request.token(),
                    .client = request.client_id()};
}

namespace {

// The page size a request asks for (0: `default_size`), capped at
// `max_size`, as a limit; the caller has refused a negative one.
size_t PageLimit(int32_t page_size, int32_t default_size, int32_t max_size) {
  const int32_t size = page_size == 0 ? default_size : page_size;
  return static_cast<size_t>(std::min(size, max_size));
}

// Decodes an Inspect page token; false for one EncodeInspectPageToken did
// not produce.
bool DecodeInspectPageToken(const std::string& token, InspectCursor* cursor) {
  // "h" or "q" and a 64-bit number: at most 21 bytes.
  std::string plain;
  if (!absl::WebSafeBase64Unescape(token, &plain) || plain.size() < 2 ||
      plain.size() > 21) {
    return false;
  }
  const absl::string_view digits = absl::string_view(plain).substr(1);
  if (plain[0] == 'h') {
    return absl::SimpleAtoi(digits, &cursor->after_token) &&
           cursor->after_token > 0;
  }
  if (plain[0] == 'q') {
    cursor->in_queue = true;
    return absl::SimpleAtoi(digits, &cursor->after_position) &&
           cursor->after_position > 0;
  }
  return false;
}

}  // namespace

absl::StatusOr<InspectQuery> ParseInspect(const pb::InspectRequest& request,
                                          const Limits& limits) {
  InspectQuery query;
  query.lock = request.lock();
  const bool token_ok = request.page_token().empty() ||
                        DecodeInspectPageToken(request.page_token(), &query.from);
  absl::Status status =
      Checker()
          .Required(request.lock(), "lock")
          .Argument(request.page_size() >= 0, "page_size")
          .Argument(token_ok, "page_token")
          .Within(LimitChecks(limits).LockName(request.lock()))
          .status();
  if (!status.ok()) return status;
  query.limit = PageLimit(request.page_size(), limits.default_detail_page_size,
                          limits.max_detail_page_size);
  return query;
}

absl::StatusOr<StatusQuery> ParseStatus(const pb::StatusRequest& request,
                                        const Limits& limits) {
  StatusQuery query;
  query.client = request.client_id();
  // A token this server issued names a client id within the limit.
  const bool token_ok =
      request.page_token().empty() ||
      (absl::WebSafeBase64Unescape(request.page_token(), &query.after) &&
       !query.after.empty() &&
       LimitChecks(limits).ClientId(query.after).ok());
  absl::Status status =
      Checker()
          .Required(request.client_id(), "client_id")
          .Argument(request.page_size() >= 0, "page_size")
          .Argument(token_ok, "page_token")
          .Within(LimitChecks(limits).ClientId(request.client_id()))
          .status();
  if (!status.ok()) return status;
  query.limit = PageLimit(request.page_size(), limits.default_detail_page_size,
                          limits.max_detail_page_size);
  return query;
}

absl::StatusOr<ListLocksQuery> ParseListLocks(
    const pb::ListLocksRequest& request, const Limits& limits) {
  ListLocksQuery query;
  query.prefix = request.prefix();
  bool token_ok = true;
  if (!request.page_token().empty()) {
    // A token this server issued names a lock within the limit.
    token_ok =
        absl::WebSafeBase64Unescape(request.page_token(), &query.after) &&
        !query.after.empty() && absl::StartsWith(query.after, query.prefix) &&
        LimitChecks(limits).LockName(query.after).ok();
  }
  absl::Status status = Checker()
                            .Argument(request.page_size() >= 0, "page_size")
                            .Argument(token_ok, "page_token")
                            .Within(LimitChecks(limits).LockName(request.prefix()))
                            .status();
  if (!status.ok()) return status;
  query.limit = PageLimit(request.page_size(), limits.default_page_size,
                          limits.max_page_size);
  return query;
}

absl::StatusOr<KeysQuery> ParseListKeys(const pb::ListKeysRequest& request,
                                        const Limits& limits) {
  absl::Status status =
      Checker()
          .Required(request.lock(), "lock")
          .Argument(request.limit() >= 0, "limit")
          .Within(LimitChecks(limits).LockName(request.lock()))
          .Within(LimitChecks(limits).Key(request.after()))
          .status();
  if (!status.ok()) return status;
  return KeysQuery{.lock = request.lock(),
                   .after = request.after(),
                   .limit = PageLimit(request.limit(), limits.default_page_size,
                                      limits.max_page_size)};
}

absl::StatusOr<OpenArgs> ParseOpen(const pb::OpenSession& open,
                                   const Limits& limits) {
  absl::Status status =
      Checker()
          .Required(open.client_id(), "open.client_id")
          .Within(LimitChecks(limits).ClientId(open.client_id()))
          .Within(LimitChecks(limits).ClientId(open.resume_session_id()))
          .status();
  if (!status.ok()) return status;
  return OpenArgs{.client = open.client_id(),
                  .resume_session_id = open.resume_session_id()};
}

void ToProto(const AcquireAnswer& answer, pb::AcquireResponse* response) {
  switch (answer.kind) {
    case AcquireAnswer::Kind::kGranted: {
      pb::Granted* granted = response->mutable_granted();
      granted->set_token(answer.token);
      granted->set_ttl_ms(answer.ttl_ms);
      granted->set_waited_ms(answer.waited_ms);
      break;
    }
    case AcquireAnswer::Kind::kQueued:
      response->mutable_queued()->set_position(answer.position);
      break;
    case AcquireAnswer::Kind::kWithdrawn:
      response->mutable_withdrawn()->set_reason(
          answer.withdraw_cause == WithdrawCause::kSessionEnded
              ? pb::WITHDRAW_REASON_SESSION_ENDED
              : pb::WITHDRAW_REASON_RELEASED_BY_CLIENT);
      break;
  }
  for (const std::string& client : answer.aborted) {
    response->add_aborted_clients(client);
  }
}

void ToProto(const RenewAnswer& answer, pb::RenewResponse* response) {
  response->set_token(answer.token);
  response->set_ttl_ms(answer.ttl_ms);
}

pb::ReleaseResult ToProto(ReleaseAnswer outcome) {
  return outcome == ReleaseAnswer::kWithdrawn ? pb::RELEASE_RESULT_WITHDRAWN
                                              : pb::RELEASE_RESULT_RELEASED;
}

namespace {

void FillWaiter(const WaiterInfo& waiter, pb::Waiter* proto) {
  proto->set_client_id(waiter.view.client);
  proto->set_mode(ModeToProto(waiter.view.mode));
  proto->set_ttl_ms(waiter.view.ttl);
  proto->set_position(waiter.position);
  proto->set_holder_label(waiter.label);
}

}  // namespace

void ToProto(const InspectAnswer& answer, absl::Time wall_now,
             pb::InspectResponse* response) {
  for (const HolderInfo& holder : answer.holders) {
    FillHolder(holder, wall_now, response->add_holders());
  }
  for (const WaiterInfo& waiter : answer.queue) {
    FillWaiter(waiter, response->add_queue());
  }
  response->set_capacity(answer.capacity);
  if (answer.next.has_value()) {
    response->set_next_page_token(EncodeInspectPageToken(*answer.next));
  }
}

void ToProto(const StatusAnswer& answer, absl::Time wall_now,
             pb::StatusResponse* response) {
  response->set_registered(answer.age.has_value());
  response->set_age(answer.age.value_or(0));
  for (const HolderInfo& hold : answer.holds) {
    FillHolder(hold, wall_now, response->add_holds());
  }
  if (answer.next_after.has_value()) {
    response->set_next_page_token(EncodePageToken(*answer.next_after));
  }
  response->set_waiting_for(answer.waiting.value_or(""));
  switch (answer.session) {
    case SessionState::kNone:
      response->set_session(pb::SESSION_STATE_NONE);
      break;
    case SessionState::kOpen:
      response->set_session(pb::SESSION_STATE_OPEN);
      break;
    case SessionState::kGrace:
      response->set_session(pb::SESSION_STATE_GRACE);
      break;
  }
}

void ToProto(const ListLocksAnswer& answer, absl::Time wall_now,
             pb::ListLocksResponse* response) {
  for (const LockSummary& summary : answer.locks) {
    pb::LockSummary* proto = response->add_locks();
    proto->set_lock(summary.name);
    for (const HolderInfo& holder : summary.holders) {
      FillHolder(holder, wall_now, proto->add_holders());
    }
    proto->set_queue_length(summary.queue_length);
    proto->set_capacity(summary.capacity);
  }
  if (answer.next_after.has_value()) {
    response->set_next_page_token(EncodePageToken(*answer.next_after));
  }
}

pb::LockMode ModeToProto(LockMode mode) { return LockModeToProto(mode); }

absl::StatusOr<WatchTarget> ParseWatch(const pb::WatchRequest& request,
                                       const Limits& limits) {
  WatchTarget target;
  switch (request.target_case()) {
    case pb::WatchRequest::kLock:
      if (request.lock().empty()) {
        return InvalidField(ErrorCode::kInvalidArguments, "lock");
      }
      target.name = request.lock();
      break;
    case pb::WatchRequest::kPrefix:
      target.name = request.prefix();
      target.prefix = true;
      break;
    case pb::WatchRequest::TARGET_NOT_SET:
      return InvalidField(ErrorCode::kInvalidArguments, "target");
  }
  if (absl::Status s = LimitChecks(limits).LockName(target.name); !s.ok()) {
    return s;
  }
  return target;
}

void ToWatchedLock(const std::string& name,
                   const std::vector<HolderInfo>& holders,
                   const std::vector<WaiterInfo>& queue, absl::Time wall_now,
                   pb::WatchedLock* proto) {
  proto->set_lock(name);
  for (const HolderInfo& holder : holders) {
    FillHolder(holder, wall_now, proto->add_holders());
  }
  for (const WaiterInfo& waiter : queue) FillWaiter(waiter, proto->add_queue());
}

void ToProto(const WatchEvent& event, pb::WatchEvent* proto) {
  switch (event.kind) {
    case WatchEvent::Kind::kGranted:
      proto->set_kind(pb::WATCH_EVENT_KIND_GRANTED);
      break;
    case WatchEvent::Kind::kQueued:
      proto->set_kind(pb::WATCH_EVENT_KIND_QUEUED);
      break;
    case WatchEvent::Kind::kReleased:
      proto->set_kind(pb::WATCH_EVENT_KIND_RELEASED);
      break;
    case WatchEvent::Kind::kLapsed:
      proto->set_kind(pb::WATCH_EVENT_KIND_LAPSED);
      break;
    case WatchEvent::Kind::kWithdrawn:
      proto->set_kind(pb::WATCH_EVENT_KIND_WITHDRAWN);
      break;
    case WatchEvent::Kind::kForcedRelease:
      proto->set_kind(pb::WATCH_EVENT_KIND_FORCED_RELEASE);
      break;
    case WatchEvent::Kind::kDeadlockAbort:
      proto->set_kind(pb::WATCH_EVENT_KIND_DEADLOCK_ABORT);
      break;
  }
  proto->set_lock(event.lock);
  proto->set_client_id(event.client);
  proto->set_mode(ModeToProto(event.mode));
  proto->set_token(event.token);
  proto->set_ttl_ms(event.ttl_ms);
  SetTimestamp(event.wall_time, proto->mutable_time());
  proto->set_sequence(event.sequence);
}

void ToProto(const SessionNotice& notice, pb::LockNotice* proto) {
  switch (notice.kind) {
    case SessionNotice::Kind::kGrantedFromQueue:
      proto->set_kind(pb::NOTICE_KIND_GRANTED_FROM_QUEUE);
      break;
    case SessionNotice::Kind::kLeaseLapsed:
      proto->set_kind(pb::NOTICE_KIND_LEASE_LAPSED);
      break;
    case SessionNotice::Kind::kAbortedDeadlockVictim:
      proto->set_kind(pb::NOTICE_KIND_ABORTED_DEADLOCK_VICTIM);
      break;
  }
  proto->set_lock(notice.lock);
  proto->set_token(notice.token);
  proto->set_ttl_ms(notice.ttl_ms);
}

std::string EncodePageToken(const std::string& after) {
  return absl::WebSafeBase64Escape(after);
}

std::string EncodeInspectPageToken(const InspectCursor& next) {
  return absl::WebSafeBase64Escape(
      next.in_queue ? absl::StrCat("q", next.after_position)
                    : absl::StrCat("h", next.after_token));
}

}  // namespace leasekeeper::server
