// CoreOwner's limits on leases per client and on the fenced store. Same
// class and the same rules as core_owner.cc (everything under mu_).
#include "server/core_owner.h"
#include "server/server_errors.h"

namespace leasekeeper::server {

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
