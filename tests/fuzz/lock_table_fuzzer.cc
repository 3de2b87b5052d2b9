// Structure-aware fuzzer for the core: turns bytes into a sequence of
// LockTable / StateMachine calls over a small world (6 clients, 4 locks),
// and after every call compares the core with a reference model written
// here from the contract alone.
//
// The reference model is deliberately naive (linear scans, the wait-for
// graph rebuilt from scratch with an edge per waiter pair) so that it is
// easy to check against the contract's text. It includes the daemon's
// counting semaphores: capacity, mismatches, and deadlocks by the AND-OR
// rule (freedom as a fixpoint over the whole graph). After each call the fuzzer
// aborts, printing the calls so far, when:
//  - the call's outcome (result or error code) differs from the model's;
//  - any lock's holders/queue (Inspect) or any client's age/holds/waiting
//    (Status) differs from the model's;
//  - the events drained with TakeEvents() are not the lapses, queue grants,
//    aborts and session releases the model made (as a multiset), or their
//    times go backwards or beyond now;
//  - LockTable::CheckInvariants() fails, a client is deadlocked (the AND-OR
//    rule of core/lock_table.h, recomputed from scratch on the model),
//    NextExpiry / held_lease_count / waiter_count / ActiveLocks disagree;
//  - a snapshot round trip (Snapshot then Restore) loses anything.
//
// LEASEKEEPER_FUZZ_TRACE=1 prints the calls an input makes and their results.
//
// Time moves forward in small steps (so leases lapse in chains), sometimes
// jumps near kMaxTick, and sometimes goes backwards (the table must treat a
// smaller `now` as the latest one).
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/errors.h"
#include "core/lock_table.h"
#include "core/state_machine.h"
#include "core/types.h"

namespace leasekeeper {
namespace {

constexpr int kClients = 6;
constexpr int kLocks = 4;
constexpr int kMaxSteps = 1500;
constexpr int64_t kMaxTtl = CoreConfig{}.max_ttl;

const char* ModeText(LockMode mode) { return LockModeName(mode).data(); }

const char* KindText(Event::Kind kind) {
  switch (kind) {
    case Event::Kind::kLapsed:
      return "lapsed";
    case Event::Kind::kGrantedFromQueue:
      return "granted-from-queue";
    case Event::Kind::kAbortedWaiter:
      return "aborted-waiter";
    case Event::Kind::kAbortedHolder:
      return "aborted-holder";
    case Event::Kind::kReleasedByOwner:
      return "released-by-owner";
    case Event::Kind::kWithdrawnByOwner:
      return "withdrawn-by-owner";
  }
  return "?";
}

std::string ErrorString(const absl::Status& status) {
  std::optional<ErrorCode> code = ErrorCodeOf(status);
  if (!code)
    return absl::StrCat("<non-contract status ", status.ToString(), ">");
  return absl::StrCat("error: ", ErrorText(*code));
}

std::string Describe(const AcquireOutcome& outcome) {
  std::string text;
  switch (outcome.kind) {
    case AcquireOutcome::Kind::kGranted:
      text = absl::StrCat("granted ", outcome.token, " ", outcome.expires_at);
      break;
    case AcquireOutcome::Kind::kQueued:
      text = absl::StrCat("queued ", outcome.position);
      break;
    case AcquireOutcome::Kind::kDeadlock:
      text = "deadlock";
      break;
  }
  if (!outcome.aborted.empty()) {
    absl::StrAppend(&text, " aborted [", absl::StrJoin(outcome.aborted, ","),
                    "]");
  }
  return text;
}

std::string Describe(const LockView& view) {
  std::string text = "holders [";
  for (const HolderView& h : view.holders) {
    absl::StrAppend(&text, "(", h.client, " ", ModeText(h.mode), " ", h.token,
                    " ", h.expires_at, ")");
  }
  absl::StrAppend(&text, "] queue [");
  for (const WaiterView& w : view.queue) {
    absl::StrAppend(&text, "(", w.client, " ", ModeText(w.mode), " ttl ", w.ttl,
                    ")");
  }
  return absl::StrCat(text, "] capacity ", view.capacity);
}

std::string Describe(const ClientView& view) {
  std::string text = absl::StrCat(
      "age ", view.age ? absl::StrCat(*view.age) : "null", " holds [");
  for (const HolderView& h : view.holds) {
    absl::StrAppend(&text, "(", h.lock, " ", ModeText(h.mode), " ", h.token,
                    " ", h.expires_at, ")");
  }
  return absl::StrCat(text, "] waiting ", view.waiting.value_or("null"));
}

bool SameOutcome(const AcquireOutcome& a, const AcquireOutcome& b) {
  if (a.kind != b.kind || a.aborted != b.aborted) return false;
  switch (a.kind) {
    case AcquireOutcome::Kind::kGranted:
      return a.token == b.token && a.expires_at == b.expires_at;
    case AcquireOutcome::Kind::kQueued:
      return a.position == b.position;
    case AcquireOutcome::Kind::kDeadlock:
      return true;
  }
  return false;
}

bool SameView(const LockView& a, const LockView& b) {
  if (a.capacity != b.capacity || a.holders.size() != b.holders.size() ||
      a.queue.size() != b.queue.size()) {
    return false;
  }
  for (size_t i = 0; i < a.holders.size(); ++i) {
    const HolderView& x = a.holders[i];
    const HolderView& y = b.holders[i];
    if (x.client != y.client || x.lock != y.lock || x.mode != y.mode ||
        x.token != y.token || x.expires_at != y.expires_at) {
      return false;
    }
  }
  for (size_t i = 0; i < a.queue.size(); ++i) {
    if (a.queue[i].client != b.queue[i].client ||
        a.queue[i].mode != b.queue[i].mode ||
        a.queue[i].ttl != b.queue[i].ttl) {
      return false;
    }
  }
  return true;
}

bool SameView(const ClientView& a, const ClientView& b) {
  if (a.age != b.age || a.waiting != b.waiting ||
      a.holds.size() != b.holds.size()) {
    return false;
  }
  for (size_t i = 0; i < a.holds.size(); ++i) {
    const HolderView& x = a.holds[i];
    const HolderView& y = b.holds[i];
    if (x.client != y.client || x.lock != y.lock || x.mode != y.mode ||
        x.token != y.token || x.expires_at != y.expires_at) {
      return false;
    }
  }
  return true;
}

using EventKey =
    std::tuple<int, Tick, std::string, std::string, int, FencingToken, Tick>;

EventKey KeyOf(const Event& e) {
  return {static_cast<int>(e.kind), e.at,    e.client,    e.lock,
          static_cast<int>(e.mode), e.token, e.expires_at};
}

std::string Describe(const EventKey& k) {
  return absl::StrCat(KindText(static_cast<Event::Kind>(std::get<0>(k))), "@",
                      std::get<1>(k), " ", std::get<2>(k), " ", std::get<3>(k),
                      " ", ModeText(static_cast<LockMode>(std::get<4>(k))), " ",
                      std::get<5>(k), " ", std::get<6>(k));
}

// The contract, naively. Holders of a lock are kept in grant order, which
// is token order.
class Model {
 public:
  struct Holder {
    std::string client;
    LockMode mode;
    FencingToken token;
    Tick expires_at;
    int64_t ttl;  // of the last grant or renewal
  };
  struct Waiter {
    std::string client;
    LockMode mode;
    int64_t ttl;
  };
  struct Lock {
    FencingToken last_token = 0;
    uint32_t capacity = 0;  // a semaphore's, while active
    std::vector<Holder> holders;
    std::deque<Waiter> queue;
  };

