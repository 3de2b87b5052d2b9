#include "metrics/connection_table.h"

namespace leasekeeper::metrics {

ConnectionTable::ConnectionTable(ConnectionLimits limits) : limits_(limits) {}

ConnectionTable::Admission ConnectionTable::Admit(int64_t now_ms) {
  Admission admission{.id = next_id_++, .evicted = std::nullopt};
  if (entries_.size() >= static_cast<size_t>(limits_.max_connections)) {
    const Id oldest = by_progress_.begin()->second;
    Remove(oldest);
    admission.evicted = oldest;
  }
  const Entry entry{.last_progress_ms = now_ms,
                    .deadline_ms = now_ms + limits_.header_timeout_ms};
  entries_.emplace(admission.id, entry);
  by_progress_.emplace(entry.last_progress_ms, admission.id);
  by_deadline_.emplace(entry.deadline_ms, admission.id);
  return admission;
}

void ConnectionTable::Progress(Id id, int64_t now_ms) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  by_progress_.erase({it->second.last_progress_ms, id});
  it->second.last_progress_ms = now_ms;
  by_progress_.emplace(now_ms, id);
}

void ConnectionTable::StartResponse(Id id, int64_t now_ms) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  by_deadline_.erase({it->second.deadline_ms, id});
  it->second.deadline_ms = now_ms + limits_.write_timeout_ms;
  by_deadline_.emplace(it->second.deadline_ms, id);
}

void ConnectionTable::Remove(Id id) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  by_progress_.erase({it->second.last_progress_ms, id});
  by_deadline_.erase({it->second.deadline_ms, id});
  entries_.erase(it);
}

std::vector<ConnectionTable::Id> ConnectionTable::TakeExpired(int64_t now_ms) {
  std::vector<Id> expired;
  while (!by_deadline_.empty() && by_deadline_.begin()->first <= now_ms) {
    const Id id = by_deadline_.begin()->second;
    Remove(id);
    expired.push_back(id);
  }
  return expired;
}

std::optional<int64_t> ConnectionTable::NextDeadline() const {
  if (by_deadline_.empty()) return std::nullopt;
  return by_deadline_.begin()->first;
}

}  // namespace leasekeeper::metrics
