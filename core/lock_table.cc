#include "core/lock_table.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/errors.h"

namespace leasekeeper {

LockTable::LockTable(CoreConfig config) : config_(config) {
  config_.max_ttl = std::min(config_.max_ttl, kMaxCoreTtl);
}

LockTable::~LockTable() = default;

size_t LockTable::LockState::holder_count() const {
  if (!has_holders()) return 0;
  return 1 + (crowd == nullptr ? 0 : crowd->more_holders.size());
}

uint16_t LockTable::LockState::capacity() const {
  // Derived rather than stored: a lock stays 88 bytes (LP64, libstdc++).
  static_assert(sizeof(void*) != 8 || sizeof(std::string) != 32 ||
                sizeof(LockState) == 88);
  if (has_holders()) return first.capacity;
  return queue_empty() ? 0 : queue().front().capacity;
}

LockTable::Holder* LockTable::LockState::FindHolder(FencingToken token) {
  if (!has_holders()) return nullptr;
  if (first.token == token) return &first;
  if (crowd == nullptr) return nullptr;
  auto it = crowd->more_holders.find(token);
  return it == crowd->more_holders.end() ? nullptr : &it->second;
}

bool LockTable::LockState::InsertHolder(const Holder& holder) {
  if (!has_holders()) {
    first = holder;
    return true;
  }
  if (first.token == holder.token) return false;
  if (crowd == nullptr) crowd = std::make_unique<Crowd>();
  auto& more = crowd->more_holders;
  if (holder.token < first.token) {
    // Only a snapshot import inserts below the lowest token.
    more.emplace(first.token, first);
    first = holder;
    return true;
  }
  if (more.try_emplace(holder.token, holder).second) return true;
  DropCrowdIfEmpty();
  return false;
}

void LockTable::LockState::EraseHolder(FencingToken token) {
  if (first.token == token) {
    if (crowd == nullptr || crowd->more_holders.empty()) {
      first = Holder{};
    } else {
      // The lowest of the others moves inline.
      auto lowest = crowd->more_holders.begin();
      first = lowest->second;
      crowd->more_holders.erase(lowest);
    }
  } else {
    crowd->more_holders.erase(token);
  }
  DropCrowdIfEmpty();
}

template <typename F>
void LockTable::LockState::ForEachHolder(F&& f) const {
  if (!has_holders()) return;
  f(static_cast<const Holder&>(first));
  if (crowd == nullptr) return;
  for (const auto& [token, holder] : crowd->more_holders) f(holder);
}

const LockTable::Queue& LockTable::LockState::queue() const {
  static const Queue* const kNoWaiters = new Queue();
  return crowd == nullptr ? *kNoWaiters : crowd->queue;
}

LockTable::Queue& LockTable::LockState::MutableQueue() {
  if (crowd == nullptr) crowd = std::make_unique<Crowd>();
  return crowd->queue;
}

void LockTable::LockState::DropCrowdIfEmpty() {
  if (crowd != nullptr && crowd->queue.empty() && crowd->more_holders.empty()) {
    crowd.reset();
  }
}

absl::Status LockTable::ValidateTtl(int64_t ttl) const {
  if (ttl < 1 || ttl > config_.max_ttl) {
    return MakeError(ErrorCode::kInvalidTtl);
  }
  return absl::OkStatus();
}

LockTable::LockState* LockTable::FindLock(absl::string_view name) {
  auto it = locks_.find(name);
  return it == locks_.end() ? nullptr : it->get();
}

LockTable::ClientState* LockTable::FindClient(absl::string_view name) {
  auto it = clients_.find(name);
  return it == clients_.end() ? nullptr : it->get();
}

void LockTable::Emit(Event::Kind kind, Tick at, const ClientState& client,
                     const LockState& lock, LockMode mode, FencingToken token,
                     Tick expires_at) {
  if (!config_.record_events) return;
  events_.push_back(Event{kind, at, std::string(client.name),
                          std::string(lock.name), mode, token, expires_at});
}

bool LockTable::Compatible(const LockState& lock, LockMode mode,
                           uint16_t capacity) const {
  if (mode == LockMode::kSemaphore) {
    return lock.holder_count() < capacity;
  }
  if (!lock.has_holders()) return true;
  // An exclusive holder is always the only holder, so the first holder's mode
  // tells whether all holders are shared.
  return mode == LockMode::kShared && lock.first.mode == LockMode::kShared;
}

void LockTable::UpdateActive(LockState& lock) {
  if (!lock.has_holders() && lock.queue_empty()) {
    active_locks_.erase(&lock);
  } else {
    active_locks_.insert(&lock);
  }
}

void LockTable::AddHolder(LockState& lock, ClientState& client, LockMode mode,
                          uint16_t capacity, Tick at, int64_t ttl) {
  MarkBusy(client);
  const FencingToken token = ++lock.last_token;
  const uint64_t sequence = ++last_sequence_;
  const Tick expires_at = at + ttl;
  // ttl <= max_ttl <= kMaxCoreTtl (ValidateTtl, ImportFrom).
  lock.InsertHolder(Holder{&client, token, expires_at, sequence,
                           static_cast<int32_t>(ttl), mode, capacity});
  client.holds.insert(Hold{&lock, token});
  expiry_.insert(ExpiryKey{expires_at, sequence, &lock, token});
  UpdateActive(lock);
}

void LockTable::RemoveHolder(LockState& lock, const Holder& holder, Tick at) {
  const FencingToken token = holder.token;
  ClientState& client = *holder.client;
  expiry_.erase(ExpiryKey{holder.expires_at, holder.sequence, &lock, token});
  client.holds.erase(absl::string_view(lock.name));
  lock.EraseHolder(token);
  UpdateActive(lock);
  MarkIdleIfSo(client, at);
}

void LockTable::RemoveWaiter(ClientState& client, Tick at) {
  LockState* lock = client.waiting;
  lock->MutableQueue().erase(client.waiting_entry);
  lock->DropCrowdIfEmpty();
  client.waiting = nullptr;
  --waiter_count_;
  UpdateActive(*lock);
  MarkIdleIfSo(client, at);
}

void LockTable::MarkIdleIfSo(ClientState& client, Tick at) {
  if (!config_.track_idle_clients || client.idle_since != kMaxTick ||
      !client.holds.empty() || client.waiting != nullptr) {
    return;
  }
  client.idle_since = at;
  idle_.insert(IdleKey{at, client.age, &client});
}

void LockTable::MarkBusy(ClientState& client) {
  if (client.idle_since == kMaxTick) return;
  idle_.erase(IdleKey{client.idle_since, client.age, &client});
  client.idle_since = kMaxTick;
}

void LockTable::GrantFromQueue(LockState& lock, Tick at) {
  while (!lock.queue_empty()) {
    const Waiter head = lock.queue().front();
    if (!Compatible(lock, head.mode, head.capacity)) break;
    RemoveWaiter(*head.client, at);
    AddHolder(lock, *head.client, head.mode, head.capacity, at, head.ttl);
    Emit(Event::Kind::kGrantedFromQueue, at, *head.client, lock, head.mode,
         lock.last_token, at + head.ttl);
  }
}

void LockTable::Retire(Tick now) {
  // Lapses are processed in the order they happened; a grant made at a lapse
  // instant enters the index and, if it too has lapsed by `now`, is retired
  // in its turn.
  while (!expiry_.empty() && expiry_.begin()->expires_at <= now) {
    const ExpiryKey key = *expiry_.begin();
    LockState& lock = *key.lock;
    const Holder& holder = *lock.FindHolder(key.token);
    Emit(Event::Kind::kLapsed, key.expires_at, *holder.client, lock,
         holder.mode, key.token, key.expires_at);
    RemoveHolder(lock, holder, key.expires_at);
    GrantFromQueue(lock, key.expires_at);
  }
}

void LockTable::AdvanceTo(Tick now) {
  if (now <= now_) return;
  now_ = now;
  Retire(now_);
}

std::optional<Tick> LockTable::NextExpiry() const {
  if (expiry_.empty()) return std::nullopt;
  return expiry_.begin()->expires_at;
}

absl::Status LockTable::ValidateAcquire(absl::string_view client_name,
                                        absl::string_view lock_name,
                                        int64_t ttl, LockMode mode,
                                        uint32_t capacity) const {
  const bool semaphore = mode == LockMode::kSemaphore;
  if (client_name.empty() || lock_name.empty() ||
      (semaphore ? capacity < 1 || capacity > kMaxSemaphoreCapacity
                 : capacity != 0)) {
    return MakeError(ErrorCode::kInvalidArguments);
  }
  return ValidateTtl(ttl);
}

// What kind of lock a busy `lock` is, for a refusal: "<name> is a
// semaphore of N", "<name> is held exclusive|shared", or, between a lapse
// and the grant it causes, "<name> is awaited exclusive|shared".
std::string LockTable::DescribeKind(const LockState& lock) {
  if (lock.capacity() != 0) {
    return absl::StrCat(lock.name, " is a semaphore of ", lock.capacity());
  }
  if (lock.has_holders()) {
    return absl::StrCat(lock.name, " is held ", LockModeName(lock.first.mode));
  }
  return absl::StrCat(lock.name, " is awaited ",
                      LockModeName(lock.queue().front().mode));
}

absl::Status LockTable::CheckAcquirable(const ClientState* client,
                                        const LockState* lock,
                                        absl::string_view lock_name,
                                        LockMode mode,
                                        uint32_t capacity) const {
  if (client != nullptr &&
      (client->waiting != nullptr ||
       client->holds.find(lock_name) != client->holds.end())) {
    return MakeError(ErrorCode::kClientBusy);
  }
  if (lock != nullptr && !lock->idle()) {
    // The lock's kind and capacity stand while anybody holds or waits.
    if ((lock->capacity() != 0) != (mode == LockMode::kSemaphore)) {
      return MakeError(ErrorCode::kModeMismatch, DescribeKind(*lock));
    }
    if (lock->capacity() != capacity) {
      return MakeError(ErrorCode::kCapacityMismatch,
                       absl::StrCat(DescribeKind(*lock), ", asked ", capacity));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<AcquireOutcome> LockTable::Acquire(Tick now,
                                                  absl::string_view client_name,
                                                  absl::string_view lock_name,
                                                  int64_t ttl, LockMode mode,
                                                  uint32_t capacity) {
  AdvanceTo(now);
  now = now_;
  if (absl::Status status =
          ValidateAcquire(client_name, lock_name, ttl, mode, capacity);
      !status.ok()) {
    return status;
  }
  ClientState* client = FindClient(client_name);
  LockState* found = FindLock(lock_name);
  if (absl::Status status =
          CheckAcquirable(client, found, lock_name, mode, capacity);
      !status.ok()) {
    return status;
  }
  if (client == nullptr) {
    client = clients_.insert(std::make_unique<ClientState>(client_name))
                 .first->get();
    client->age = ++last_age_;
  }
  if (found == nullptr) {
    found = locks_.insert(std::make_unique<LockState>(lock_name)).first->get();
  }
  LockState& lock = *found;
  // The first acquirer of an idle lock decides what it is: its lease or
  // queue entry carries the capacity, as every later one does.
  const uint16_t request_capacity = static_cast<uint16_t>(capacity);

  AcquireOutcome outcome;
  if (lock.queue_empty() && Compatible(lock, mode, request_capacity)) {
    AddHolder(lock, *client, mode, request_capacity, now, ttl);
    outcome.kind = AcquireOutcome::Kind::kGranted;
    outcome.token = lock.last_token;
    outcome.expires_at = now + ttl;
    return outcome;
  }
  Enqueue(lock, *client, ttl, mode, request_capacity);
  if (AbortDeadlocked(*client, now, outcome.aborted)) {
    outcome.kind = AcquireOutcome::Kind::kDeadlock;
    return outcome;
  }
  if (client->waiting != nullptr) {
    outcome.kind = AcquireOutcome::Kind::kQueued;
    // Nothing joins a queue during this call after the requester, so it is
    // still last in line.
    outcome.position = static_cast<int64_t>(lock.queue().size());
    return outcome;
  }
  // The aborts granted the request.
  const FencingToken token =
      client->holds.find(absl::string_view(lock.name))->token;
  const Holder& holder = *lock.FindHolder(token);
  outcome.kind = AcquireOutcome::Kind::kGranted;
  outcome.token = token;
  outcome.expires_at = holder.expires_at;
  return outcome;
}

void LockTable::Enqueue(LockState& lock, ClientState& client, int64_t ttl,
                        LockMode mode, uint16_t capacity) {
  Queue& queue = lock.MutableQueue();
  queue.push_back(Waiter{&client, static_cast<int32_t>(ttl), mode, capacity});
  client.waiting = &lock;
  client.waiting_entry = std::prev(queue.end());
  ++waiter_count_;
  UpdateActive(lock);
  MarkBusy(client);
}

bool LockTable::AbortDeadlocked(ClientState& requester, Tick now,
                                std::vector<std::string>& aborted) {
  // Part 3 rule 5: abort the youngest deadlocked client reachable from the
  // requester until none is left, the requester is granted, or it is the
  // victim itself.
  while (requester.waiting != nullptr) {
    std::vector<ClientState*> deadlocked = DeadlockedWith(requester);
    if (deadlocked.empty()) break;
    ClientState* victim =
        *std::max_element(deadlocked.begin(), deadlocked.end(),
                          [](const ClientState* a, const ClientState* b) {
                            return a->age < b->age;
                          });
    aborted.emplace_back(victim->name);
    const bool requester_aborted = victim == &requester;
    Abort(*victim, now);  // erases the victim's ClientState
    if (requester_aborted) return true;
  }
  return false;
}

namespace {

// The deadlock search's marks on a client: reached in the forward pass of
// search `epoch`, and found free in its backward pass.
constexpr uint64_t ReachedMark(uint64_t epoch) { return 2 * epoch; }
constexpr uint64_t FreeMark(uint64_t epoch) { return 2 * epoch + 1; }

}  // namespace

std::vector<LockTable::ClientState*> LockTable::DeadlockedWith(
    ClientState& requester) const {
  // The wait-for graph (Part 3 rule 3) gives a waiter edges to every holder
  // and to every client ahead of it in the queue. Listing an edge per pair of
  // waiters would be quadratic, so the search uses an equivalent graph: a
  // waiter points to the waiter just ahead of it, and the head of the queue
  // points to the holders. Everyone ahead reaches the holders through the
  // head, so reachability is unchanged; and so is freedom (see the header):
  // the waiters of one queue wait in the same way (a lock's waiters are all
  // semaphore requests or none is), so a waiter behind is free iff the one
  // ahead is, and the head decides from the holders.
  if (!HasIncomingEdge(requester)) return {};
  // Visited marks live on the clients and are compared with a fresh epoch,
  // so a search clears nothing it did not touch.
  const uint64_t epoch = ++search_epoch_;
  if (!ReachesItself(requester, epoch)) return {};
  SpreadFreedom(epoch);
  std::vector<ClientState*> members;
  for (ClientState* client : search_reached_) {
    if (client->search_mark == ReachedMark(epoch)) members.push_back(client);
  }
  return members;
}

bool LockTable::HasIncomingEdge(const ClientState& requester) const {
  // A deadlock needs a cycle through the requester, hence an edge into it,
  // and only the head waiter of a lock it holds has one (nobody queues
  // behind a request during the call that queued it).
  for (const Hold& hold : requester.holds) {
    if (!hold.lock->queue_empty()) return true;
  }
  return false;
}

bool LockTable::ReachesItself(ClientState& requester, uint64_t epoch) const {
  // Everything reachable from the requester (the work Part 4 allows). A
  // deadlocked requester lies on a cycle (every deadlocked client has a
  // deadlocked successor, and every deadlocked client can reach the
  // requester), so without one nobody is deadlocked.
  std::vector<ClientState*>& stack = search_stack_;
  std::vector<ClientState*>& successors = search_successors_;
  stack.clear();
  search_reached_.clear();
  bool cycle = false;
  auto push_forward = [&](ClientState* next) {
    if (next == &requester) cycle = true;
    if (next->search_mark / 2 != epoch) {
      next->search_mark = ReachedMark(epoch);
      stack.push_back(next);
      search_reached_.push_back(next);
    }
  };
  successors.clear();
  AppendSuccessors(requester, successors);
  for (ClientState* next : successors) push_forward(next);
  while (!stack.empty()) {
    ClientState* current = stack.back();
    stack.pop_back();
    successors.clear();
    AppendSuccessors(*current, successors);
    for (ClientState* next : successors) push_forward(next);
  }
  return cycle;
}

void LockTable::SpreadFreedom(uint64_t epoch) const {
  // Inside the reachable set (freedom depends only on what a client
  // reaches, and the set is closed under successors): start from the
  // reached clients that wait for nothing and spread freedom to
  // predecessors by the AND-OR rule. A client's predecessors are the head
  // waiters of the locks it holds (whose successors are that lock's
  // holders) and the waiter just behind it (whose one successor it is).
  const uint64_t reached_mark = ReachedMark(epoch);
  std::vector<ClientState*>& stack = search_stack_;
  search_pending_.clear();
  auto set_free = [&](ClientState* client) {
    client->search_mark = FreeMark(epoch);
    stack.push_back(client);
  };
  for (ClientState* client : search_reached_) {
    if (client->waiting == nullptr) set_free(client);
  }
  while (!stack.empty()) {
    ClientState* current = stack.back();
    stack.pop_back();
    for (const Hold& hold : current->holds) {
      const LockState& lock = *hold.lock;
      if (lock.queue_empty()) continue;
      ClientState* head = lock.queue().front().client;
      if (head->search_mark != reached_mark) continue;
      // A semaphore head needs one free holder (OR); any other head all of
      // them (AND).
      const size_t holders = lock.holder_count();
      if (lock.capacity() != 0 || holders == 1) {
        set_free(head);
        continue;
      }
      auto [missing, inserted] = search_pending_.try_emplace(head, holders);
      if (--missing->second == 0) set_free(head);
    }
    if (current->waiting != nullptr) {
      auto behind = std::next(current->waiting_entry);
      if (behind != current->waiting->queue().end() &&
          behind->client->search_mark == reached_mark) {
        set_free(behind->client);
      }
    }
  }
}

void LockTable::AppendSuccessors(const ClientState& client,
                                 std::vector<ClientState*>& out) const {
  const LockState* lock = client.waiting;
  if (lock == nullptr) return;
  if (client.waiting_entry != lock->queue().begin()) {
    out.push_back(std::prev(client.waiting_entry)->client);
    return;
  }
  lock->ForEachHolder(
      [&](const Holder& holder) { out.push_back(holder.client); });
}

int LockTable::LetGoOfEverything(ClientState& client, Tick at,
                                 Event::Kind wait_event,
                                 Event::Kind lease_event) {
  if (client.waiting != nullptr) {
    LockState& lock = *client.waiting;
    const LockMode mode = client.waiting_entry->mode;
    RemoveWaiter(client, at);
    Emit(wait_event, at, client, lock, mode, 0, 0);
    GrantFromQueue(lock, at);
  }
  // Ascending lock-name order; each release may grant others but never this
  // client, which no longer waits.
  int released = 0;
  while (!client.holds.empty()) {
    const auto [lock_ptr, token] = *client.holds.begin();
    LockState& lock = *lock_ptr;
    const Holder& holder = *lock.FindHolder(token);
    Emit(lease_event, at, client, lock, holder.mode, token, holder.expires_at);
    RemoveHolder(lock, holder, at);
    GrantFromQueue(lock, at);
    ++released;
  }
  return released;
}

void LockTable::Abort(ClientState& victim, Tick at) {
  LetGoOfEverything(victim, at, Event::Kind::kAbortedWaiter,
                    Event::Kind::kAbortedHolder);
  MarkBusy(victim);  // leaves the idle index before it is erased
  clients_.erase(clients_.find(absl::string_view(victim.name)));
}

bool LockTable::Forget(Tick now, absl::string_view client_name) {
  AdvanceTo(now);
  ClientState* client = FindClient(client_name);
  if (client == nullptr || !client->holds.empty() ||
      client->waiting != nullptr) {
    return false;
  }
  MarkBusy(*client);
  clients_.erase(clients_.find(client_name));
  return true;
}

std::optional<LockTable::IdleClient> LockTable::OldestIdleClient() const {
  if (idle_.empty()) return std::nullopt;
  const IdleKey& oldest = *idle_.begin();
  return IdleClient{oldest.since, oldest.client->name};
}

void LockTable::RestartIdleClock(absl::string_view client_name, Tick at) {
  ClientState* client = FindClient(client_name);
  if (client == nullptr || client->idle_since == kMaxTick ||
      client->idle_since >= at) {
    return;
  }
  MarkBusy(*client);
  client->idle_since = at;
  idle_.insert(IdleKey{at, client->age, client});
}

absl::StatusOr<RenewOutcome> LockTable::Renew(Tick now,
                                              absl::string_view client_name,
                                              absl::string_view lock_name,
                                              int64_t ttl) {
  AdvanceTo(now);
  now = now_;
  if (client_name.empty() || lock_name.empty()) {
    return MakeError(ErrorCode::kInvalidArguments);
  }
  if (absl::Status status = ValidateTtl(ttl); !status.ok()) return status;
  ClientState* client = FindClient(client_name);
  if (client == nullptr) return MakeError(ErrorCode::kNotHolder);
  auto held = client->holds.find(lock_name);
  if (held == client->holds.end()) return MakeError(ErrorCode::kNotHolder);
  LockState& lock = *held->lock;
  const FencingToken token = held->token;
  Holder& holder = *lock.FindHolder(token);
  holder.ttl = static_cast<int32_t>(ttl);  // ValidateTtl: <= kMaxCoreTtl
  ExtendLease(lock, holder, now + ttl);
  return RenewOutcome{token, holder.expires_at};
}

absl::StatusOr<ReleaseOutcome> LockTable::Release(Tick now,
                                                  absl::string_view client_name,
                                                  absl::string_view lock_name) {
  AdvanceTo(now);
  now = now_;
  if (client_name.empty() || lock_name.empty()) {
    return MakeError(ErrorCode::kInvalidArguments);
  }
  ClientState* client = FindClient(client_name);
  if (client == nullptr) return MakeError(ErrorCode::kNotHolder);
  if (auto held = client->holds.find(lock_name); held != client->holds.end()) {
    LockState& lock = *held->lock;
    RemoveHolder(lock, *lock.FindHolder(held->token), now);
    GrantFromQueue(lock, now);
    return ReleaseOutcome::kReleased;
  }
  if (client->waiting != nullptr && client->waiting->name == lock_name) {
    LockState& lock = *client->waiting;
    RemoveWaiter(*client, now);
    GrantFromQueue(lock, now);
    return ReleaseOutcome::kWithdrawn;
  }
  return MakeError(ErrorCode::kNotHolder);
}

bool LockTable::Withdraw(Tick now, absl::string_view client_name,
                         absl::string_view lock_name) {
  AdvanceTo(now);
  ClientState* client = FindClient(client_name);
  if (client == nullptr || client->waiting == nullptr ||
      client->waiting->name != lock_name) {
    return false;
  }
  LockState& lock = *client->waiting;
  RemoveWaiter(*client, now_);
  GrantFromQueue(lock, now_);
  return true;
}

int LockTable::ReleaseAll(Tick now, absl::string_view client_name) {
  AdvanceTo(now);
  ClientState* client = FindClient(client_name);
  if (client == nullptr) return 0;
  return LetGoOfEverything(*client, now_, Event::Kind::kWithdrawnByOwner,
                           Event::Kind::kReleasedByOwner);
}

int LockTable::RenewAll(Tick now, absl::string_view client_name) {
  AdvanceTo(now);
  ClientState* client = FindClient(client_name);
  if (client == nullptr) return 0;
  for (const Hold& hold : client->holds) {
    Holder& holder = *hold.lock->FindHolder(hold.token);
    ExtendLease(*hold.lock, holder, now_ + holder.ttl);
  }
  return static_cast<int>(client->holds.size());
}

void LockTable::ExtendLease(LockState& lock, Holder& holder, Tick expires_at) {
  expiry_.erase(
      ExpiryKey{holder.expires_at, holder.sequence, &lock, holder.token});
  holder.expires_at = expires_at;
  holder.sequence = ++last_sequence_;
  expiry_.insert(
      ExpiryKey{holder.expires_at, holder.sequence, &lock, holder.token});
}

HolderView LockTable::ViewOf(const LockState& lock,
                             const Holder& holder) const {
  return HolderView{holder.client->name, lock.name, holder.mode, holder.token,
                    holder.expires_at};
}

LockView LockTable::Inspect(Tick now, absl::string_view lock_name) {
  AdvanceTo(now);
  LockView view;
  const LockState* lock = FindLock(lock_name);
  if (lock == nullptr) return view;
  view.capacity = lock->capacity();
  view.holders.reserve(lock->holder_count());
  lock->ForEachHolder([&](const Holder& holder) {
    view.holders.push_back(ViewOf(*lock, holder));
  });
  view.queue.reserve(lock->queue().size());
  for (const Waiter& waiter : lock->queue()) {
    view.queue.push_back(
        WaiterView{waiter.client->name, waiter.mode, waiter.ttl});
  }
  return view;
}

ClientView LockTable::Status(Tick now, absl::string_view client_name) {
  AdvanceTo(now);
  ClientView view;
  const ClientState* client = FindClient(client_name);
  if (client == nullptr) return view;
  view.age = client->age;
  view.holds.reserve(client->holds.size());
  for (const Hold& hold : client->holds) {
    view.holds.push_back(
        ViewOf(*hold.lock, *hold.lock->FindHolder(hold.token)));
  }
  if (client->waiting != nullptr) {
    view.waiting = client->waiting->name;
  }
  return view;
}

LockPage LockTable::InspectPage(Tick now, absl::string_view lock_name,
                                const InspectCursor& from, size_t limit) {
  AdvanceTo(now);
  limit = std::max<size_t>(limit, 1);
  LockPage page;
  const LockState* lock = FindLock(lock_name);
  if (lock == nullptr) return page;
  page.capacity = lock->capacity();
  if (!from.in_queue && lock->has_holders()) {
    if (lock->first.token > from.after_token) {
      page.holders.push_back(ViewOf(*lock, lock->first));
    }
    if (lock->crowd != nullptr) {
      const auto& more = lock->crowd->more_holders;
      for (auto it = more.upper_bound(from.after_token); it != more.end();
           ++it) {
        if (page.holders.size() == limit) {
          page.next = InspectCursor{.after_token = page.holders.back().token};
          return page;
        }
        page.holders.push_back(ViewOf(*lock, it->second));
      }
    }
  }
  const int64_t skip = from.in_queue ? std::max<int64_t>(from.after_position, 0)
                                     : 0;
  page.first_position = skip + 1;
  const Queue& queue = lock->queue();
  auto it = queue.begin();
  for (int64_t i = 0; i < skip && it != queue.end(); ++i) ++it;
  for (; it != queue.end(); ++it) {
    if (page.holders.size() + page.queue.size() == limit) {
      if (page.queue.empty()) {
        page.next = InspectCursor{.after_token = page.holders.back().token};
      } else {
        page.next = InspectCursor{
            .in_queue = true,
            .after_position =
                skip + static_cast<int64_t>(page.queue.size())};
      }
      return page;
    }
    page.queue.push_back(WaiterView{it->client->name, it->mode, it->ttl});
  }
  return page;
}

ClientPage LockTable::StatusPage(Tick now, absl::string_view client_name,
                                 absl::string_view after_lock, size_t limit) {
  AdvanceTo(now);
  limit = std::max<size_t>(limit, 1);
  ClientPage page;
  const ClientState* client = FindClient(client_name);
  if (client == nullptr) return page;
  page.age = client->age;
  if (client->waiting != nullptr) page.waiting = client->waiting->name;
  auto it = after_lock.empty() ? client->holds.begin()
                               : client->holds.upper_bound(after_lock);
  for (; it != client->holds.end(); ++it) {
    if (page.holds.size() == limit) {
      page.next_after = page.holds.back().lock;
      break;
    }
    page.holds.push_back(ViewOf(*it->lock, *it->lock->FindHolder(it->token)));
  }
  return page;
}

size_t LockTable::QueueLength(absl::string_view lock_name) const {
  auto it = locks_.find(lock_name);
  return it == locks_.end() ? 0 : (*it)->queue().size();
}

std::optional<absl::string_view> LockTable::WaitingFor(
    absl::string_view client_name) const {
  auto it = clients_.find(client_name);
  if (it == clients_.end() || (*it)->waiting == nullptr) return std::nullopt;
  return absl::string_view((*it)->waiting->name);
}

FencingToken LockTable::LastToken(absl::string_view lock_name) const {
  auto it = locks_.find(lock_name);
  return it == locks_.end() ? 0 : (*it)->last_token;
}

bool LockTable::HoldsWithToken(absl::string_view client_name,
                               absl::string_view lock_name,
                               FencingToken token) const {
  auto client = clients_.find(client_name);
  if (client == clients_.end()) return false;
  auto held = (*client)->holds.find(lock_name);
  // Every held lease is live: leases are retired at their expiry (rule 1).
  return held != (*client)->holds.end() && held->token == token;
}

std::optional<HolderView> LockTable::LeaseOf(absl::string_view client_name,
                                             absl::string_view lock_name) const {
  auto client = clients_.find(client_name);
  if (client == clients_.end()) return std::nullopt;
  auto held = (*client)->holds.find(lock_name);
  if (held == (*client)->holds.end()) return std::nullopt;
  const Holder* holder = held->lock->FindHolder(held->token);
  if (holder == nullptr) return std::nullopt;
  return HolderView{.client = (*client)->name,
                    .lock = held->lock->name,
                    .mode = holder->mode,
                    .token = holder->token,
                    .expires_at = holder->expires_at};
}

std::optional<WaiterView> LockTable::WaitOf(
    absl::string_view client_name) const {
  auto client = clients_.find(client_name);
  if (client == clients_.end() || (*client)->waiting == nullptr) {
    return std::nullopt;
  }
  const Waiter& waiter = *(*client)->waiting_entry;
  return WaiterView{.client = (*client)->name,
                    .mode = waiter.mode,
                    .ttl = waiter.ttl};
}

std::vector<std::string> LockTable::ActiveLocks(absl::string_view prefix,
                                                absl::string_view after,
                                                size_t limit) const {
  std::vector<std::string> names;
  // A page starts after `after`, but never before the first name with the
  // prefix.
  auto it = after < prefix ? active_locks_.lower_bound(prefix)
                           : active_locks_.upper_bound(after);
  for (; it != active_locks_.end() && names.size() < limit; ++it) {
    if (!absl::StartsWith((*it)->name, prefix)) break;
    names.emplace_back((*it)->name);
  }
  return names;
}

std::vector<Event> LockTable::TakeEvents() {
  std::vector<Event> events;
  events.swap(events_);
  return events;
}

void LockTable::ExportTo(CoreSnapshot& snapshot) const {
  snapshot.now = now_;
  snapshot.last_age = last_age_;
  snapshot.last_sequence = last_sequence_;
  snapshot.locks.clear();
  snapshot.locks.reserve(locks_.size());
  for (const auto& lock : locks_) {
    CoreSnapshot::Lock& out = snapshot.locks.emplace_back();
    out.name = lock->name;
    out.last_token = lock->last_token;
    out.capacity = lock->capacity();
    out.holders.reserve(lock->holder_count());
    lock->ForEachHolder([&](const Holder& holder) {
      out.holders.push_back({holder.client->name, holder.mode, holder.token,
                             holder.expires_at, holder.ttl, holder.sequence});
    });
    out.queue.reserve(lock->queue().size());
    for (const Waiter& waiter : lock->queue()) {
      out.queue.push_back({waiter.client->name, waiter.mode, waiter.ttl});
    }
  }
  snapshot.clients.clear();
  snapshot.clients.reserve(clients_.size());
  for (const auto& client : clients_) {
    snapshot.clients.push_back({client->name, client->age});
  }
}

namespace {

absl::Status BadSnapshot(absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("bad snapshot: ", why));
}

}  // namespace

void LockTable::Clear() {
  idle_.clear();
  locks_.clear();
  clients_.clear();
  expiry_.clear();
  active_locks_.clear();
  events_.clear();
  waiter_count_ = 0;
  now_ = kMinTick;
  last_age_ = 0;
  last_sequence_ = 0;
}

absl::Status LockTable::ImportFrom(const CoreSnapshot& snapshot) {
  Clear();
  now_ = snapshot.now;
  last_age_ = snapshot.last_age;
  last_sequence_ = snapshot.last_sequence;
  locks_.reserve(snapshot.locks.size());
  absl::Status imported = ImportClients(snapshot.clients);
  for (const CoreSnapshot::Lock& in : snapshot.locks) {
    if (!imported.ok()) break;
    imported = ImportLock(in);
  }
  if (!imported.ok()) {
    Clear();
    return imported;
  }
  // The snapshot does not say since when a client was idle: its idle time
  // starts again at the snapshot's instant (never earlier than it began).
  for (const auto& client : clients_) MarkIdleIfSo(*client, now_);
  return absl::OkStatus();
}

absl::Status LockTable::ImportClients(
    const std::vector<CoreSnapshot::Client>& clients) {
  clients_.reserve(clients.size());
  // Ages are distinct: the idle index orders clients by (since, age), so
  // two clients of one age idle since the same instant would be one entry
  // and the second would never be forgotten.
  absl::flat_hash_set<uint64_t> ages;
  ages.reserve(clients.size());
  for (const CoreSnapshot::Client& in : clients) {
    if (in.name.empty() || in.age < 1 || in.age > last_age_ ||
        !ages.insert(in.age).second ||
        !clients_.insert(std::make_unique<ClientState>(in.name)).second) {
      return BadSnapshot(absl::StrCat("client ", in.name));
    }
    FindClient(in.name)->age = in.age;
  }
  return absl::OkStatus();
}

absl::Status LockTable::ImportLock(const CoreSnapshot::Lock& in) {
  if (in.name.empty() ||
      !locks_.insert(std::make_unique<LockState>(in.name)).second) {
    return BadSnapshot(absl::StrCat("lock ", in.name));
  }
  LockState& lock = *FindLock(in.name);
  lock.last_token = in.last_token;
  if (in.capacity > kMaxSemaphoreCapacity ||
      (in.capacity != 0 && in.holders.empty() && in.queue.empty())) {
    return BadSnapshot(absl::StrCat("capacity of ", in.name));
  }
  const auto capacity = static_cast<uint16_t>(in.capacity);
  // Every holder and waiter is a semaphore request iff the lock is one.
  auto kind_fits = [capacity](LockMode mode) {
    return (mode == LockMode::kSemaphore) == (capacity != 0);
  };
  for (const CoreSnapshot::Holder& holder : in.holders) {
    ClientState* client = FindClient(holder.client);
    if (client == nullptr || !kind_fits(holder.mode) || holder.token < 1 ||
        holder.token > lock.last_token || holder.ttl < 1 ||
        holder.ttl > kMaxCoreTtl || holder.expires_at <= now_ ||
        holder.sequence > last_sequence_ ||
        !Compatible(lock, holder.mode, capacity) ||
        !client->holds.insert(Hold{&lock, holder.token}).second ||
        !lock.InsertHolder(
            Holder{client, holder.token, holder.expires_at, holder.sequence,
                   static_cast<int32_t>(holder.ttl), holder.mode, capacity})) {
      return BadSnapshot(
          absl::StrCat("holder ", holder.client, " of ", in.name));
    }
    expiry_.insert(
        ExpiryKey{holder.expires_at, holder.sequence, &lock, holder.token});
  }
  for (const CoreSnapshot::Waiter& waiter : in.queue) {
    ClientState* client = FindClient(waiter.client);
    if (client == nullptr || client->waiting != nullptr ||
        !kind_fits(waiter.mode) || waiter.ttl < 1 || waiter.ttl > kMaxCoreTtl) {
      return BadSnapshot(
          absl::StrCat("waiter ", waiter.client, " of ", in.name));
    }
    Queue& queue = lock.MutableQueue();
    queue.push_back(Waiter{client, static_cast<int32_t>(waiter.ttl),
                           waiter.mode, capacity});
    client->waiting = &lock;
    client->waiting_entry = std::prev(queue.end());
    ++waiter_count_;
  }
  if (!lock.queue_empty() &&
      Compatible(lock, lock.queue().front().mode, capacity)) {
    return BadSnapshot(absl::StrCat("grantable head in ", in.name));
  }
  UpdateActive(lock);
  return absl::OkStatus();
}

absl::Status LockTable::CheckInvariants() const {
  size_t leases = 0;
  size_t waiters = 0;
  size_t active = 0;
  for (const auto& lock_ptr : locks_) {
    const LockState& lock = *lock_ptr;
    const bool is_active = lock.has_holders() || !lock.queue_empty();
    if (is_active) ++active;
    if (is_active != active_locks_.contains(&lock)) {
      return absl::InternalError(absl::StrCat("active index: ", lock.name));
    }
    if (absl::Status status = CheckHolders(lock, leases); !status.ok()) {
      return status;
    }
    if (absl::Status status = CheckQueue(lock, waiters); !status.ok()) {
      return status;
    }
  }
  if (leases != expiry_.size()) return absl::InternalError("expiry size");
  if (waiters != waiter_count_) return absl::InternalError("waiter count");
  if (active != active_locks_.size()) return absl::InternalError("active size");
  if (absl::Status status = CheckNobodyDeadlocked(); !status.ok()) {
    return status;
  }
  return CheckClients();
}

absl::Status LockTable::CheckHolders(const LockState& lock,
                                     size_t& leases) const {
  const std::string& name = lock.name;
  if (lock.crowd != nullptr && lock.crowd->queue.empty() &&
      lock.crowd->more_holders.empty()) {
    return absl::InternalError(absl::StrCat("empty crowd kept: ", name));
  }
  if (lock.crowd != nullptr && !lock.crowd->more_holders.empty() &&
      !lock.has_holders()) {
    return absl::InternalError(absl::StrCat("holders without first: ", name));
  }
  size_t exclusive = 0;
  FencingToken previous_token = 0;
  absl::Status holder_status;
  lock.ForEachHolder([&](const Holder& holder) {
    if (!holder_status.ok()) return;
    ++leases;
    const FencingToken token = holder.token;
    if (token < 1 || token > lock.last_token || token <= previous_token) {
      holder_status = absl::InternalError(
          absl::StrCat("token beyond counter or out of order: ", name));
      return;
    }
    previous_token = token;
    if (holder.mode == LockMode::kExclusive) ++exclusive;
    if (holder.expires_at <= now_) {
      holder_status =
          absl::InternalError(absl::StrCat("lapsed lease held: ", name));
      return;
    }
    auto held = holder.client->holds.find(absl::string_view(lock.name));
    if (held == holder.client->holds.end() || held->token != token) {
      holder_status =
          absl::InternalError(absl::StrCat("client hold index: ", name));
      return;
    }
    if (!expiry_.contains(
            ExpiryKey{holder.expires_at, holder.sequence, nullptr, 0})) {
      holder_status = absl::InternalError(absl::StrCat("expiry index: ", name));
    }
  });
  if (!holder_status.ok()) return holder_status;
  if (lock.crowd != nullptr) {
    for (const auto& [token, holder] : lock.crowd->more_holders) {
      if (token != holder.token) {
        return absl::InternalError(absl::StrCat("holder key: ", name));
      }
    }
  }
  if (exclusive > 0 && lock.holder_count() != 1) {
    return absl::InternalError(absl::StrCat("incompatible holders: ", name));
  }
  const uint16_t capacity = lock.capacity();
  if (capacity != 0 && lock.holder_count() > capacity) {
    return absl::InternalError(absl::StrCat("capacity exceeded: ", name));
  }
  return absl::OkStatus();
}

absl::Status LockTable::CheckQueue(const LockState& lock,
                                   size_t& waiters) const {
  const std::string& name = lock.name;
  const uint16_t capacity = lock.capacity();
  // Every holder and waiter is a semaphore request of the lock's capacity
  // iff the lock is a semaphore.
  bool kinds_fit = true;
  auto fits = [&](LockMode mode, uint16_t entry_capacity) {
    kinds_fit &= entry_capacity == capacity &&
                 (mode == LockMode::kSemaphore) == (capacity != 0);
  };
  lock.ForEachHolder(
      [&](const Holder& holder) { fits(holder.mode, holder.capacity); });
  for (const Waiter& waiter : lock.queue()) {
    fits(waiter.mode, waiter.capacity);
  }
  if (!kinds_fit) {
    return absl::InternalError(absl::StrCat("mixed kinds: ", name));
  }
  if (!lock.queue_empty() &&
      Compatible(lock, lock.queue().front().mode, capacity)) {
    return absl::InternalError(absl::StrCat("grantable head waits: ", name));
  }
  const Queue& queue = lock.queue();
  for (auto it = queue.begin(); it != queue.end(); ++it) {
    ++waiters;
    if (it->client->waiting != &lock || it->client->waiting_entry != it) {
      return absl::InternalError(absl::StrCat("waiter index: ", name));
    }
  }
  return absl::OkStatus();
}

absl::Status LockTable::CheckNobodyDeadlocked() const {
  // Invariant 6: nobody is deadlocked. Freedom (the AND-OR rule of the
  // header) over the whole graph, from the clients that wait for nothing,
  // with the contract's edges listed in full (every holder, every waiter
  // ahead), independently of the chained graph DeadlockedWith searches.
  absl::flat_hash_map<const ClientState*, std::vector<const ClientState*>>
      predecessors;
  absl::flat_hash_map<const ClientState*, size_t> missing;
  std::vector<const ClientState*> free_clients;
  absl::flat_hash_set<const ClientState*> is_free;
  for (const auto& client_ptr : clients_) {
    const ClientState& client = *client_ptr;
    if (client.waiting == nullptr) {
      is_free.insert(&client);
      free_clients.push_back(&client);
      continue;
    }
    const LockState& lock = *client.waiting;
    size_t successors = 0;
    lock.ForEachHolder([&](const Holder& holder) {
      predecessors[holder.client].push_back(&client);
      ++successors;
    });
    for (auto it = lock.queue().begin(); it != client.waiting_entry; ++it) {
      predecessors[it->client].push_back(&client);
      ++successors;
    }
    // A semaphore waiter needs one free successor; any other all of them.
    missing[&client] = lock.capacity() != 0 ? 1 : successors;
  }
  for (size_t i = 0; i < free_clients.size(); ++i) {
    auto found = predecessors.find(free_clients[i]);
    if (found == predecessors.end()) continue;
    for (const ClientState* waiter : found->second) {
      if (is_free.contains(waiter) || --missing[waiter] != 0) continue;
      is_free.insert(waiter);
      free_clients.push_back(waiter);
    }
  }
  for (const auto& client_ptr : clients_) {
    if (!is_free.contains(client_ptr.get())) {
      return absl::InternalError(
          absl::StrCat("deadlocked client: ", client_ptr->name));
    }
  }
  return absl::OkStatus();
}

absl::Status LockTable::CheckClients() const {
  size_t idle = 0;
  for (const auto& client_ptr : clients_) {
    const ClientState& client = *client_ptr;
    const bool is_idle = client.holds.empty() && client.waiting == nullptr;
    const bool indexed = client.idle_since != kMaxTick;
    if (indexed) ++idle;
    if (indexed != (is_idle && config_.track_idle_clients) ||
        (indexed && !idle_.contains(IdleKey{client.idle_since, client.age,
                                            nullptr}))) {
      return absl::InternalError(absl::StrCat("idle index: ", client.name));
    }
  }
  if (idle != idle_.size()) return absl::InternalError("idle size");
  absl::flat_hash_set<uint64_t> ages;
  for (const auto& client_ptr : clients_) {
    const ClientState& client = *client_ptr;
    const std::string& name = client.name;
    if (client.age < 1 || client.age > last_age_ ||
        !ages.insert(client.age).second) {
      return absl::InternalError(absl::StrCat("age: ", name));
    }
    for (const Hold& hold : client.holds) {
      auto lock = locks_.find(absl::string_view(hold.lock->name));
      if (lock == locks_.end() || lock->get() != hold.lock) {
        return absl::InternalError("held lock missing");
      }
      const Holder* holder = hold.lock->FindHolder(hold.token);
      if (holder == nullptr || holder->client != &client) {
        return absl::InternalError(absl::StrCat("hold without holder: ", name));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace leasekeeper