  Tick now() const { return now_; }

  void AdvanceTo(Tick now) {
    if (now <= now_) return;
    now_ = now;
    // Rule 3: the earliest lapse first; a grant at a lapse instant may lapse
    // in its turn.
    while (true) {
      Lock* earliest_lock = nullptr;
      std::string earliest_name;
      size_t earliest_index = 0;
      for (auto& [name, lock] : locks_) {
        for (size_t i = 0; i < lock.holders.size(); ++i) {
          if (lock.holders[i].expires_at > now_) continue;
          if (earliest_lock == nullptr ||
              lock.holders[i].expires_at <
                  earliest_lock->holders[earliest_index].expires_at) {
            earliest_lock = &lock;
            earliest_name = name;
            earliest_index = i;
          }
        }
      }
      if (earliest_lock == nullptr) return;
      const Holder gone = earliest_lock->holders[earliest_index];
      earliest_lock->holders.erase(earliest_lock->holders.begin() +
                                   static_cast<ptrdiff_t>(earliest_index));
      Emit(Event::Kind::kLapsed, gone.expires_at, gone.client, earliest_name,
           gone.mode, gone.token, gone.expires_at);
      GrantFromQueue(earliest_name, gone.expires_at);
    }
  }

  absl::StatusOr<AcquireOutcome> Acquire(Tick now, const std::string& client,
                                         const std::string& lock_name,
                                         int64_t ttl, LockMode mode,
                                         uint32_t capacity) {
    AdvanceTo(now);
    const bool semaphore = mode == LockMode::kSemaphore;
    if (client.empty() || lock_name.empty() ||
        (semaphore && (capacity < 1 || capacity > 65535)) ||
        (!semaphore && capacity != 0)) {
      return MakeError(ErrorCode::kInvalidArguments);
    }
    if (ttl < 1 || ttl > kMaxTtl) return MakeError(ErrorCode::kInvalidTtl);
    if (WaitingFor(client) || HolderIndex(lock_name, client)) {
      return MakeError(ErrorCode::kClientBusy);
    }
    if (auto it = locks_.find(lock_name);
        it != locks_.end() &&
        !(it->second.holders.empty() && it->second.queue.empty())) {
      if ((it->second.capacity != 0) != semaphore) {
        return MakeError(ErrorCode::kModeMismatch);
      }
      if (it->second.capacity != capacity) {
        return MakeError(ErrorCode::kCapacityMismatch);
      }
    }
    if (!ages_.contains(client)) ages_[client] = ++last_age_;
    Lock& lock = locks_[lock_name];
    if (lock.holders.empty() && lock.queue.empty()) lock.capacity = capacity;
    AcquireOutcome outcome;
    if (lock.queue.empty() && Compatible(lock, mode)) {
      const Holder& h = Grant(lock, client, mode, now_, ttl);
      outcome.kind = AcquireOutcome::Kind::kGranted;
      outcome.token = h.token;
      outcome.expires_at = h.expires_at;
      return outcome;
    }
    lock.queue.push_back(Waiter{client, mode, ttl});
    while (WaitingFor(client)) {
      const std::set<std::string> cycle = Deadlocked(client);
      if (cycle.empty()) break;
      std::string victim;
      for (const std::string& member : cycle) {
        if (victim.empty() || ages_.at(member) > ages_.at(victim)) {
          victim = member;
        }
      }
      outcome.aborted.push_back(victim);
      Abort(victim);
      if (victim == client) {
        outcome.kind = AcquireOutcome::Kind::kDeadlock;
        return outcome;
      }
    }
    if (WaitingFor(client)) {
      outcome.kind = AcquireOutcome::Kind::kQueued;
      for (size_t i = 0; i < lock.queue.size(); ++i) {
        if (lock.queue[i].client == client) outcome.position = i + 1;
      }
      return outcome;
    }
    const Holder& h = lock.holders[*HolderIndex(lock_name, client)];
    outcome.kind = AcquireOutcome::Kind::kGranted;
    outcome.token = h.token;
    outcome.expires_at = h.expires_at;
    return outcome;
  }

