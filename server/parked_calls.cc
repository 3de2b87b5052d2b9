#include "server/parked_calls.h"

#include "absl/strings/str_cat.h"

namespace leasekeeper::server {

const ParkedCalls::Call* ParkedCalls::Find(const Key& key) const {
  auto it = calls_.find(key);
  return it == calls_.end() ? nullptr : &it->second.call;
}

void ParkedCalls::Park(const Key& key, PendingAcquire* call,
                       std::string request_id, Tick queued_at, Tick deadline) {
  const uint64_t sequence = next_sequence_++;
  deadlines_.emplace(DeadlineKey(deadline, sequence), key);
  calls_[key] = Slot{.call = Call{.call = call,
                                  .request_id = std::move(request_id),
                                  .queued_at = queued_at,
                                  .deadline = deadline},
                     .sequence = sequence};
}

PendingAcquire* ParkedCalls::Supersede(const Key& key, PendingAcquire* call,
                                       Tick deadline) {
  Slot& slot = calls_.at(key);
  deadlines_.erase(DeadlineKey(slot.call.deadline, slot.sequence));
  slot.sequence = next_sequence_++;
  slot.call.deadline = deadline;
  deadlines_.emplace(DeadlineKey(deadline, slot.sequence), key);
  PendingAcquire* replaced = slot.call.call;
  slot.call.call = call;
  return replaced;
}

std::optional<ParkedCalls::Call> ParkedCalls::Finish(const Key& key) {
  auto it = calls_.find(key);
  if (it == calls_.end()) return std::nullopt;
  Slot slot = std::move(it->second);
  calls_.erase(it);
  deadlines_.erase(DeadlineKey(slot.call.deadline, slot.sequence));
  return std::move(slot.call);
}

Tick ParkedCalls::NextDeadline() const {
  return deadlines_.empty() ? kMaxTick : deadlines_.begin()->first.first;
}

std::optional<ParkedCalls::Key> ParkedCalls::NextDue(Tick now) const {
  if (deadlines_.empty() || deadlines_.begin()->first.first > now) {
    return std::nullopt;
  }
  return deadlines_.begin()->second;
}

std::vector<ParkedCalls::Key> ParkedCalls::Keys() const {
  std::vector<Key> keys;
  keys.reserve(calls_.size());
  for (const auto& [key, slot] : calls_) keys.push_back(key);
  return keys;
}

absl::Status ParkedCalls::CheckInvariants() const {
  if (deadlines_.size() != calls_.size()) {
    return absl::InternalError("wait deadlines do not match parked calls");
  }
  for (const auto& [key, slot] : calls_) {
    auto it = deadlines_.find(DeadlineKey(slot.call.deadline, slot.sequence));
    if (it == deadlines_.end() || it->second != key) {
      return absl::InternalError(absl::StrCat("parked call of ", key.first,
                                              " for ", key.second,
                                              " has no deadline"));
    }
  }
  return absl::OkStatus();
}

}  // namespace leasekeeper::server
