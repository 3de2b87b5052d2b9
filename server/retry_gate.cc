#include "server/retry_gate.h"

#include <algorithm>
#include <utility>

#include "absl/status/statusor.h"
#include "server/retry_entry_codec.h"

namespace leasekeeper::server {

RetryGate::RetryGate(RetryCacheConfig config, DurableStateMachine& log)
    : cache_(config), log_(log) {}

void RetryGate::Begin(const std::string& client, const std::string& request_id,
                      Fingerprint fingerprint) {
  cache_.Insert(client, request_id, std::move(fingerprint));
}

bool RetryGate::Answer(const std::string& client,
                       const std::string& request_id, CachedAnswer answer,
                       Tick now) {
  RetryEntry* entry = cache_.Answer(client, request_id, std::move(answer), now);
  if (entry == nullptr) return false;
  if (log_.persistent()) {
    log_.Log(storage::ServerRecord{
        now, storage::srec::RetryAnswered{
                 client, request_id,
                 EncodeRetryEntry(entry->fingerprint, *entry->answer)}});
  }
  if (!IsAcquire(*entry)) return false;
  ++entry->deliveries_in_flight;
  return true;
}

void RetryGate::Forget(const std::string& client,
                       const std::string& request_id, Tick now) {
  if (cache_.Erase(client, request_id)) {
    log_.Log(storage::ServerRecord{
        now, storage::srec::RetryForgotten{client, request_id}});
  }
}

bool RetryGate::CallFinished(const std::string& client,
                             const std::string& request_id, bool cancelled,
                             Tick now) {
  RetryEntry* entry = cache_.Find(client, request_id, now);
  if (entry == nullptr) return cancelled;
  entry->deliveries_in_flight = std::max(0, entry->deliveries_in_flight - 1);
  if (!cancelled) entry->delivered = true;
  const bool undelivered =
      cancelled && entry->deliveries_in_flight == 0 && !entry->delivered;
  if (undelivered) Forget(client, request_id, now);
  return undelivered;
}

void RetryGate::SaveTo(storage::ServerState& state) const {
  state.retries.reserve(cache_.size());
  cache_.ForEachAnswered([&](const std::string& client,
                             const std::string& request_id,
                             const RetryEntry& entry) {
    state.retries.push_back(storage::ServerState::Retry{
        .client = client,
        .request_id = request_id,
        .entry = EncodeRetryEntry(entry.fingerprint, *entry.answer),
        .answered_at = entry.answered_at});
  });
}

size_t RetryGate::Restore(std::vector<storage::ServerState::Retry> retries) {
  size_t unreadable = 0;
  for (storage::ServerState::Retry& r : retries) {
    absl::StatusOr<DecodedRetryEntry> entry = DecodeRetryEntry(r.entry);
    if (!entry.ok()) {
      // A retry then runs afresh, as it would after the entry's ttl.
      ++unreadable;
      continue;
    }
    if (const auto* acquired =
            std::get_if<absl::StatusOr<AcquireAnswer>>(&entry->answer);
        acquired != nullptr && acquired->ok() &&
        (*acquired)->kind == AcquireAnswer::Kind::kQueued) {
      continue;
    }
    cache_.Restore(r.client, r.request_id, std::move(entry->fingerprint),
                   std::move(entry->answer), r.answered_at);
  }
  return unreadable;
}

}  // namespace leasekeeper::server
