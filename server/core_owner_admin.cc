// CoreOwner's counters behind leasekeeperd's metrics, and the per-client
// lease limit. Same class and the same rules as core_owner.cc (everything
// under mu_); kept apart so the hot paths stay readable. ForceRelease needs
// Effects and lives in core_owner.cc.
#include <algorithm>
#include <variant>

#include "core/errors.h"
#include "server/core_owner.h"
#include "server/server_errors.h"

namespace leasekeeper::server {

CoreOwner::Counters CoreOwner::GetCounters() {
  absl::MutexLock lock(&mu_);
  return counters_;
}

absl::StatusOr<Reply> CoreOwner::CountLocked(const Operation& op,
                                             absl::StatusOr<Reply> reply) {
  if (!reply.ok()) {
    if (std::holds_alternative<op::Write>(op.body) &&
        ErrorCodeOf(reply.status()) == ErrorCode::kStaleToken) {
      ++counters_.stale_writes_refused;
    }
    return reply;
  }
  if (const auto* acquired = std::get_if<AcquireOutcome>(&*reply)) {
    switch (acquired->kind) {
      case AcquireOutcome::Kind::kGranted:
        ++counters_.acquired_at_once;
        CountAcquireWaitLocked(0);
        break;
      case AcquireOutcome::Kind::kQueued:
        ++counters_.acquired_queued;
        break;
      case AcquireOutcome::Kind::kDeadlock:
        ++counters_.acquired_deadlock;
        break;
    }
    counters_.deadlock_victims += acquired->aborted.size();
  } else if (std::holds_alternative<op::Renew>(op.body)) {
    ++counters_.renewals;
  } else if (const auto* released = std::get_if<ReleaseOutcome>(&*reply)) {
    if (*released == ReleaseAnswer::kReleased) {
      ++counters_.releases;
    } else {
      ++counters_.withdrawals;
    }
  } else if (std::holds_alternative<op::Withdraw>(op.body) &&
             std::get<bool>(*reply)) {
    ++counters_.withdrawals;
  }
  return reply;
}

void CoreOwner::CountEventLocked(const Event& event) {
  switch (event.kind) {
    case Event::Kind::kLapsed:
      ++counters_.lapses;
      break;
    case Event::Kind::kGrantedFromQueue:
      ++counters_.granted_from_queue;
      break;
    case Event::Kind::kReleasedByOwner:
      ++counters_.releases;
      break;
    case Event::Kind::kWithdrawnByOwner:
      ++counters_.withdrawals;
      break;
    case Event::Kind::kAbortedWaiter:
    case Event::Kind::kAbortedHolder:
      break;  // counted once per client, from the Acquire's abort list
  }
}

void CoreOwner::CountAcquireWaitLocked(int64_t waited_ms) {
  const auto& bounds = Counters::kAcquireWaitBoundsMs;
  const size_t bucket =
      std::lower_bound(bounds.begin(), bounds.end(), waited_ms) -
      bounds.begin();
  ++counters_.acquire_waits[bucket];
  counters_.acquire_wait_ms_sum += static_cast<uint64_t>(waited_ms);
}

absl::Status CoreOwner::CheckLocksPerClientLocked(const std::string& client,
                                                  Tick now) {
  const size_t limit = config_.limits.max_locks_per_client;
  // AcquireLocked's caller advanced to `now` already: nothing lapses here.
  // (An empty client, refused by validation, holds nothing.)
  const absl::StatusOr<ClientView> view = machine_.Status(now, client);
  if (!view.ok() || view->holds.size() < limit) return absl::OkStatus();
  return LimitExceeded("max-locks-per-client", static_cast<int64_t>(limit));
}

absl::Status CoreOwner::CheckStoreLimitsLocked(const WriteArgs& args) {
  const FencedStore& store = machine_.store();
  const Limits& limits = config_.limits;
  if (!store.Contains(args.lock, args.key) &&
      store.KeyCount(args.lock) >= limits.max_keys_per_lock) {
    return LimitExceeded("max-keys-per-lock",
                         static_cast<int64_t>(limits.max_keys_per_lock));
  }
  const size_t after = store.BytesAfterWrite(args.lock, args.key, args.value);
  if (after > limits.max_store_bytes && after > store.bytes()) {
    return LimitExceeded("max-store-bytes",
                         static_cast<int64_t>(limits.max_store_bytes));
  }
  return absl::OkStatus();
}

}  // namespace leasekeeper::server
