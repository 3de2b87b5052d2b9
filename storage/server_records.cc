#include "storage/server_records.h"

#include <algorithm>
#include <tuple>

#include "storage/overloaded.h"

namespace leasekeeper::storage {

bool SameServerRecord(const ServerRecord& a, const ServerRecord& b) {
  if (a.at != b.at || a.body.index() != b.body.index()) return false;
  return std::visit(
      Overloaded{
          [&](const srec::SessionOpened& x) {
            const auto& y = std::get<srec::SessionOpened>(b.body);
            return x.session_id == y.session_id && x.client == y.client;
          },
          [&](const srec::SessionEnded& x) {
            return x.session_id ==
                   std::get<srec::SessionEnded>(b.body).session_id;
          },
          [&](const srec::RetryAnswered& x) {
            const auto& y = std::get<srec::RetryAnswered>(b.body);
            return x.client == y.client && x.request_id == y.request_id &&
                   x.entry == y.entry;
          },
          [&](const srec::RetryForgotten& x) {
            const auto& y = std::get<srec::RetryForgotten>(b.body);
            return x.client == y.client && x.request_id == y.request_id;
          },
          [&](const srec::LabelSet& x) {
            const auto& y = std::get<srec::LabelSet>(b.body);
            return x.client == y.client && x.lock == y.lock &&
                   x.label == y.label;
          },
          [&](const srec::LabelCleared& x) {
            const auto& y = std::get<srec::LabelCleared>(b.body);
            return x.client == y.client && x.lock == y.lock;
          },
      },
      a.body);
}

bool SameServerState(const ServerState& a, const ServerState& b) {
  auto session = [](const ServerState::Session& s) {
    return std::tie(s.session_id, s.client);
  };
  auto retry = [](const ServerState::Retry& r) {
    return std::tie(r.client, r.request_id, r.entry, r.answered_at);
  };
  auto label = [](const ServerState::Label& l) {
    return std::tie(l.client, l.lock, l.label);
  };
  return std::equal(a.sessions.begin(), a.sessions.end(), b.sessions.begin(),
                    b.sessions.end(),
                    [&](const auto& x, const auto& y) {
                      return session(x) == session(y);
                    }) &&
         std::equal(a.retries.begin(), a.retries.end(), b.retries.begin(),
                    b.retries.end(), [&](const auto& x, const auto& y) {
                      return retry(x) == retry(y);
                    }) &&
         std::equal(a.labels.begin(), a.labels.end(), b.labels.begin(),
                    b.labels.end(), [&](const auto& x, const auto& y) {
                      return label(x) == label(y);
                    });
}

void ServerStateReplay::Restore(ServerState state) {
  sessions_.clear();
  retries_.clear();
  labels_.clear();
  next_order_ = 0;
  for (ServerState::Session& s : state.sessions) {
    sessions_[s.session_id] =
        SessionSlot{.order = next_order_++, .client = std::move(s.client)};
  }
  retry_order_.clear();
  for (ServerState::Retry& r : state.retries) {
    RetryKey key{std::move(r.client), std::move(r.request_id)};
    const uint64_t order = next_order_++;
    if (retry_ttl_ms_ > 0) retry_order_.emplace_back(order, key);
    retries_[std::move(key)] = RetrySlot{
        .order = order, .entry = std::move(r.entry), .answered_at = r.answered_at};
  }
  for (ServerState::Label& l : state.labels) {
    if (l.label.empty()) continue;  // invariant 1
    labels_[{std::move(l.client), std::move(l.lock)}] = std::move(l.label);
  }
}

void ServerStateReplay::Apply(const ServerRecord& record) {
  std::visit(
      Overloaded{
          [&](const srec::SessionOpened& r) {
            sessions_[r.session_id] =
                SessionSlot{.order = next_order_++, .client = r.client};
          },
          [&](const srec::SessionEnded& r) { sessions_.erase(r.session_id); },
          [&](const srec::RetryAnswered& r) {
            if (retry_ttl_ms_ > 0) DropExpiredRetries(record.at);
            auto [it, inserted] =
                retries_.try_emplace({r.client, r.request_id});
            if (inserted) {
              it->second.order = next_order_++;
              if (retry_ttl_ms_ > 0) {
                retry_order_.emplace_back(it->second.order, it->first);
              }
            }
            it->second.entry = r.entry;
            it->second.answered_at = record.at;
          },
          [&](const srec::RetryForgotten& r) {
            retries_.erase({r.client, r.request_id});
          },
          [&](const srec::LabelSet& r) {
            if (r.label.empty()) {  // invariant 1: as a clear
              labels_.erase({r.client, r.lock});
            } else {
              labels_[{r.client, r.lock}] = r.label;
            }
          },
          [&](const srec::LabelCleared& r) {
            labels_.erase({r.client, r.lock});
          },
      },
      record.body);
}

void ServerStateReplay::DropExpiredRetries(Tick now) {
  while (!retry_order_.empty()) {
    const auto& [order, key] = retry_order_.front();
    auto it = retries_.find(key);
    if (it != retries_.end() && it->second.order == order) {
      if (it->second.answered_at + retry_ttl_ms_ > now) return;
      retries_.erase(it);
    }
    retry_order_.pop_front();
  }
}

ServerState ServerStateReplay::Take() {
  std::vector<std::pair<uint64_t, ServerState::Session>> sessions;
  sessions.reserve(sessions_.size());
  for (auto& [id, slot] : sessions_) {
    sessions.emplace_back(slot.order,
                          ServerState::Session{.session_id = id,
                                               .client = std::move(slot.client)});
  }
  std::vector<std::pair<uint64_t, ServerState::Retry>> retries;
  retries.reserve(retries_.size());
  for (auto& [key, slot] : retries_) {
    retries.emplace_back(slot.order,
                         ServerState::Retry{.client = key.first,
                                            .request_id = key.second,
                                            .entry = std::move(slot.entry),
                                            .answered_at = slot.answered_at});
  }
  auto by_order = [](const auto& a, const auto& b) { return a.first < b.first; };
  std::sort(sessions.begin(), sessions.end(), by_order);
  std::sort(retries.begin(), retries.end(), by_order);
  ServerState state;
  state.sessions.reserve(sessions.size());
  for (auto& [order, s] : sessions) state.sessions.push_back(std::move(s));
  state.retries.reserve(retries.size());
  for (auto& [order, r] : retries) state.retries.push_back(std::move(r));
  state.labels.reserve(labels_.size());
  for (auto& [key, label] : labels_) {
    state.labels.push_back(ServerState::Label{
        .client = key.first, .lock = key.second, .label = std::move(label)});
  }
  // By key: the same labels give the same state, whatever their history.
  std::sort(state.labels.begin(), state.labels.end(),
            [](const ServerState::Label& a, const ServerState::Label& b) {
              return std::tie(a.client, a.lock) < std::tie(b.client, b.lock);
            });
  sessions_.clear();
  retries_.clear();
  retry_order_.clear();
  labels_.clear();
  next_order_ = 0;
  return state;
}

}  // namespace leasekeeper::storage
