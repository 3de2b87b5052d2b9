#include "core/fenced_store.h"

#include "core/errors.h"

namespace leasekeeper {

absl::Status FencedStore::Write(absl::string_view lock, absl::string_view key,
                                absl::string_view value, FencingToken token) {
  if (lock.empty() || key.empty() || value.empty() || token < 1) {
    return MakeError(ErrorCode::kInvalidArguments);
  }
  if (token < HighWater(lock)) return MakeError(ErrorCode::kStaleToken);
  Fenced& fenced = locks_[lock];
  fenced.high_water = token;
  fenced.values.insert_or_assign(std::string(key), std::string(value));
  return absl::OkStatus();
}

std::optional<std::string> FencedStore::Read(absl::string_view lock,
                                             absl::string_view key) const {
  auto lock_it = locks_.find(lock);
  if (lock_it == locks_.end()) return std::nullopt;
  auto value_it = lock_it->second.values.find(key);
  if (value_it == lock_it->second.values.end()) return std::nullopt;
  return value_it->second;
}

FencingToken FencedStore::HighWater(absl::string_view lock) const {
  auto it = locks_.find(lock);
  return it == locks_.end() ? 0 : it->second.high_water;
}

void FencedStore::ExportTo(CoreSnapshot& snapshot) const {
  snapshot.store.clear();
  snapshot.store.reserve(locks_.size());
  for (const auto& [lock, fenced] : locks_) {
    CoreSnapshot::StoreLock& out = snapshot.store.emplace_back();
    out.lock = lock;
    out.high_water = fenced.high_water;
    out.values.reserve(fenced.values.size());
    for (const auto& [key, value] : fenced.values) {
      out.values.push_back({key, value});
    }
  }
}

void FencedStore::ImportFrom(const CoreSnapshot& snapshot) {
  locks_.clear();
  for (const CoreSnapshot::StoreLock& in : snapshot.store) {
    Fenced& fenced = locks_[in.lock];
    fenced.high_water = in.high_water;
    for (const CoreSnapshot::StoreValue& value : in.values) {
      fenced.values.insert_or_assign(value.key, value.value);
    }
  }
}

}  // namespace leasekeeper
