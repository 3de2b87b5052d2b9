#include "client/types.h"

namespace leasekeeper::client {

absl::string_view LockModeName(LockMode mode) {
  switch (mode) {
    case LockMode::kExclusive:
      return "exclusive";
    case LockMode::kShared:
      return "shared";
    case LockMode::kSemaphore:
      return "semaphore";
  }
  return "exclusive";
}

std::optional<LockMode> ParseLockMode(absl::string_view name) {
  if (name == "exclusive") return LockMode::kExclusive;
  if (name == "shared") return LockMode::kShared;
  if (name == "semaphore") return LockMode::kSemaphore;
  return std::nullopt;
}

absl::string_view LeaseEndReasonName(LeaseEndReason reason) {
  switch (reason) {
    case LeaseEndReason::kReleased:
      return "released";
    case LeaseEndReason::kNotHolder:
      return "not_holder";
    case LeaseEndReason::kExpired:
      return "expired";
    case LeaseEndReason::kDeadlockVictim:
      return "deadlock_victim";
    case LeaseEndReason::kSessionLost:
      return "session_lost";
    case LeaseEndReason::kForced:
      return "forced";
  }
  return "released";
}

}  // namespace leasekeeper::client
