#include "server/retry_cache.h"

namespace leasekeeper::server {

RetryCache::RetryCache(RetryCacheConfig config) : config_(config) {
  if (config_.max_entries == 0) config_.max_entries = 1;
}

RetryEntry* RetryCache::Find(absl::string_view client,
                             absl::string_view request_id, Tick now) {
  auto it = entries_.find(Key(client, request_id));
  if (it == entries_.end()) return nullptr;
  RetryEntry& entry = it->second.entry;
  if (entry.answer.has_value() && now - entry.answered_at >= config_.ttl_ms) {
    entries_.erase(it);
    return nullptr;
  }
  return &entry;
}

RetryEntry& RetryCache::Insert(absl::string_view client,
                               absl::string_view request_id,
                               Fingerprint fingerprint) {
  // Drop stale order records, then make room (oldest first).
  while (!order_.empty()) {
    auto it = entries_.find(order_.front().first);
    const bool stale =
        it == entries_.end() || it->second.generation != order_.front().second;
    if (!stale && entries_.size() < config_.max_entries) break;
    if (!stale) entries_.erase(it);
    order_.pop_front();
  }
  // Erased entries leave stale order records behind the oldest live one;
  // compact them away before they outnumber the live entries.
  if (order_.size() >= 2 * config_.max_entries + 16) {
    std::deque<std::pair<Key, uint64_t>> live;
    for (auto& record : order_) {
      auto it = entries_.find(record.first);
      if (it != entries_.end() && it->second.generation == record.second) {
        live.push_back(std::move(record));
      }
    }
    order_.swap(live);
  }
  Key key(client, request_id);
  const uint64_t generation = next_generation_++;
  Slot& slot = entries_[key];
  slot = Slot{RetryEntry{.fingerprint = std::move(fingerprint)}, generation};
  order_.emplace_back(std::move(key), generation);
  return slot.entry;
}

RetryEntry* RetryCache::Answer(absl::string_view client,
                               absl::string_view request_id,
                               CachedAnswer answer, Tick now) {
  auto it = entries_.find(Key(client, request_id));
  if (it == entries_.end()) return nullptr;
  it->second.entry.answer = std::move(answer);
  it->second.entry.answered_at = now;
  return &it->second.entry;
}

void RetryCache::Erase(absl::string_view client, absl::string_view request_id) {
  entries_.erase(Key(client, request_id));
}

}  // namespace leasekeeper::server
