#include "server/owner_consistency.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace leasekeeper::server {

absl::Status CheckOwnerConsistency(const LockTable& table,
                                   const ParkedCalls& parked,
                                   const HolderLabels& labels, WatchHub& hub,
                                   const SessionTable& sessions,
                                   bool detached_all) {
  if (absl::Status s = table.CheckInvariants(); !s.ok()) return s;
  // The core's own record of whom each client waits for (nothing mirrors
  // it here).
  auto waits_for = [&table](const ParkedCalls::Key& key) {
    std::optional<absl::string_view> awaited = table.WaitingFor(key.first);
    return awaited.has_value() && *awaited == key.second;
  };
  for (const ParkedCalls::Key& key : parked.Keys()) {
    if (!waits_for(key)) {
      return absl::InternalError(absl::StrCat(
          "parked call of ", key.first, " for ", key.second, " does not wait"));
    }
  }
  for (const auto& [key, label] : labels) {
    // O(1) per label (not a view of the lock's every holder).
    if (!waits_for(key) && !table.LeaseOf(key.first, key.second).has_value()) {
      return absl::InternalError(absl::StrCat("label of ", key.first, " for ",
                                              key.second, " outlived its use"));
    }
  }
  if (absl::Status s = parked.CheckInvariants(); !s.ok()) return s;
  if (absl::Status s = hub.CheckInvariants(); !s.ok()) return s;
  return sessions.CheckInvariants(detached_all);
}

}  // namespace leasekeeper::server
