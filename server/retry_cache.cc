#include "server/retry_cache.h"

namespace leasekeeper::server {

RetryCache::RetryCache(RetryCacheConfig config) : config_(config) {
  if (config_.max_entries == 0) config_.max_entries = 1;
}

void RetryCache::Kill(Record& record) {
  index_.erase(&record);
  record.live = false;
  // Free what the dead record owns now; its shell waits for its turn.
  record.client = std::string();
  record.request_id = std::string();
  record.entry = RetryEntry{};
}

RetryEntry* RetryCache::Find(absl::string_view client,
                             absl::string_view request_id, Tick now) {
  auto it = index_.find(KeyView(client, request_id));
  if (it == index_.end()) return nullptr;
  Record& record = **it;
  if (record.entry.answer.has_value() &&
      now - record.entry.answered_at >= config_.ttl_ms) {
    Kill(record);
    return nullptr;
  }
  return &record.entry;
}

RetryEntry& RetryCache::Insert(absl::string_view client,
                               absl::string_view request_id,
                               Fingerprint fingerprint) {
  // An expired entry Find has not dropped yet gives way.
  if (auto it = index_.find(KeyView(client, request_id)); it != index_.end()) {
    Kill(**it);
  }
  // Drop dead records, then make room (oldest first).
  while (!order_.empty()) {
    Record& oldest = order_.front();
    if (oldest.live && index_.size() < config_.max_entries) break;
    if (oldest.live) Kill(oldest);
    order_.pop_front();
  }
  // Erased entries leave dead records behind the oldest live one; compact
  // them away before they outnumber the live entries (invariant 3).
  // O(max_entries) once per at least max_entries + 16 insertions.
  if (order_.size() >= 2 * config_.max_entries + 16) {
    std::deque<Record> live;
    for (Record& record : order_) {
      if (record.live) live.push_back(std::move(record));
    }
    order_.swap(live);
    index_.clear();
    for (Record& record : order_) index_.insert(&record);
  }
  Record& record = order_.emplace_back();
  record.client = std::string(client);
  record.request_id = std::string(request_id);
  record.entry = RetryEntry{.fingerprint = std::move(fingerprint)};
  index_.insert(&record);
  return record.entry;
}

Admitted RetryCache::Admit(absl::string_view client,
                           absl::string_view request_id,
                           const Fingerprint& fingerprint, Tick now,
                           bool first_call_waits) {
  RetryEntry* entry = Find(client, request_id, now);
  if (entry == nullptr) return Admitted{RetryAdmission::kNew, nullptr};
  if (!(entry->fingerprint == fingerprint)) {
    return Admitted{RetryAdmission::kReused, entry};
  }
  if (entry->answer.has_value()) {
    return Admitted{RetryAdmission::kReplay, entry};
  }
  if (first_call_waits) return Admitted{RetryAdmission::kInFlight, entry};
  Erase(client, request_id);
  return Admitted{RetryAdmission::kNew, nullptr};
}

void RetryCache::DropExpiredOldest(Tick now) {
  while (!order_.empty()) {
    Record& oldest = order_.front();
    if (oldest.live) {
      if (!oldest.entry.answer.has_value() ||
          now - oldest.entry.answered_at < config_.ttl_ms) {
        return;
      }
      Kill(oldest);
    }
    order_.pop_front();
  }
}

RetryEntry* RetryCache::Answer(absl::string_view client,
                               absl::string_view request_id,
                               CachedAnswer answer, Tick now) {
  DropExpiredOldest(now);
  auto it = index_.find(KeyView(client, request_id));
  if (it == index_.end()) return nullptr;
  RetryEntry& entry = (*it)->entry;
  entry.answer = std::move(answer);
  entry.answered_at = now;
  return &entry;
}

bool RetryCache::Erase(absl::string_view client, absl::string_view request_id) {
  auto it = index_.find(KeyView(client, request_id));
  if (it == index_.end()) return false;
  const bool answered = (*it)->entry.answer.has_value();
  Kill(**it);
  return answered;
}

void RetryCache::Restore(absl::string_view client, absl::string_view request_id,
                         Fingerprint fingerprint, CachedAnswer answer,
                         Tick answered_at) {
  RetryEntry& entry = Insert(client, request_id, std::move(fingerprint));
  entry.answer = std::move(answer);
  entry.answered_at = answered_at;
  entry.delivered = true;
}

}  // namespace leasekeeper::server
