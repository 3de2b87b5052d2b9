#include "server/owner_counters.h"

#include <algorithm>
#include <variant>

#include "core/errors.h"

namespace leasekeeper::server {

void OwnerCounters::CountApplied(const Operation& op,
                                 const absl::StatusOr<Reply>& reply) {
  if (!reply.ok()) {
    if ((std::holds_alternative<op::Write>(op.body) ||
         std::holds_alternative<op::Delete>(op.body)) &&
        ErrorCodeOf(reply.status()) == ErrorCode::kStaleToken) {
      ++counts_.stale_writes_refused;
    }
    return;
  }
  if (const auto* acquired = std::get_if<AcquireOutcome>(&*reply)) {
    switch (acquired->kind) {
      case AcquireOutcome::Kind::kGranted:
        ++counts_.acquired_at_once;
        CountAcquireWait(0);
        break;
      case AcquireOutcome::Kind::kQueued:
        ++counts_.acquired_queued;
        break;
      case AcquireOutcome::Kind::kDeadlock:
        ++counts_.acquired_deadlock;
        break;
    }
    counts_.deadlock_victims += acquired->aborted.size();
  } else if (std::holds_alternative<op::Renew>(op.body)) {
    ++counts_.renewals;
  } else if (const auto* released = std::get_if<ReleaseOutcome>(&*reply)) {
    if (*released == ReleaseOutcome::kReleased) {
      ++counts_.releases;
    } else {
      ++counts_.withdrawals;
    }
  } else if (std::holds_alternative<op::Withdraw>(op.body) &&
             std::get<bool>(*reply)) {
    ++counts_.withdrawals;
  } else if (std::holds_alternative<op::Write>(op.body)) {
    ++counts_.store_writes;
  } else if (std::holds_alternative<op::Delete>(op.body)) {
    ++counts_.store_deletes;
  }
}

void OwnerCounters::CountEvent(const Event& event) {
  switch (event.kind) {
    case Event::Kind::kLapsed:
      ++counts_.lapses;
      break;
    case Event::Kind::kGrantedFromQueue:
      ++counts_.granted_from_queue;
      break;
    case Event::Kind::kReleasedByOwner:
      ++counts_.releases;
      break;
    case Event::Kind::kWithdrawnByOwner:
      ++counts_.withdrawals;
      break;
    case Event::Kind::kAbortedWaiter:
    case Event::Kind::kAbortedHolder:
      break;
  }
}

void OwnerCounters::CountAcquireWait(int64_t waited_ms) {
  const auto& bounds = Counts::kAcquireWaitBoundsMs;
  const size_t bucket =
      std::lower_bound(bounds.begin(), bounds.end(), waited_ms) -
      bounds.begin();
  ++counts_.acquire_waits[bucket];
  counts_.acquire_wait_ms_sum += static_cast<uint64_t>(waited_ms);
}

}  // namespace leasekeeper::server
