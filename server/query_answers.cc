#include "server/query_answers.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/errors.h"

namespace leasekeeper::server {

absl::StatusOr<InspectAnswer> QueryAnswers::Inspect(const std::string& lock,
                                                    const InspectCursor& from,
                                                    size_t limit) {
  if (lock.empty()) return MakeError(ErrorCode::kInvalidArguments);
  LockPage page = machine_.InspectPage(now_, lock, from, limit);
  InspectAnswer answer;
  answer.holders.reserve(page.holders.size());
  for (const HolderView& holder : page.holders) {
    answer.holders.push_back(Holder(holder));
  }
  answer.queue = Waiters(lock, std::move(page.queue), page.first_position);
  answer.capacity = page.capacity;
  answer.next = page.next;
  return answer;
}

absl::StatusOr<StatusAnswer> QueryAnswers::Status(const std::string& client,
                                                  const std::string& after,
                                                  size_t limit) {
  if (client.empty()) return MakeError(ErrorCode::kInvalidArguments);
  ClientPage page = machine_.StatusPage(now_, client, after, limit);
  StatusAnswer answer;
  answer.age = page.age;
  answer.waiting = std::move(page.waiting);
  answer.holds.reserve(page.holds.size());
  for (const HolderView& hold : page.holds) {
    answer.holds.push_back(Holder(hold));
  }
  answer.session = sessions_.StateOf(client);
  answer.next_after = std::move(page.next_after);
  return answer;
}

ListLocksAnswer QueryAnswers::ListLocks(const std::string& prefix,
                                        const std::string& after,
                                        size_t limit) {
  limit = std::max<size_t>(limit, 1);
  ListLocksAnswer answer;
  std::vector<std::string> names =
      machine_.table().ActiveLocks(prefix, after, limit + 1);
  const size_t shown = std::min(limit, names.size());
  answer.locks.reserve(shown);
  for (size_t i = 0; i < shown; ++i) {
    // Active names are never empty, so the view is never an error.
    absl::StatusOr<LockView> view = machine_.Inspect(now_, names[i]);
    if (!view.ok()) continue;
    LockSummary summary;
    summary.name = names[i];
    for (const HolderView& holder : view->holders) {
      summary.holders.push_back(Holder(holder));
    }
    summary.queue_length = static_cast<int64_t>(view->queue.size());
    summary.capacity = view->capacity;
    answer.locks.push_back(std::move(summary));
  }
  if (names.size() > limit) answer.next_after = names[limit - 1];
  return answer;
}

std::vector<WatchStart::Lock> QueryAnswers::WatchSnapshot(
    const WatchTarget& target) {
  std::vector<std::string> names;
  if (target.prefix) {
    names = machine_.table().ActiveLocks(target.name, "", SIZE_MAX);
  } else {
    names.push_back(target.name);
  }
  std::vector<WatchStart::Lock> locks;
  for (std::string& name : names) {
    // Names are never empty here (ParseWatch, active names), so the view
    // is never an error.
    absl::StatusOr<LockView> view = machine_.Inspect(now_, name);
    if (!view.ok() || (view->holders.empty() && view->queue.empty())) {
      continue;
    }
    WatchStart::Lock lock{.name = std::move(name)};
    for (const HolderView& holder : view->holders) {
      lock.holders.push_back(Holder(holder));
    }
    lock.queue = Waiters(lock.name, std::move(view->queue), 1);
    locks.push_back(std::move(lock));
  }
  return locks;
}

HolderInfo QueryAnswers::Holder(const HolderView& view) const {
  return HolderInfo{
      .view = view,
      .expires_in_ms = SureLeftMs(view.expires_at, now_, rounding_ticks_),
      .label = Label(view.client, view.lock)};
}

std::string QueryAnswers::Label(const std::string& client,
                                const std::string& lock) const {
  auto it = labels_.find(std::make_pair(client, lock));
  return it == labels_.end() ? std::string() : it->second;
}

std::vector<WaiterInfo> QueryAnswers::Waiters(const std::string& lock,
                                              std::vector<WaiterView> queue,
                                              int64_t first_position) const {
  std::vector<WaiterInfo> waiters;
  waiters.reserve(queue.size());
  int64_t position = first_position;
  for (WaiterView& waiter : queue) {
    std::string label = Label(waiter.client, lock);
    waiters.push_back(WaiterInfo{.view = std::move(waiter),
                                 .position = position++,
                                 .label = std::move(label)});
  }
  return waiters;
}

}  // namespace leasekeeper::server