  absl::StatusOr<RenewOutcome> Renew(Tick now, const std::string& client,
                                     const std::string& lock_name,
                                     int64_t ttl) {
    AdvanceTo(now);
    if (client.empty() || lock_name.empty()) {
      return MakeError(ErrorCode::kInvalidArguments);
    }
    if (ttl < 1 || ttl > kMaxTtl) return MakeError(ErrorCode::kInvalidTtl);
    std::optional<size_t> index = HolderIndex(lock_name, client);
    if (!index) return MakeError(ErrorCode::kNotHolder);
    Holder& h = locks_[lock_name].holders[*index];
    h.expires_at = now_ + ttl;
    h.ttl = ttl;
    return RenewOutcome{h.token, h.expires_at};
  }

  absl::StatusOr<ReleaseOutcome> Release(Tick now, const std::string& client,
                                         const std::string& lock_name) {
    AdvanceTo(now);
    if (client.empty() || lock_name.empty()) {
      return MakeError(ErrorCode::kInvalidArguments);
    }
    if (std::optional<size_t> index = HolderIndex(lock_name, client)) {
      Lock& lock = locks_[lock_name];
      lock.holders.erase(lock.holders.begin() + static_cast<ptrdiff_t>(*index));
      GrantFromQueue(lock_name, now_);
      return ReleaseOutcome::kReleased;
    }
    if (WaitingFor(client) == lock_name) {
      RemoveWaiter(client);
      GrantFromQueue(lock_name, now_);
      return ReleaseOutcome::kWithdrawn;
    }
    return MakeError(ErrorCode::kNotHolder);
  }

  bool Withdraw(Tick now, const std::string& client,
                const std::string& lock_name) {
    AdvanceTo(now);
    if (client.empty() || WaitingFor(client) != lock_name) return false;
    RemoveWaiter(client);
    GrantFromQueue(lock_name, now_);
    return true;
  }

  int ReleaseAll(Tick now, const std::string& client) {
    AdvanceTo(now);
    if (std::optional<std::string> waiting = WaitingFor(client)) {
      const Waiter w = RemoveWaiter(client);
      Emit(Event::Kind::kWithdrawnByOwner, now_, client, *waiting, w.mode, 0,
           0);
      GrantFromQueue(*waiting, now_);
    }
    int released = 0;
    for (const std::string& lock_name : HeldLocks(client)) {
      Lock& lock = locks_[lock_name];
      const size_t index = *HolderIndex(lock_name, client);
      const Holder h = lock.holders[index];
      Emit(Event::Kind::kReleasedByOwner, now_, client, lock_name, h.mode,
           h.token, h.expires_at);
      lock.holders.erase(lock.holders.begin() + static_cast<ptrdiff_t>(index));
      GrantFromQueue(lock_name, now_);
      ++released;
    }
    return released;
  }

  int RenewAll(Tick now, const std::string& client) {
    AdvanceTo(now);
    int renewed = 0;
    for (const std::string& lock_name : HeldLocks(client)) {
      Holder& h = locks_[lock_name].holders[*HolderIndex(lock_name, client)];
      h.expires_at = now_ + h.ttl;
      ++renewed;
    }
    return renewed;
  }

  absl::Status Write(Tick now, const std::string& lock, const std::string& key,
                     const std::string& value, FencingToken token) {
    AdvanceTo(now);
    if (lock.empty() || key.empty() || value.empty() || token < 1) {
      return MakeError(ErrorCode::kInvalidArguments);
    }
    FencingToken& high_water = high_water_[lock];
    if (token < high_water) return MakeError(ErrorCode::kStaleToken);
    high_water = token;
    values_[{lock, key}] = value;
    return absl::OkStatus();
  }

  absl::StatusOr<std::optional<std::string>> Read(Tick now,
                                                  const std::string& lock,
                                                  const std::string& key) {
    AdvanceTo(now);
    if (lock.empty() || key.empty()) {
      return MakeError(ErrorCode::kInvalidArguments);
    }
    auto it = values_.find({lock, key});
    if (it == values_.end()) return std::nullopt;
    return it->second;
  }

  FencingToken HighWater(const std::string& lock) const {
    auto it = high_water_.find(lock);
    return it == high_water_.end() ? 0 : it->second;
  }

  LockView Inspect(const std::string& lock_name) const {
    LockView view;
    auto it = locks_.find(lock_name);
    if (it == locks_.end()) return view;
    if (!it->second.holders.empty() || !it->second.queue.empty()) {
      view.capacity = it->second.capacity;
    }
    for (const Holder& h : it->second.holders) {
      view.holders.push_back(
          HolderView{h.client, lock_name, h.mode, h.token, h.expires_at});
    }
    for (const Waiter& w : it->second.queue) {
      view.queue.push_back(WaiterView{w.client, w.mode, w.ttl});
    }
    return view;
  }

