#include "core/types.h"

namespace leasekeeper {

absl::string_view LockModeName(LockMode mode) {
  return mode == LockMode::kShared ? "shared" : "exclusive";
}

std::optional<LockMode> ParseLockMode(absl::string_view name) {
  if (name == "exclusive") return LockMode::kExclusive;
  if (name == "shared") return LockMode::kShared;
  return std::nullopt;
}

}  // namespace leasekeeper
