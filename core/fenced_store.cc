#include "core/fenced_store.h"

#include <algorithm>

#include "core/errors.h"

namespace leasekeeper {

absl::Status FencedStore::CheckWriteArguments(absl::string_view lock,
                                              absl::string_view key,
                                              absl::string_view value,
                                              FencingToken token) {
  if (lock.empty() || key.empty() || value.empty() || token < 1) {
    return MakeError(ErrorCode::kInvalidArguments);
  }
  return absl::OkStatus();
}

absl::Status FencedStore::Write(absl::string_view lock, absl::string_view key,
                                absl::string_view value, FencingToken token) {
  if (absl::Status s = CheckWriteArguments(lock, key, value, token); !s.ok()) {
    return s;
  }
  if (token < HighWater(lock)) return MakeError(ErrorCode::kStaleToken);
  Fenced& fenced = Entry(lock);
  fenced.high_water = token;
  if (auto it = fenced.values.find(key); it != fenced.values.end()) {
    bytes_ = bytes_ - it->second.size() + value.size();
    it->second.assign(value.data(), value.size());
  } else {
    bytes_ += key.size() + value.size();
    ++key_count_;
    fenced.values.emplace(std::string(key), std::string(value));
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> FencedStore::Delete(absl::string_view lock,
                                         absl::string_view key,
                                         FencingToken token) {
  if (lock.empty() || key.empty() || token < 1) {
    return MakeError(ErrorCode::kInvalidArguments);
  }
  if (token < HighWater(lock)) return MakeError(ErrorCode::kStaleToken);
  Fenced& fenced = Entry(lock);
  fenced.high_water = token;
  auto it = fenced.values.find(key);
  if (it == fenced.values.end()) return false;
  bytes_ -= it->first.size() + it->second.size();
  --key_count_;
  fenced.values.erase(it);
  return true;
}

KeyPage FencedStore::Keys(absl::string_view lock, absl::string_view after,
                          size_t limit) const {
  KeyPage page;
  auto lock_it = locks_.find(lock);
  if (lock_it == locks_.end()) return page;
  const auto& values = lock_it->second.values;
  limit = std::max<size_t>(limit, 1);
  auto it = values.upper_bound(after);
  for (; it != values.end() && page.keys.size() < limit; ++it) {
    page.keys.push_back(it->first);
  }
  page.more = it != values.end();
  return page;
}

FencedStore::Fenced& FencedStore::Entry(absl::string_view lock) {
  if (auto it = locks_.find(lock); it != locks_.end()) return it->second;
  bytes_ += lock.size();
  return locks_[lock];
}

size_t FencedStore::BytesAfterWrite(absl::string_view lock,
                                    absl::string_view key,
                                    absl::string_view value) const {
  auto lock_it = locks_.find(lock);
  if (lock_it == locks_.end()) {
    return bytes_ + lock.size() + key.size() + value.size();
  }
  auto value_it = lock_it->second.values.find(key);
  if (value_it == lock_it->second.values.end()) {
    return bytes_ + key.size() + value.size();
  }
  return bytes_ - value_it->second.size() + value.size();
}

size_t FencedStore::KeyCount(absl::string_view lock) const {
  auto it = locks_.find(lock);
  return it == locks_.end() ? 0 : it->second.values.size();
}

bool FencedStore::Contains(absl::string_view lock,
                           absl::string_view key) const {
  auto it = locks_.find(lock);
  return it != locks_.end() && it->second.values.contains(key);
}

absl::Status FencedStore::Fence(absl::string_view lock, FencingToken token) {
  if (lock.empty() || token < 1) return MakeError(ErrorCode::kInvalidArguments);
  if (token < HighWater(lock)) return MakeError(ErrorCode::kStaleToken);
  Entry(lock).high_water = token;
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
  bytes_ = 0;
  key_count_ = 0;
  for (const CoreSnapshot::StoreLock& in : snapshot.store) {
    Fenced& fenced = Entry(in.lock);
    fenced.high_water = in.high_water;
    for (const CoreSnapshot::StoreValue& value : in.values) {
      fenced.values.insert_or_assign(value.key, value.value);
    }
    for (const auto& [key, value] : fenced.values) {
      bytes_ += key.size() + value.size();
    }
    key_count_ += fenced.values.size();
  }
}

}  // namespace leasekeeper
