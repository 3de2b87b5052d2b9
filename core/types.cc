#include "core/types.h"

namespace leasekeeper {

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
  return std::nullopt;
}

}  // namespace leasekeeper