  ClientView Status(const std::string& client) const {
    ClientView view;
    auto age = ages_.find(client);
    if (age == ages_.end()) return view;
    view.age = age->second;
    for (const std::string& lock_name : HeldLocks(client)) {
      const Holder& h =
          locks_.at(lock_name).holders[*HolderIndex(lock_name, client)];
      view.holds.push_back(
          HolderView{client, lock_name, h.mode, h.token, h.expires_at});
    }
    view.waiting = WaitingFor(client);
    return view;
  }

  std::optional<Tick> NextExpiry() const {
    std::optional<Tick> next;
    for (const auto& [name, lock] : locks_) {
      for (const Holder& h : lock.holders) {
        if (!next || h.expires_at < *next) next = h.expires_at;
      }
    }
    return next;
  }

  size_t LeaseCount() const {
    size_t count = 0;
    for (const auto& [name, lock] : locks_) count += lock.holders.size();
    return count;
  }

  size_t WaiterCount() const {
    size_t count = 0;
    for (const auto& [name, lock] : locks_) count += lock.queue.size();
    return count;
  }

  std::vector<std::string> ActiveLocks(const std::string& prefix,
                                       const std::string& after,
                                       size_t limit) const {
    std::vector<std::string> names;
    for (const auto& [name, lock] : locks_) {
      if (names.size() >= limit) break;
      if (lock.holders.empty() && lock.queue.empty()) continue;
      if (name.compare(0, prefix.size(), prefix) != 0 || name <= after) {
        continue;
      }
      names.push_back(name);
    }
    return names;
  }

  // The wait-for graph (Part 3 rule 3), one edge per pair: a waiter points
  // to every holder of its lock and to every waiter ahead of it.
  std::map<std::string, std::set<std::string>> WaitForGraph() const {
    std::map<std::string, std::set<std::string>> edges;
    for (const auto& [name, lock] : locks_) {
      for (size_t i = 0; i < lock.queue.size(); ++i) {
        std::set<std::string>& out = edges[lock.queue[i].client];
        for (const Holder& h : lock.holders) out.insert(h.client);
        for (size_t j = 0; j < i; ++j) out.insert(lock.queue[j].client);
      }
    }
    return edges;
  }

  std::vector<Event> TakeEvents() {
    std::vector<Event> events;
    events.swap(events_);
    return events;
  }

  std::vector<std::string> ActiveLockNames() const {
    return ActiveLocks("", "", std::numeric_limits<size_t>::max());
  }

 private:
  static std::set<std::string> Reachable(
      const std::map<std::string, std::set<std::string>>& edges,
      const std::string& from) {
    std::set<std::string> seen;
    std::vector<std::string> stack = {from};
    while (!stack.empty()) {
      const std::string current = stack.back();
      stack.pop_back();
      auto it = edges.find(current);
      if (it == edges.end()) continue;
      for (const std::string& next : it->second) {
        if (seen.insert(next).second) stack.push_back(next);
      }
    }
    return seen;
  }

  // Part 3 rule 6 under the AND-OR rule: the deadlocked clients reachable
  // from R (R included), empty if R is free.
  std::set<std::string> Deadlocked(const std::string& requester) const {
    const std::set<std::string> free = FreeClients();
    if (free.contains(requester)) return {};
    std::set<std::string> members;
    std::set<std::string> reach = Reachable(WaitForGraph(), requester);
    reach.insert(requester);
    for (const std::string& client : reach) {
      if (!free.contains(client)) members.insert(client);
    }
    return members;
  }

 public:
  // Every registered client that is free: waits for nothing; or waits on a
  // semaphore with one free successor; or waits otherwise with every
  // successor free. Iterated to the fixpoint, from scratch.
  std::set<std::string> FreeClients() const {
    const auto edges = WaitForGraph();
    std::set<std::string> free;
    for (const auto& [client, age] : ages_) {
      if (!edges.contains(client)) free.insert(client);
    }
    bool changed = true;
    while (changed) {
      changed = false;
      for (const auto& [client, successors] : edges) {
        if (free.contains(client)) continue;
        const bool semaphore = locks_.at(*WaitingFor(client)).capacity != 0;
        size_t free_successors = 0;
        for (const std::string& next : successors) {
          free_successors += free.contains(next) ? 1 : 0;
        }
        if (semaphore ? free_successors > 0
                      : free_successors == successors.size()) {
          free.insert(client);
          changed = true;
        }
      }
    }
    return free;
  }

 private:

  // Part 3 rule 8.
  void Abort(const std::string& victim) {
    if (std::optional<std::string> waiting = WaitingFor(victim)) {
      const Waiter w = RemoveWaiter(victim);
      Emit(Event::Kind::kAbortedWaiter, now_, victim, *waiting, w.mode, 0, 0);
      GrantFromQueue(*waiting, now_);
    }
    for (const std::string& lock_name : HeldLocks(victim)) {
      Lock& lock = locks_[lock_name];
      const size_t index = *HolderIndex(lock_name, victim);
      const Holder h = lock.holders[index];
      Emit(Event::Kind::kAbortedHolder, now_, victim, lock_name, h.mode,
           h.token, h.expires_at);
      lock.holders.erase(lock.holders.begin() + static_cast<ptrdiff_t>(index));
      GrantFromQueue(lock_name, now_);
    }
    ages_.erase(victim);
  }

