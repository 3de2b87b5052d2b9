#include "server/limit_checks.h"

#include <cstdint>

#include "server/server_errors.h"

namespace leasekeeper::server {
namespace {

absl::Status Refused(absl::string_view flag, size_t limit) {
  return LimitExceeded(flag, static_cast<int64_t>(limit));
}

absl::Status AtMost(absl::string_view value, size_t max,
                    absl::string_view flag) {
  return value.size() > max ? Refused(flag, max) : absl::OkStatus();
}

absl::Status Below(size_t count, size_t max, absl::string_view flag) {
  return count >= max ? Refused(flag, max) : absl::OkStatus();
}

}  // namespace

absl::Status LimitChecks::ClientId(absl::string_view value) const {
  return AtMost(value, limits_.max_client_id_bytes, "max-client-id-bytes");
}

absl::Status LimitChecks::LockName(absl::string_view value) const {
  return AtMost(value, limits_.max_lock_name_bytes, "max-lock-name-bytes");
}

absl::Status LimitChecks::Key(absl::string_view value) const {
  return AtMost(value, limits_.max_key_bytes, "max-key-bytes");
}

absl::Status LimitChecks::Value(absl::string_view value) const {
  return AtMost(value, limits_.max_value_bytes, "max-value-bytes");
}

absl::Status LimitChecks::Label(absl::string_view value) const {
  return AtMost(value, limits_.max_label_bytes, "max-label-bytes");
}

absl::Status LimitChecks::RequestId(absl::string_view value) const {
  return AtMost(value, limits_.max_request_id_bytes, "max-request-id-bytes");
}

absl::Status LimitChecks::Waiters(size_t queued) const {
  if (static_cast<int64_t>(queued) >= limits_.max_waiters_per_lock) {
    return LimitExceeded("max-waiters-per-lock", limits_.max_waiters_per_lock);
  }
  return absl::OkStatus();
}

absl::Status LimitChecks::LocksHeld(size_t held) const {
  return Below(held, limits_.max_locks_per_client, "max-locks-per-client");
}

absl::Status LimitChecks::Sessions(size_t existing) const {
  return Below(existing, limits_.max_sessions, "max-sessions");
}

absl::Status LimitChecks::Watchers(size_t watchers, bool prefix,
                                   size_t prefix_watchers) const {
  if (absl::Status s = Below(watchers, limits_.max_watchers, "max-watchers");
      !s.ok()) {
    return s;
  }
  if (!prefix) return absl::OkStatus();
  return Below(prefix_watchers, limits_.max_prefix_watchers,
               "max-prefix-watchers");
}

absl::Status LimitChecks::StoreWrite(const FencedStore& store,
                                     absl::string_view lock,
                                     absl::string_view key,
                                     absl::string_view value) const {
  if (!store.Contains(lock, key) &&
      store.KeyCount(lock) >= limits_.max_keys_per_lock) {
    return Refused("max-keys-per-lock", limits_.max_keys_per_lock);
  }
  const size_t after = store.BytesAfterWrite(lock, key, value);
  if (after > limits_.max_store_bytes && after > store.bytes()) {
    return Refused("max-store-bytes", limits_.max_store_bytes);
  }
  return absl::OkStatus();
}

}  // namespace leasekeeper::server
