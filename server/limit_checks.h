// LimitChecks: every refusal of leasekeeperd's limits (ServerConfig's
// Limits) is decided here: each check answers OK or LimitExceeded naming its
// flag, which the gRPC layer counts by that name (RpcMetrics,
// leasekeeper_limit_refusals_total). A view of a Limits its owner keeps;
// read-only, so thread-safe.
#ifndef LEASEKEEPER_SERVER_LIMIT_CHECKS_H_
#define LEASEKEEPER_SERVER_LIMIT_CHECKS_H_

#include <cstddef>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/fenced_store.h"
#include "server/server_config.h"

namespace leasekeeper::server {

class LimitChecks {
 public:
  // REQUIRES: `limits` outlives the view.
  explicit LimitChecks(const Limits& limits) : limits_(limits) {}

  // A request field's size. Each: OK if `value` has at most that many
  // bytes, else LimitExceeded with the flag named.
  absl::Status ClientId(absl::string_view value) const;   // also session ids
  absl::Status LockName(absl::string_view value) const;   // also prefixes
  absl::Status Key(absl::string_view value) const;
  absl::Status Value(absl::string_view value) const;
  absl::Status Label(absl::string_view value) const;      // also reasons
  absl::Status RequestId(absl::string_view value) const;

  // Whether one more fits. Each: OK while the count is below its limit,
  // else LimitExceeded.
  // A waiter on a lock with `queued` waiters (max-waiters-per-lock).
  absl::Status Waiters(size_t queued) const;
  // A lease for a client holding `held` (max-locks-per-client).
  absl::Status LocksHeld(size_t held) const;
  // A session or session stream beside `existing` ones (max-sessions).
  absl::Status Sessions(size_t existing) const;
  // A watcher beside `watchers` (max-watchers), of them `prefix_watchers`
  // by prefix (max-prefix-watchers, checked for a `prefix` watcher only).
  absl::Status Watchers(size_t watchers, bool prefix,
                        size_t prefix_watchers) const;
  // A write of `value` to (lock, key) in `store`: a new key on a lock with
  // max-keys-per-lock keys, or a store grown past max-store-bytes, is
  // refused; a write that does not grow the store never is. O(1).
  absl::Status StoreWrite(const FencedStore& store, absl::string_view lock,
                          absl::string_view key,
                          absl::string_view value) const;

 private:
  const Limits& limits_;
};

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_LIMIT_CHECKS_H_