  static bool Compatible(const Lock& lock, LockMode mode) {
    if (mode == LockMode::kSemaphore) {
      return lock.holders.size() < lock.capacity;
    }
    if (lock.holders.empty()) return true;
    if (mode != LockMode::kShared) return false;
    for (const Holder& h : lock.holders) {
      if (h.mode != LockMode::kShared) return false;
    }
    return true;
  }

  const Holder& Grant(Lock& lock, const std::string& client, LockMode mode,
                      Tick at, int64_t ttl) {
    lock.holders.push_back(
        Holder{client, mode, ++lock.last_token, at + ttl, ttl});
    return lock.holders.back();
  }

  // Part 2 rule 3.
  void GrantFromQueue(const std::string& lock_name, Tick at) {
    Lock& lock = locks_[lock_name];
    while (!lock.queue.empty() && Compatible(lock, lock.queue.front().mode)) {
      const Waiter w = lock.queue.front();
      lock.queue.pop_front();
      const Holder& h = Grant(lock, w.client, w.mode, at, w.ttl);
      Emit(Event::Kind::kGrantedFromQueue, at, w.client, lock_name, w.mode,
           h.token, h.expires_at);
    }
  }

  std::optional<std::string> WaitingFor(const std::string& client) const {
    for (const auto& [name, lock] : locks_) {
      for (const Waiter& w : lock.queue) {
        if (w.client == client) return name;
      }
    }
    return std::nullopt;
  }

  Waiter RemoveWaiter(const std::string& client) {
    for (auto& [name, lock] : locks_) {
      for (auto it = lock.queue.begin(); it != lock.queue.end(); ++it) {
        if (it->client == client) {
          const Waiter w = *it;
          lock.queue.erase(it);
          return w;
        }
      }
    }
    std::abort();  // REQUIRES: the client waits
  }

  std::optional<size_t> HolderIndex(const std::string& lock_name,
                                    const std::string& client) const {
    auto it = locks_.find(lock_name);
    if (it == locks_.end()) return std::nullopt;
    for (size_t i = 0; i < it->second.holders.size(); ++i) {
      if (it->second.holders[i].client == client) return i;
    }
    return std::nullopt;
  }

  // In ascending lock-name order.
  std::vector<std::string> HeldLocks(const std::string& client) const {
    std::vector<std::string> names;
    for (const auto& [name, lock] : locks_) {
      if (HolderIndex(name, client)) names.push_back(name);
    }
    return names;
  }

  void Emit(Event::Kind kind, Tick at, const std::string& client,
            const std::string& lock, LockMode mode, FencingToken token,
            Tick expires_at) {
    events_.push_back(Event{kind, at, client, lock, mode, token, expires_at});
  }

  Tick now_ = kMinTick;
  uint64_t last_age_ = 0;
  std::map<std::string, Lock> locks_;
  std::map<std::string, uint64_t> ages_;
  std::map<std::string, FencingToken> high_water_;
  std::map<std::pair<std::string, std::string>, std::string> values_;
  std::vector<Event> events_;
};

class Harness {
 public:
  explicit Harness(FuzzedDataProvider& input) : input_(input) {
    for (int i = 0; i < kClients; ++i) clients_.push_back(absl::StrCat("c", i));
    for (int i = 0; i < kLocks; ++i) locks_.push_back(absl::StrCat("L", i));
  }

  void Run() {
    // Where time starts: 0, a negative tick, or the very first tick.
    switch (input_.ConsumeIntegralInRange<int>(0, 3)) {
      case 0:
        time_ = kMinTick;
        break;
      case 1:
        time_ = -1000;
        break;
      default:
        time_ = 0;
        break;
    }
    for (int step = 0; step < kMaxSteps && input_.remaining_bytes() > 0;
         ++step) {
      Step();
    }
    // To see what an input does: LEASEKEEPER_FUZZ_TRACE=1 lock_table_fuzzer
    // FILE
    if (std::getenv("LEASEKEEPER_FUZZ_TRACE") != nullptr) {
      std::fprintf(stderr, "%s", log_.c_str());
    }
  }

 private:
  std::string PickClient() {
    const int i = input_.ConsumeIntegralInRange<int>(0, 4 * kClients);
    if (i == 4 * kClients) return "";
    return clients_[static_cast<size_t>(i % kClients)];
  }

  std::string PickLock() {
    const int i = input_.ConsumeIntegralInRange<int>(0, 4 * kLocks);
    if (i == 4 * kLocks) return "";
    return locks_[static_cast<size_t>(i % kLocks)];
  }

  // Half the time a lock the client holds or waits for (if any), so that
  // renews, releases and withdrawals mostly hit something.
  std::string PickLockOf(const std::string& client) {
    if (input_.ConsumeBool()) {
      const ClientView view = model_.Status(client);
      std::vector<std::string> mine;
      for (const HolderView& h : view.holds) mine.push_back(h.lock);
      if (view.waiting) mine.push_back(*view.waiting);
      if (!mine.empty()) {
        return mine[input_.ConsumeIntegralInRange<size_t>(0, mine.size() - 1)];
      }
    }
    return PickLock();
  }

  int64_t PickTtl() {
    const uint8_t pick = input_.ConsumeIntegral<uint8_t>();
    if (pick < 240) return 1 + pick % 30;
    switch (pick % 8) {
      case 0:
        return 0;
      case 1:
        return -1;
      case 2:
        return kMaxTtl;
      case 3:
        return kMaxTtl + 1;
      case 4:
        return std::numeric_limits<int64_t>::min();
      case 5:
        return std::numeric_limits<int64_t>::max();
      default:
        return 100 + pick;
    }
  }

