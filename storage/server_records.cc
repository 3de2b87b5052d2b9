#include "storage/server_records.h"

#include <algorithm>
#include <tuple>

namespace leasekeeper::storage {
namespace {

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

}  // namespace

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
  return std::equal(a.sessions.begin(), a.sessions.end(), b.sessions.begin(),
                    b.sessions.end(),
                    [&](const auto& x, const auto& y) {
                      return session(x) == session(y);
                    }) &&
         std::equal(a.retries.begin(), a.retries.end(), b.retries.begin(),
                    b.retries.end(), [&](const auto& x, const auto& y) {
                      return retry(x) == retry(y);
                    });
}

void ServerStateReplay::Restore(ServerState state) {
  sessions_.clear();
  retries_.clear();
  next_order_ = 0;
  for (ServerState::Session& s : state.sessions) {
    sessions_[s.session_id] =
        SessionSlot{.order = next_order_++, .client = std::move(s.client)};
  }
  for (ServerState::Retry& r : state.retries) {
    retries_[{std::move(r.client), std::move(r.request_id)}] =
        RetrySlot{.order = next_order_++,
                  .entry = std::move(r.entry),
                  .answered_at = r.answered_at};
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
            auto [it, inserted] =
                retries_.try_emplace({r.client, r.request_id});
            if (inserted) it->second.order = next_order_++;
            it->second.entry = r.entry;
            it->second.answered_at = record.at;
          },
          [&](const srec::RetryForgotten& r) {
            retries_.erase({r.client, r.request_id});
          },
      },
      record.body);
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
  sessions_.clear();
  retries_.clear();
  next_order_ = 0;
  return state;
}

}  // namespace leasekeeper::storage
