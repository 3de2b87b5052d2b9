#include "server/watch_hub.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/limit_checks.h"
#include "server/server_errors.h"

namespace leasekeeper::server {

WatchHub::WatchHub(Options options)
    : options_(options),
      limits_{.max_watchers = options.max_watchers,
              .max_prefix_watchers = options.max_prefix_watchers} {}

absl::StatusOr<WatchHub::Subscribed> WatchHub::Subscribe(
    WatchTarget target, std::shared_ptr<WatchSink> sink) {
  absl::MutexLock lock(&mu_);
  if (ended_.has_value()) return *ended_;
  if (absl::Status refused = LimitChecks(limits_).Watchers(
          indexed_, target.prefix, indexed_prefix_);
      !refused.ok()) {
    return refused;
  }
  const WatcherId id = next_id_++;
  auto watcher = std::make_unique<Watcher>();
  watcher->target = std::move(target);
  watcher->sink = std::move(sink);
  IndexLocked(id, watcher->target);
  watchers_.emplace(id, std::move(watcher));
  return Subscribed{.id = id, .sequence = sequence_.load()};
}

void WatchHub::IndexLocked(WatcherId id, const WatchTarget& target) {
  ++indexed_;
  if (!target.prefix) {
    by_lock_[target.name].insert(id);
    return;
  }
  ++indexed_prefix_;
  auto [it, inserted] = by_prefix_.try_emplace(target.name);
  if (inserted) ++prefix_lengths_[target.name.size()];
  it->second.insert(id);
}

void WatchHub::UnindexLocked(WatcherId id, const WatchTarget& target) {
  auto& index = target.prefix ? by_prefix_ : by_lock_;
  auto it = index.find(target.name);
  if (it == index.end() || it->second.erase(id) == 0) return;
  --indexed_;
  if (target.prefix) --indexed_prefix_;
  if (!it->second.empty()) return;
  index.erase(it);
  if (!target.prefix) return;
  auto length = prefix_lengths_.find(target.name.size());
  if (--length->second == 0) prefix_lengths_.erase(length);
}

void WatchHub::Publish(WatchEvent event, storage::LogPosition position) {
  absl::MutexLock lock(&mu_);
  event.sequence = sequence_.fetch_add(1) + 1;
  if (indexed_ == 0) return;
  published_ = std::max(published_, position);
  // Made once a watcher matches, then shared by all of them.
  std::shared_ptr<const WatchEvent> shared;
  auto deliver_all = [&](const absl::flat_hash_set<WatcherId>& ids)
                         ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (shared == nullptr) {
      shared = std::make_shared<const WatchEvent>(std::move(event));
    }
    // DeliverLocked may cut a watcher, which removes it from `ids`: copy
    // the (usually short) list first.
    const std::vector<WatcherId> targets(ids.begin(), ids.end());
    for (WatcherId id : targets) DeliverLocked(id, shared, position);
  };
  const std::string lock_name = event.lock;
  if (auto it = by_lock_.find(lock_name); it != by_lock_.end()) {
    deliver_all(it->second);
  }
  // One lookup per distinct prefix length no longer than the name.
  std::vector<std::string> prefixes;
  for (const auto& [length, count] : prefix_lengths_) {
    if (length > lock_name.size()) break;
    prefixes.push_back(lock_name.substr(0, length));
  }
  for (const std::string& prefix : prefixes) {
    if (auto it = by_prefix_.find(prefix); it != by_prefix_.end()) {
      deliver_all(it->second);
    }
  }
}

bool WatchHub::Watched() const {
  return indexed_.load(std::memory_order_relaxed) > 0;
}

void WatchHub::PublishUnwatched(uint64_t count) {
  sequence_.fetch_add(count, std::memory_order_relaxed);
}

void WatchHub::DeliverLocked(WatcherId id,
                             const std::shared_ptr<const WatchEvent>& e,
                             storage::LogPosition position) {
  auto it = watchers_.find(id);
  if (it == watchers_.end()) return;
  Watcher& watcher = *it->second;
  if (watcher.buffer.size() >= options_.buffer_events) {
    ++cut_;
    EndLocked(id, watcher, WatchFellBehind(options_.buffer_events));
    return;
  }
  watcher.buffer.push_back(Buffered{.event = e, .position = position});
  if (watcher.waiting) owed_wake_.insert(id);
}

void WatchHub::EndLocked(WatcherId id, Watcher& watcher, absl::Status status) {
  if (watcher.end.has_value()) return;
  UnindexLocked(id, watcher.target);
  watcher.buffer.clear();
  watcher.end = std::move(status);
  owed_wake_.insert(id);
}