  // A mode and, for a semaphore, its capacity: locks L0/L1 are mostly
  // semaphores and the rest mostly plain locks, so that both fill up and
  // mismatches stay occasional; now and then a capacity out of range.
  std::pair<LockMode, uint32_t> PickMode(const std::string& lock) {
    const int pick = input_.ConsumeIntegralInRange<int>(0, 19);
    const bool semaphore_lock = lock == "L0" || lock == "L1";
    if (semaphore_lock ? pick < 17 : pick < 2) {
      const int n = input_.ConsumeIntegralInRange<int>(0, 31);
      const uint32_t capacity = n == 0 ? 0u : n == 1 ? 65536u
                                : n < 6 ? static_cast<uint32_t>(n - 1)
                                        : (lock == "L0" ? 2u : 3u);
      return {LockMode::kSemaphore, capacity};
    }
    return {input_.ConsumeBool() ? LockMode::kShared : LockMode::kExclusive,
            0u};
  }

  // The `now` passed to the next call: mostly the same or one tick later,
  // so that leases overlap and queues form; sometimes a long gap (lapse
  // chains), rarely a step back (the table must treat it as the latest now),
  // a whole max ttl, or a jump to the end of time.
  Tick PickTime() {
    const int pick = input_.ConsumeIntegral<uint16_t>() % 1000;
    if (pick < 600) {
      // stays
    } else if (pick < 880) {
      time_ += 1;
    } else if (pick < 960) {
      time_ += 2 + pick % 5;
    } else if (pick < 990) {
      time_ += 7 + pick % 34;
    } else if (pick < 995) {
      return std::max(kMinTick, time_ - 1 - pick % 3);
    } else if (pick < 998) {
      time_ += kMaxTtl;
    } else if (pick == 998) {
      time_ = kMaxTick - 20;
    }
    time_ = std::min(std::max(time_, kMinTick), kMaxTick);
    return time_;
  }

  [[noreturn]] void Fail(const std::string& what) {
    std::fprintf(stderr, "\n=== lock_table_fuzzer: %s\n=== calls so far:\n%s",
                 what.c_str(), log_.c_str());
    std::fprintf(stderr, "=== model state at now %lld:\n",
                 static_cast<long long>(model_.now()));
    for (const std::string& lock : locks_) {
      std::fprintf(stderr, "  %s: %s\n", lock.c_str(),
                   Describe(model_.Inspect(lock)).c_str());
    }
    for (const std::string& client : clients_) {
      std::fprintf(stderr, "  %s: %s\n", client.c_str(),
                   Describe(model_.Status(client)).c_str());
    }
    std::abort();
  }

  template <typename T>
  void ExpectSameError(const absl::StatusOr<T>& got,
                       const absl::StatusOr<T>& want, const char* call) {
    if (!(!got.ok() &&
          ErrorString(got.status()) == ErrorString(want.status()))) {
      Fail(absl::StrCat(call, ": got ",
                        got.ok() ? "success" : ErrorString(got.status()),
                        ", model says ", ErrorString(want.status())));
    }
  }

  // One operation through StateMachine::Apply (the core's only mutation
  // path), its reply as the kind that operation answers.
  template <typename T, typename Body>
  absl::StatusOr<T> Apply(Tick t, Body body) {
    absl::StatusOr<Reply> reply = machine_.Apply(Operation{t, std::move(body)});
    if (!reply.ok()) return reply.status();
    if (!std::holds_alternative<T>(*reply)) Fail("Apply: a reply of the wrong kind");
    return std::get<T>(*std::move(reply));
  }
  // The same for an operation that never fails.
  template <typename T, typename Body>
  T Applied(Tick t, Body body) {
    absl::StatusOr<T> reply = Apply<T>(t, std::move(body));
    if (!reply.ok()) Fail(absl::StrCat("Apply: ", reply.status().ToString()));
    return *std::move(reply);
  }
  // A query of a valid name, which cannot fail.
  template <typename T>
  T Checked(absl::StatusOr<T> view, const char* query) {
    if (!view.ok()) Fail(absl::StrCat(query, ": ", view.status().ToString()));
    return *std::move(view);
  }

  void Log(const std::string& line) { absl::StrAppend(&log_, line, "\n"); }

  void Step() {
    const Tick t = PickTime();
    const int choice = input_.ConsumeIntegralInRange<int>(0, 17);
    if (choice <= 5) {
      const std::string client = PickClient();
      const std::string lock = PickLock();
      const int64_t ttl = PickTtl();
      const auto [mode, capacity] = PickMode(lock);
      const std::string call =
          absl::StrCat("t=", t, " Acquire(", client, ", ", lock, ", ", ttl,
                       ", ", ModeText(mode), " ", capacity, ")");
      const absl::StatusOr<AcquireOutcome> got =
          Apply<AcquireOutcome>(
              t, op::Acquire{client, lock, ttl, mode, capacity});
      const absl::StatusOr<AcquireOutcome> want =
          model_.Acquire(t, client, lock, ttl, mode, capacity);
      Log(absl::StrCat(call, " -> ",
                       got.ok() ? Describe(*got) : ErrorString(got.status())));
      if (want.ok()) {
        if (!(got.ok() && SameOutcome(*got, *want))) {
          Fail(absl::StrCat(call, ": model says ", Describe(*want)));
        }
      } else {
        ExpectSameError(got, want, call.c_str());
      }
    } else if (choice <= 7) {
      const std::string client = PickClient();
      const std::string lock = PickLockOf(client);
      const int64_t ttl = PickTtl();
      const std::string call =
          absl::StrCat("t=", t, " Renew(", client, ", ", lock, ", ", ttl, ")");
      const absl::StatusOr<RenewOutcome> got =
          Apply<RenewOutcome>(t, op::Renew{client, lock, ttl});
      const absl::StatusOr<RenewOutcome> want =
          model_.Renew(t, client, lock, ttl);
      Log(absl::StrCat(
          call, " -> ",
          got.ok() ? absl::StrCat("renewed ", got->token, " ", got->expires_at)
                   : ErrorString(got.status())));
      if (want.ok()) {
        if (!(got.ok() && got->token == want->token &&
              got->expires_at == want->expires_at)) {
          Fail(absl::StrCat(call, ": model says renewed ", want->token, " ",
                            want->expires_at));
        }
      } else {
        ExpectSameError(got, want, call.c_str());
      }
    } else if (choice <= 10) {
      const std::string client = PickClient();
      const std::string lock = PickLockOf(client);
      const std::string call =
          absl::StrCat("t=", t, " Release(", client, ", ", lock, ")");
      const absl::StatusOr<ReleaseOutcome> got =
          Apply<ReleaseOutcome>(t, op::Release{client, lock});
      const absl::StatusOr<ReleaseOutcome> want =
          model_.Release(t, client, lock);
      auto text = [](const absl::StatusOr<ReleaseOutcome>& r) {
        if (!r.ok()) return ErrorString(r.status());
        return std::string(*r == ReleaseOutcome::kReleased ? "released"
                                                           : "withdrawn");
      };
      Log(absl::StrCat(call, " -> ", text(got)));
      if (!(text(got) == text(want))) {
        Fail(absl::StrCat(call, ": model says ", text(want)));
      }
    } else if (choice == 11) {
      const std::string client = PickClient();
      const std::string lock = PickLockOf(client);
      const bool got = Applied<bool>(t, op::Withdraw{client, lock});
      const bool want = model_.Withdraw(t, client, lock);
      const std::string call =
          absl::StrCat("t=", t, " Withdraw(", client, ", ", lock, ") -> ", got);
      Log(call);
      if (!(got == want)) {
        Fail(absl::StrCat(call, ": model says ", want));
      }
    } else if (choice == 12) {
      const std::string client = PickClient();
      const int got = Applied<int>(t, op::ReleaseAll{client});
      const int want = model_.ReleaseAll(t, client);
      const std::string call =
          absl::StrCat("t=", t, " ReleaseAll(", client, ") -> ", got);
      Log(call);
      if (!(got == want)) {
        Fail(absl::StrCat(call, ": model says ", want));
      }
    } else if (choice == 13) {
      const std::string client = PickClient();
      const int got = Applied<int>(t, op::RenewAll{client});
      const int want = model_.RenewAll(t, client);
      const std::string call =
          absl::StrCat("t=", t, " RenewAll(", client, ") -> ", got);
      Log(call);
      if (!(got == want)) {
        Fail(absl::StrCat(call, ": model says ", want));
      }
    } else if (choice == 14) {
      WriteStep(t);
    } else if (choice == 15) {
      const std::string lock = PickLock();
      const std::string key = input_.ConsumeBool() ? "k" : "";
      const auto got = machine_.Read(t, lock, key);
      const auto want = model_.Read(t, lock, key);
      auto text = [](const absl::StatusOr<std::optional<std::string>>& r) {
        if (!r.ok()) return ErrorString(r.status());
        return r->value_or("<null>");
      };
      const std::string call =
          absl::StrCat("t=", t, " Read(", lock, ", ", key, ") -> ", text(got));
      Log(call);
      if (!(text(got) == text(want))) {
        Fail(absl::StrCat(call, ": model says ", text(want)));
      }
    } else if (choice == 16) {
      Log(absl::StrCat("t=", t, " AdvanceTo"));
      Applied<std::monostate>(t, op::Advance{});
      model_.AdvanceTo(t);
    } else {
      // A snapshot round trip must lose nothing that a later call can see.
      CheckEvents();
      Log(absl::StrCat("t=", t, " Restore(Snapshot())"));
      const absl::Status restored = machine_.Restore(machine_.Snapshot());
      if (!(restored.ok())) {
        Fail(
            absl::StrCat("Restore of a fresh snapshot: ", restored.ToString()));
      }
      Applied<std::monostate>(t, op::Advance{});
      model_.AdvanceTo(t);
    }
    CheckEvents();
    CheckState();
  }

  void WriteStep(Tick t) {
    const std::string lock = PickLock();
    const std::string key = input_.ConsumeBool() ? "k" : "j";
    const std::string value =
        input_.ConsumeIntegralInRange<int>(0, 7) == 0
            ? ""
            : absl::StrCat("v", input_.ConsumeIntegral<uint8_t>());
    FencingToken token = 0;
    const uint8_t pick = input_.ConsumeIntegral<uint8_t>();
    const FencingToken high_water = model_.HighWater(lock);
    if (pick < 200) {
      // Around the high-water mark.
      token = high_water + pick % 3 - (high_water > 0 ? 1 : 0);
    } else if (pick < 250) {
      token = pick % 16;
    } else {
      token = std::numeric_limits<FencingToken>::max() - pick % 2;
    }
    const std::string call = absl::StrCat("t=", t, " Write(", lock, ", ", key,
                                          ", ", value, ", ", token, ")");
    const absl::StatusOr<Reply> got =
        machine_.Apply(Operation{t, op::Write{lock, key, value, token}});
    const absl::Status want = model_.Write(t, lock, key, value, token);
    const std::string got_text = got.ok() ? "ok" : ErrorString(got.status());
    const std::string want_text = want.ok() ? "ok" : ErrorString(want);
    Log(absl::StrCat(call, " -> ", got_text));
    if (!(got_text == want_text)) {
      Fail(absl::StrCat(call, ": model says ", want_text));
    }
    if (!(machine_.store().HighWater(lock) == model_.HighWater(lock))) {
      Fail(absl::StrCat(call, ": high-water mark ",
                        machine_.store().HighWater(lock), ", model says ",
                        model_.HighWater(lock)));
    }
  }