void WatchHub::MarkDurable(storage::LogPosition position) {
  std::vector<std::shared_ptr<WatchSink>> wake;
  {
    absl::MutexLock lock(&mu_);
    durable_ = std::max(durable_, position);
    for (auto it = owed_wake_.begin(); it != owed_wake_.end();) {
      auto watcher = watchers_.find(*it);
      bool due = watcher == watchers_.end();  // unsubscribed: forget it
      if (!due) {
        const Watcher& w = *watcher->second;
        due = w.end.has_value() ||
              (!w.buffer.empty() && w.buffer.front().position <= durable_);
        if (due) {
          wake.push_back(w.sink);
          watcher->second->waiting = false;
        }
      }
      if (due) {
        owed_wake_.erase(it++);
      } else {
        ++it;
      }
    }
  }
  for (const std::shared_ptr<WatchSink>& sink : wake) sink->Wake();
}

bool WatchHub::AwaitsDurable() {
  absl::MutexLock lock(&mu_);
  return !owed_wake_.empty() || published_ > durable_;
}

WatchHub::Next WatchHub::Take(WatcherId id) {
  absl::MutexLock lock(&mu_);
  auto it = watchers_.find(id);
  if (it == watchers_.end()) {
    return Next{.end = absl::NotFoundError(absl::StrCat("no watcher ", id))};
  }
  Watcher& watcher = *it->second;
  if (watcher.end.has_value()) return Next{.end = *watcher.end};
  if (watcher.buffer.empty() ||
      watcher.buffer.front().position > durable_) {
    watcher.waiting = true;
    // An event published but not yet durable: MarkDurable wakes it.
    if (!watcher.buffer.empty()) owed_wake_.insert(id);
    return Next{};
  }
  Next next{.event = *watcher.buffer.front().event};
  watcher.buffer.pop_front();
  return next;
}

void WatchHub::Unsubscribe(WatcherId id) {
  absl::MutexLock lock(&mu_);
  auto it = watchers_.find(id);
  if (it == watchers_.end()) return;
  if (!it->second->end.has_value()) UnindexLocked(id, it->second->target);
  watchers_.erase(it);
  owed_wake_.erase(id);
}

void WatchHub::EndAll(absl::Status status) {
  std::vector<std::shared_ptr<WatchSink>> wake;
  {
    absl::MutexLock lock(&mu_);
    if (!ended_.has_value()) ended_ = status;
    for (auto& [id, watcher] : watchers_) {
      if (watcher->end.has_value()) continue;
      EndLocked(id, *watcher, *ended_);
      owed_wake_.erase(id);
      wake.push_back(watcher->sink);
    }
  }
  for (const std::shared_ptr<WatchSink>& sink : wake) sink->Wake();
}

WatchHub::Stats WatchHub::GetStats() {
  absl::MutexLock lock(&mu_);
  return Stats{.watchers = indexed_,
               .prefix_watchers = indexed_prefix_,
               .cut = cut_,
               .sequence = sequence_.load()};
}

absl::Status WatchHub::CheckInvariants() {
  absl::MutexLock lock(&mu_);
  size_t indexed = 0;
  size_t indexed_prefix = 0;
  for (const auto& [id, watcher] : watchers_) {
    const auto& index = watcher->target.prefix ? by_prefix_ : by_lock_;
    auto it = index.find(watcher->target.name);
    const bool in_index = it != index.end() && it->second.contains(id);
    if (in_index == watcher->end.has_value()) {
      return absl::InternalError(
          absl::StrCat("watcher ", id, in_index ? " ended but indexed"
                                                : " live but not indexed"));
    }
    if (in_index) {
      ++indexed;
      if (watcher->target.prefix) ++indexed_prefix;
    }
    if (watcher->buffer.size() > options_.buffer_events) {
      return absl::InternalError(absl::StrCat("watcher ", id, " buffers ",
                                              watcher->buffer.size()));
    }
    for (size_t i = 1; i < watcher->buffer.size(); ++i) {
      if (watcher->buffer[i].position < watcher->buffer[i - 1].position ||
          watcher->buffer[i].event->sequence <=
              watcher->buffer[i - 1].event->sequence) {
        return absl::InternalError(
            absl::StrCat("watcher ", id, " buffer out of order"));
      }
    }
  }
  if (indexed != indexed_ || indexed_prefix != indexed_prefix_) {
    return absl::InternalError("watcher counts disagree with the indexes");
  }
  absl::btree_map<size_t, size_t> lengths;
  for (const auto& [prefix, ids] : by_prefix_) {
    if (ids.empty()) return absl::InternalError("empty prefix entry");
    ++lengths[prefix.size()];
  }
  for (const auto& [name, ids] : by_lock_) {
    if (ids.empty()) return absl::InternalError("empty lock entry");
  }
  if (lengths != prefix_lengths_) {
    return absl::InternalError("prefix lengths disagree with the index");
  }
  return absl::OkStatus();
}

}  // namespace leasekeeper::server