  // The events since the last check, as a multiset, and their times.
  void CheckEvents() {
    const std::vector<Event> got = machine_.TakeEvents();
    const std::vector<Event> want = model_.TakeEvents();
    for (const Event& e : got) {
      if (!(e.at >= last_event_at_ && e.at <= model_.now())) {
        Fail(absl::StrCat("event at ", e.at, " after one at ", last_event_at_,
                          " or beyond now ", model_.now(), ": ",
                          Describe(KeyOf(e))));
      }
      last_event_at_ = e.at;
    }
    std::multiset<EventKey> got_keys;
    std::multiset<EventKey> want_keys;
    for (const Event& e : got) got_keys.insert(KeyOf(e));
    for (const Event& e : want) want_keys.insert(KeyOf(e));
    if (got_keys == want_keys) return;
    std::string text = "events differ from the model's.\n  got:";
    for (const EventKey& k : got_keys)
      absl::StrAppend(&text, "\n    ", Describe(k));
    absl::StrAppend(&text, "\n  model:");
    for (const EventKey& k : want_keys) {
      absl::StrAppend(&text, "\n    ", Describe(k));
    }
    Fail(text);
  }

  void CheckState() {
    const LockTable& table = machine_.table();
    const Tick now = model_.now();
    if (!(table.now() == now)) {
      Fail(absl::StrCat("table.now() ", table.now(), ", model says ", now));
    }
    const absl::Status invariants = table.CheckInvariants();
    if (!(invariants.ok())) {
      Fail(absl::StrCat("CheckInvariants: ", invariants.ToString()));
    }
    for (const std::string& lock : locks_) {
      const LockView got = Checked(machine_.Inspect(now, lock), "Inspect");
      const LockView want = model_.Inspect(lock);
      if (!(SameView(got, want))) {
        Fail(absl::StrCat("Inspect(", lock, "): ", Describe(got),
                          "\n  model says: ", Describe(want)));
      }
    }
    for (const std::string& client : clients_) {
      const ClientView got = Checked(machine_.Status(now, client), "Status");
      const ClientView want = model_.Status(client);
      if (!(SameView(got, want))) {
        Fail(absl::StrCat("Status(", client, "): ", Describe(got),
                          "\n  model says: ", Describe(want)));
      }
    }
    if (!(table.NextExpiry() == model_.NextExpiry())) {
      Fail(absl::StrCat("NextExpiry ", table.NextExpiry().value_or(-1),
                        ", model says ", model_.NextExpiry().value_or(-1)));
    }
    if (!(table.held_lease_count() == model_.LeaseCount())) {
      Fail(absl::StrCat("held_lease_count ", table.held_lease_count(),
                        ", model says ", model_.LeaseCount()));
    }
    if (!(table.waiter_count() == model_.WaiterCount())) {
      Fail(absl::StrCat("waiter_count ", table.waiter_count(), ", model says ",
                        model_.WaiterCount()));
    }
    CheckActiveLocks();
    CheckNoDeadlock();
  }

  void CheckActiveLocks() {
    static const char* const kPrefixes[] = {"", "L", "L1", "M"};
    static const char* const kAfters[] = {"", "L0", "L2", "Z", "K"};
    const std::string prefix =
        kPrefixes[input_.ConsumeIntegralInRange<size_t>(0, 3)];
    const std::string after =
        kAfters[input_.ConsumeIntegralInRange<size_t>(0, 4)];
    const size_t limit = input_.ConsumeIntegralInRange<size_t>(0, 5);
    const std::vector<std::string> got =
        machine_.table().ActiveLocks(prefix, after, limit);
    const std::vector<std::string> want =
        model_.ActiveLocks(prefix, after, limit);
    if (!(got == want)) {
      Fail(absl::StrCat("ActiveLocks(\"", prefix, "\", \"", after, "\", ",
                        limit, "): [", absl::StrJoin(got, ","),
                        "], model says [", absl::StrJoin(want, ","), "]"));
    }
  }

  // Invariant 6, on the model (which equals the table by now): nobody is
  // deadlocked.
  void CheckNoDeadlock() {
    const std::set<std::string> free = model_.FreeClients();
    for (const std::string& client : clients_) {
      if (model_.Status(client).age.has_value() && !free.contains(client)) {
        Fail(absl::StrCat("deadlocked client ", client));
      }
    }
  }

  FuzzedDataProvider& input_;
  StateMachine machine_;
  Model model_;
  std::vector<std::string> clients_;
  std::vector<std::string> locks_;
  Tick time_ = 0;
  Tick last_event_at_ = kMinTick;
  std::string log_;
};

}  // namespace
}  // namespace leasekeeper

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider input(data, size);
  leasekeeper::Harness harness(input);
  harness.Run();
  return 0;
}
