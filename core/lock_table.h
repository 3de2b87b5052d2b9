// LockTable: the lease contract's lock table (contract Parts 1-4) and the
// daemon's counting semaphores: named locks with time-limited leases, FIFO
// queues, exclusive/shared/semaphore modes, per-lock fencing counters,
// client registration (ages) and deadlock-victim selection. Why it is built
// so: docs/design/core-rules.md.
//
// Thread-safety: none. One owner (StateMachine) calls it, one call at a time.
//
// Time: it never reads a clock. Every method that takes `now` first retires,
// in order, every lease with expires_at <= now, handing each lock on at the
// instant its lease ended (rule 3). REQUIRES: now in [kMinTick, kMaxTick];
// a `now` below the latest seen is taken as the latest. What a call does to
// other parties (grants from the queue, lapses, aborts) is queued for
// TakeEvents(). No method scans all locks or clients.
#ifndef LEASEKEEPER_CORE_LOCK_TABLE_H_
#define LEASEKEEPER_CORE_LOCK_TABLE_H_

#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/snapshot.h"
#include "core/types.h"

namespace leasekeeper {

// The answer to an acquire that passed validation and the busy check.
struct AcquireOutcome {
  enum class Kind {
    kGranted,   // the requester holds the lock: token, expires_at
    kQueued,    // the requester waits: position (1 = next in line)
    kDeadlock,  // the requester was aborted as a deadlock victim
  };
  Kind kind = Kind::kGranted;
  FencingToken token = 0;  // kGranted
  Tick expires_at = 0;     // kGranted
  int64_t position = 0;    // kQueued, after all aborts
  // Clients aborted by this request, in abort order; for kDeadlock it ends
  // with the requester. Empty when nobody was aborted.
  std::vector<std::string> aborted;
};

struct RenewOutcome {
  FencingToken token = 0;  // unchanged by renew (rule 5)
  Tick expires_at = 0;     // now + ttl
};

enum class ReleaseOutcome {
  kReleased,   // the caller held the lock; it passed on at `now`
  kWithdrawn,  // the caller was waiting; its request left the queue
};

// One holder as inspect and status show it.
struct HolderView {
  std::string client;
  std::string lock;
  LockMode mode = LockMode::kExclusive;
  FencingToken token = 0;
  Tick expires_at = 0;
};

struct WaiterView {
  std::string client;
  LockMode mode = LockMode::kExclusive;
  int64_t ttl = 0;
};

// inspect: holders by token, lowest first; queue oldest first. capacity:
// the semaphore's N while the lock is a semaphore with holders or waiters,
// else 0.
struct LockView {
  std::vector<HolderView> holders;
  std::vector<WaiterView> queue;
  uint32_t capacity = 0;
};

// status: a client that is not registered has no age, holds nothing and
// waits for nothing.
struct ClientView {
  std::optional<uint64_t> age;
  std::vector<HolderView> holds;  // sorted by lock name
  std::optional<std::string> waiting;
};

// Where a page of inspect resumes: before `in_queue`, after the holder
// with token `after_token` (0: from the lowest token); then after queue
// position `after_position` (0: from the head). Holders are ordered by token
// and the queue by position, so the cursor is the whole resume point.
struct InspectCursor {
  bool in_queue = false;
  FencingToken after_token = 0;
  int64_t after_position = 0;
};

// One page of inspect: holders after the cursor, lowest token first, then,
// while the page has room, the queue from the cursor on (queue[0] is at
// position first_position). next is where the following page resumes;
// nullopt when this page reaches the end of the holders and the queue.
struct LockPage {
  std::vector<HolderView> holders;
  std::vector<WaiterView> queue;
  uint32_t capacity = 0;  // as LockView::capacity
  int64_t first_position = 1;
  std::optional<InspectCursor> next;
};

// One page of status: as ClientView, with only the holds whose lock name
// comes after the page's start; next_after is the last lock name shown when
// more holds follow, nullopt at the end.
struct ClientPage {
  std::optional<uint64_t> age;
  std::vector<HolderView> holds;  // sorted by lock name
  std::optional<std::string> waiting;
  std::optional<std::string> next_after;
};

// Something that happened to a party other than the caller.
struct Event {
  enum class Kind {
    kLapsed,            // a lease reached its expires_at (`at`)
    kGrantedFromQueue,  // a waiter was granted; lease [at, expires_at)
    kAbortedWaiter,     // a waiting deadlock victim lost its place
    kAbortedHolder,     // a deadlock victim lost a lease it held
    kReleasedByOwner,   // a lease ended by ReleaseAll (session loss)
    kWithdrawnByOwner,  // a wait ended by ReleaseAll (session loss)
  };
  Kind kind = Kind::kLapsed;
  Tick at = 0;
  std::string client;
  std::string lock;
  LockMode mode = LockMode::kExclusive;
  FencingToken token = 0;  // lease events
  Tick expires_at = 0;     // kGrantedFromQueue
};

// Invariants, true between calls:
//  1. A lock's holders are one exclusive lease, or any number of shared
//     leases, or at most `capacity` semaphore leases; its holders and
//     waiters are all semaphore requests of that capacity, or none is.
//  2. Every lease held has expires_at > the latest now.
//  3. The head of a non-empty queue is not compatible with the holders.
//  4. Tokens per lock strictly rise in grant order; a lock's counter is
//     never reset, even when nobody holds or awaits it.
//  5. A client waits for at most one lock and holds at most one lease per
//     lock; a client that holds or waits is registered.
//  6. No client is deadlocked under the AND-OR rule (without semaphore
//     waiters: the wait-for graph has no cycle).
//  7. With CoreConfig::track_idle_clients, a registered client is in the
//     idle index iff it holds nothing and waits for nothing.
class LockTable {
 public:
  explicit LockTable(CoreConfig config = {});
  LockTable(const LockTable&) = delete;
  LockTable& operator=(const LockTable&) = delete;
  ~LockTable();

  // Takes `lock` for `client` in `mode` with a lease of `ttl` ticks;
  // `capacity` is the semaphore's N for mode kSemaphore and 0 otherwise.
  // Outcomes, checked in this order (a refusal changes nothing but time):
  //  - kInvalidArguments: empty client or lock; a kSemaphore request with
  //    capacity outside [1, kMaxSemaphoreCapacity]; another mode with a
  //    capacity other than 0.
  //  - kInvalidTtl: ttl outside [1, max_ttl].
  //  - kClientBusy: the client waits for some lock, or holds `lock`.
  //  - kModeMismatch: the lock has holders or waiters and is a semaphore
  //    while the request is not, or the reverse.
  //  - kCapacityMismatch: the lock is a semaphore with holders or waiters
  //    and the request names another capacity.
  //  - kGranted: the queue was empty and the request compatible (Part 2
  //    rule 2; for a semaphore, fewer than capacity hold); lease
  //    [now, now + ttl) with the lock's next token.
  //  - kQueued: appended to the queue; while the requester was deadlocked,
  //    the youngest deadlocked client reachable from it was aborted (Part 3
  //    with the AND-OR rule: a semaphore waiter needs one free holder, any
  //    other waiter all of them), and those aborts may have granted the
  //    request after all (kGranted with `aborted` set).
  //  - kDeadlock: the requester itself was the victim; it is unregistered.
  // Registers an unregistered client before queueing (Part 3 rule 2).
  // Cost: O(log locks) plus the leases that lapse first; when it queues,
  // per abort, one search over the clients reachable from the requester in
  // the wait-for graph and the locks they hold.
  absl::StatusOr<AcquireOutcome> Acquire(Tick now, absl::string_view client,
                                         absl::string_view lock, int64_t ttl,
                                         LockMode mode, uint32_t capacity = 0);

  // Sets the caller's lease on `lock` to [.., now + ttl); keeps the token.
  // Outcomes: kInvalidArguments, kInvalidTtl, kNotHolder (including a lease
  // that lapsed at or before now), or the renewed lease.
  absl::StatusOr<RenewOutcome> Renew(Tick now, absl::string_view client,
                                     absl::string_view lock, int64_t ttl);

  // Ends the caller's lease (kReleased; the lock passes on at now) or
  // withdraws its wait (kWithdrawn; those behind move up, and a newly
  // compatible head is granted at now). Otherwise kNotHolder, or
  // kInvalidArguments for an empty name.
  absl::StatusOr<ReleaseOutcome> Release(Tick now, absl::string_view client,
                                         absl::string_view lock);

  // Withdraws the client's wait for `lock` if it still waits for it; never
  // ends a lease. True if a wait was withdrawn. The server uses it when a
  // waiting call times out or is cancelled.
  bool Withdraw(Tick now, absl::string_view client, absl::string_view lock);

  // Session loss: withdraws the client's wait and releases every lease it
  // holds, in ascending lock-name order, each handing its lock on at now.
  // The client stays registered (only an abort unregisters). Returns the
  // number of leases released. Cost: O(leases held by the client).
  int ReleaseAll(Tick now, absl::string_view client);

  // Session keepalive: renews every lease the client holds to now + the ttl
  // of its last grant or renewal. Returns the number renewed.
  int RenewAll(Tick now, absl::string_view client);

  // Unregisters `client` if it holds nothing and waits for nothing (true);
  // otherwise, or if it is not registered, changes nothing (false). A
  // daemon-only operation (the contract keeps a client registered until it
  // is aborted); a client that acquires again registers afresh with a new,
  // larger age, as after an abort. Cost: O(log idle clients).
  bool Forget(Tick now, absl::string_view client);

  // Idle clients (registered, holding nothing, waiting for nothing), kept in
  // an index by the instant they became idle only with
  // CoreConfig::track_idle_clients, for the owner that forgets them. The
  // index is a schedule, not state: Forget is the operation that changes
  // the table, and it decides by itself whether the client is idle.
  struct IdleClient {
    Tick since = 0;
    absl::string_view client;  // valid until the next mutating call
  };
  // The longest-idle client (earliest since, then lowest age); nullopt if
  // none or not tracking. O(1).
  std::optional<IdleClient> OldestIdleClient() const;
  // Moves an idle client's `since` forward to `at` (the owner found a reason
  // to keep it, e.g. a session). No-op for a client that is not idle or
  // idle since `at` or later. O(log idle clients).
  void RestartIdleClock(absl::string_view client, Tick at);

  // Retires every lease with expires_at <= now (rule 1) and nothing else.
  void AdvanceTo(Tick now);

  // The earliest expires_at of any held lease, if any: when the owner must
  // call AdvanceTo next for lapses to happen on time.
  std::optional<Tick> NextExpiry() const;

  // Read-only views "as of now" (they retire lapsed leases first).
  LockView Inspect(Tick now, absl::string_view lock);
  ClientView Status(Tick now, absl::string_view client);
  // Paged views, also "as of now", of at most `limit` entries (holders and
  // waiters together; a limit of 0 is taken as 1). A lock or client never
  // seen answers an empty last page. InspectPage costs O(log holders +
  // limit) for its holders, plus O(after_position + limit) once in the
  // queue (a list walked from its head); StatusPage O(log holds + limit).
  // Entries that change between pages are not repeated: a page shows the
  // holders and waiters as of its own call.
  LockPage InspectPage(Tick now, absl::string_view lock,
                       const InspectCursor& from, size_t limit);
  ClientPage StatusPage(Tick now, absl::string_view client,
                        absl::string_view after_lock, size_t limit);

  // Without retiring anything (as of the latest `now` seen), for an owner
  // that just brought the table up to date and must not keep copies of the
  // queues: the number of clients waiting for `lock` (0 for a lock never
  // seen), and the lock `client` waits for (nullopt if none; the view lives
  // until the next mutating call). O(1).
  size_t QueueLength(absl::string_view lock) const;
  std::optional<absl::string_view> WaitingFor(absl::string_view client) const;

  // Also as of the latest `now` seen, for the daemon's checks on fenced
  // writes and reads (core/state_machine.h): the highest token ever issued
  // for `lock` (0 for a lock never granted), O(1); and whether `client`
  // holds a live lease on `lock` with exactly `token`, O(log locks held by
  // the client).
  FencingToken LastToken(absl::string_view lock) const;
  bool HoldsWithToken(absl::string_view client, absl::string_view lock,
                      FencingToken token) const;

  // Names of locks that have a holder or a waiter, in ascending order,
  // starting after `after`, at most `limit`. Cost: O(log n + limit).
  std::vector<std::string> ActiveLocks(absl::string_view prefix,
                                       absl::string_view after,
                                       size_t limit) const;

  // Drains the events caused since the last call, in the order they
  // happened. Always empty when CoreConfig::record_events is false.
  std::vector<Event> TakeEvents();
  // The events caused since the last TakeEvents, oldest first, without
  // draining them: an owner that follows every change as it happens reads
  // the ones a call added. O(1).
  const std::vector<Event>& pending_events() const { return events_; }

  // Without retiring anything (as of the latest `now` seen): the lease
  // `client` holds on `lock` (nullopt if none), O(log locks held by the
  // client); and the client's wait (nullopt if it waits for nothing; the
  // lock is WaitingFor's), O(1). For an owner that reports what a Release
  // or Withdraw is about to end.
  std::optional<HolderView> LeaseOf(absl::string_view client,
                                    absl::string_view lock) const;
  std::optional<WaiterView> WaitOf(absl::string_view client) const;

  // The latest `now` seen; kMinTick before the first call.
  Tick now() const { return now_; }

  // Sizes, for metrics and tests. O(1).
  size_t held_lease_count() const { return expiry_.size(); }
  size_t waiter_count() const { return waiter_count_; }
  size_t lock_count() const { return locks_.size(); }
  size_t registered_client_count() const { return clients_.size(); }

  // Writes the table's whole state into `snapshot` (all but `store`).
  // Cost: O(size of the table).
  void ExportTo(CoreSnapshot& snapshot) const;

  // Replaces this table's state with `snapshot`'s. InvalidArgument (and the
  // table left empty) if the snapshot is inconsistent: a holder or waiter
  // that is not a registered client, incompatible holders, holders or
  // waiters of another mode or capacity than their lock's, a capacity on an
  // idle lock or above kMaxSemaphoreCapacity, a token above its lock's
  // counter, a client holding twice or waiting twice, two clients of
  // one age or an age above last_age. Pending events
  // are dropped. Cost: O(size of the snapshot).
  absl::Status ImportFrom(const CoreSnapshot& snapshot);

  // Checks every invariant above and the consistency of all indexes.
  // Returns the first violation found. Cost: O(size of the table); for tests.
  absl::Status CheckInvariants() const;

 private:
  struct LockState;
  struct ClientState;

  // The layout keeps a held lock small (docs/design/core-rules.md, "Memory
  // per held lock"): the usual single holder inline, the rest in a Crowd
  // that exists only while needed, names owned once by LockState and
  // ClientState. A semaphore's capacity rides in every lease and queue
  // entry beside its mode; the lock's is its first holder's (or, between a
  // lapse and the grant it causes, its head waiter's).

  struct Holder {
    ClientState* client = nullptr;
    FencingToken token = 0;
    Tick expires_at = 0;
    uint64_t sequence = 0;  // tie-break in the expiry index
    // Of the last grant or renewal, for RenewAll. 32 bits: <= kMaxCoreTtl.
    int32_t ttl = 0;
    LockMode mode = LockMode::kExclusive;
    // The semaphore's capacity for a kSemaphore lease, else 0.
    uint16_t capacity = 0;
  };
  struct Waiter {
    ClientState* client;
    int32_t ttl;  // <= kMaxCoreTtl
    LockMode mode;
    uint16_t capacity;  // as Holder::capacity
  };
  static_assert(kMaxSemaphoreCapacity <= UINT16_MAX);
  // The capacity sits in padding (LP64): it costs a lease and an entry
  // nothing.
  static_assert(sizeof(void*) != 8 ||
                (sizeof(Holder) == 40 && sizeof(Waiter) == 16));
  using Queue = std::list<Waiter>;
  // A lock's holders beyond the lowest-token one (shared holders) and its
  // queue. Exists iff either is non-empty.
  struct Crowd {
    absl::btree_map<FencingToken, Holder> more_holders;  // by token
    Queue queue;                                         // oldest first
  };
  struct LockState {
    explicit LockState(absl::string_view lock_name) : name(lock_name) {}
    const std::string name;
    FencingToken last_token = 0;
    // The holder with the lowest token; client == nullptr when nobody holds
    // the lock. Every other holder has a higher token and is in the crowd.
    Holder first;
    std::unique_ptr<Crowd> crowd;

    bool has_holders() const { return first.client != nullptr; }
    bool idle() const { return !has_holders() && queue_empty(); }
    // The semaphore's N while the lock is a semaphore with holders or
    // waiters (all of them carry it); 0 for an exclusive/shared or idle
    // lock.
    uint16_t capacity() const;
    size_t holder_count() const;
    // nullptr if no holder has `token`. Invalidated by Insert/EraseHolder.
    Holder* FindHolder(FencingToken token);
    // False (and nothing changed) if a holder already has holder.token.
    // O(log holders).
    bool InsertHolder(const Holder& holder);
    // REQUIRES: a holder has `token`. O(log holders).
    void EraseHolder(FencingToken token);
    // Calls f(const Holder&) for each holder by token, lowest first.
    template <typename F>
    void ForEachHolder(F&& f) const;
    bool queue_empty() const {
      return crowd == nullptr || crowd->queue.empty();
    }
    // The queue (an empty one when there is no crowd).
    const Queue& queue() const;
    // The queue, creating the crowd if needed.
    Queue& MutableQueue();
    // Frees the crowd once it holds nothing.
    void DropCrowdIfEmpty();
  };
  struct Hold {
    LockState* lock;
    FencingToken token;
  };
  // Orders holds and locks by lock name (the name each LockState owns), and
  // finds them by absl::string_view: the client's holds and the active-locks
  // index store 16- and 8-byte entries instead of a copy of a name view.
  struct ByLockName {
    using is_transparent = void;
    static absl::string_view NameOf(absl::string_view name) { return name; }
    static absl::string_view NameOf(const LockState* lock) {
      return lock->name;
    }
    static absl::string_view NameOf(const Hold& hold) {
      return hold.lock->name;
    }
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return NameOf(a) < NameOf(b);
    }
  };
  struct ClientState {
    explicit ClientState(absl::string_view client_name) : name(client_name) {}
    const std::string name;
    uint64_t age = 0;  // registration number, >= 1
    // Locks held, by name (ascending: status and abort order). A B-tree set:
    // a set of one entry costs one small node, where std::map costs a node
    // per entry.
    absl::btree_set<Hold, ByLockName> holds;
    LockState* waiting = nullptr;
    Queue::iterator waiting_entry;
    // Mark of the deadlock search (DeadlockedWith), scratch, not state:
    // 2 * the search's epoch once reached forward, 2 * epoch + 1 once also
    // found free. One word rather than two.
    mutable uint64_t search_mark = 0;
    // Its key in idle_ while it is there, else kMaxTick.
    Tick idle_since = kMaxTick;
  };
  // Hash and equality of owned LockState/ClientState by name, so that the
  // sets below find them by absl::string_view.
  struct NameHash {
    using is_transparent = void;
    size_t operator()(absl::string_view name) const {
      return absl::Hash<absl::string_view>{}(name);
    }
    template <typename T>
    size_t operator()(const std::unique_ptr<T>& state) const {
      return (*this)(absl::string_view(state->name));
    }
  };
  struct NameEq {
    using is_transparent = void;
    static absl::string_view NameOf(absl::string_view name) { return name; }
    template <typename T>
    static absl::string_view NameOf(const std::unique_ptr<T>& state) {
      return state->name;
    }
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return NameOf(a) == NameOf(b);
    }
  };
  // Idle clients by (since, age): ages are unique, so the order is total
  // and the same in every run.
  struct IdleKey {
    Tick since;
    uint64_t age;
    ClientState* client;
    bool operator<(const IdleKey& other) const {
      if (since != other.since) return since < other.since;
      return age < other.age;
    }
  };
  struct ExpiryKey {
    Tick expires_at;
    uint64_t sequence;
    LockState* lock;
    FencingToken token;
    bool operator<(const ExpiryKey& other) const {
      if (expires_at != other.expires_at) return expires_at < other.expires_at;
      return sequence < other.sequence;
    }
  };

  absl::Status ValidateTtl(int64_t ttl) const;
  // Acquire's argument checks: INVALID_ARGUMENT, INVALID_TTL or OK.
  absl::Status ValidateAcquire(absl::string_view client_name,
                               absl::string_view lock_name, int64_t ttl,
                               LockMode mode, uint32_t capacity) const;
  // Acquire's state checks (either may be null): CLIENT_BUSY,
  // MODE_MISMATCH, CAPACITY_MISMATCH (each with a detail naming the lock's
  // kind, core/errors.h) or OK.
  absl::Status CheckAcquirable(const ClientState* client, const LockState* lock,
                               absl::string_view lock_name, LockMode mode,
                               uint32_t capacity) const;
  // "<name> is a semaphore of N" / "is held <mode>" / "is awaited <mode>".
  // REQUIRES: !lock.idle().
  static std::string DescribeKind(const LockState& lock);
  // Puts the client at the end of the lock's queue.
  void Enqueue(LockState& lock, ClientState& client, int64_t ttl, LockMode mode,
               uint16_t capacity);
  // Part 3 rule 5 for a requester that waits; appends the victims'
  // names to `aborted`. True if the requester itself was aborted.
  bool AbortDeadlocked(ClientState& requester, Tick now,
                       std::vector<std::string>& aborted);
  // Empties the table, as a new one (ImportFrom's start and failure).
  void Clear();
  // ImportFrom's steps: INVALID_ARGUMENT ("bad snapshot: ...") or OK.
  absl::Status ImportClients(const std::vector<CoreSnapshot::Client>& clients);
  absl::Status ImportLock(const CoreSnapshot::Lock& in);
  // CheckInvariants' steps; CheckHolders and CheckQueue count into
  // `leases` and `waiters`.
  absl::Status CheckHolders(const LockState& lock, size_t& leases) const;
  absl::Status CheckQueue(const LockState& lock, size_t& waiters) const;
  absl::Status CheckNobodyDeadlocked() const;
  absl::Status CheckClients() const;
  void Retire(Tick now);
  // Part 2 rule 1, and "fewer than capacity hold" for a semaphore request.
  // REQUIRES: the request (`mode`, `capacity`) is of the lock's kind and
  // capacity, or the lock is idle.
  bool Compatible(const LockState& lock, LockMode mode,
                  uint16_t capacity) const;
  void AddHolder(LockState& lock, ClientState& client, LockMode mode,
                 uint16_t capacity, Tick at, int64_t ttl);
  // REQUIRES: `holder` is one of lock's holders (it is invalidated).
  // `at`: the instant the lease or wait ended (for the idle index).
  void RemoveHolder(LockState& lock, const Holder& holder, Tick at);
  void RemoveWaiter(ClientState& client, Tick at);
  // The idle index (track_idle_clients): enters a client that holds and
  // waits for nothing, idle since `at`; and takes one out.
  void MarkIdleIfSo(ClientState& client, Tick at);
  void MarkBusy(ClientState& client);
  void GrantFromQueue(LockState& lock, Tick at);
  void UpdateActive(LockState& lock);
  // Withdraws the client's wait and ends every lease it holds, in ascending
  // lock-name order, handing each lock on at `at`; emits `wait_event` and
  // `lease_event`. Returns the number of leases ended. The client stays in
  // clients_.
  int LetGoOfEverything(ClientState& client, Tick at, Event::Kind wait_event,
                        Event::Kind lease_event);
  // Abort (Part 3 rule 8): LetGoOfEverything, then unregisters the victim.
  void Abort(ClientState& victim, Tick at);
  // Moves a held lease's expiry to `expires_at` and re-keys it in expiry_
  // (a fresh sequence, as for a new grant).
  void ExtendLease(LockState& lock, Holder& holder, Tick expires_at);
  // Appends the client's successors in the reachability-equivalent wait-for
  // graph (see DeadlockedWith): the waiter just ahead, or the holders if it
  // is at the head. Nothing for a client that does not wait.
  void AppendSuccessors(const ClientState& client,
                        std::vector<ClientState*>& out) const;
  // Part 3's set C under the AND-OR rule (docs/design/core-rules.md): the
  // deadlocked clients reachable from `requester`, the requester among
  // them; empty if the requester is not deadlocked. REQUIRES: nobody was
  // deadlocked before the requester's wait began.
  std::vector<ClientState*> DeadlockedWith(ClientState& requester) const;
  // DeadlockedWith's steps: its cheap exit; the forward pass (true if the
  // requester reaches itself); the backward pass over what it reached.
  bool HasIncomingEdge(const ClientState& requester) const;
  bool ReachesItself(ClientState& requester, uint64_t epoch) const;
  void SpreadFreedom(uint64_t epoch) const;
  LockState* FindLock(absl::string_view name);
  ClientState* FindClient(absl::string_view name);
  HolderView ViewOf(const LockState& lock, const Holder& holder) const;
  void Emit(Event::Kind kind, Tick at, const ClientState& client,
            const LockState& lock, LockMode mode, FencingToken token,
            Tick expires_at);

  CoreConfig config_;
  Tick now_ = kMinTick;
  uint64_t last_age_ = 0;
  uint64_t last_sequence_ = 0;
  size_t waiter_count_ = 0;
  absl::flat_hash_set<std::unique_ptr<LockState>, NameHash, NameEq> locks_;
  absl::flat_hash_set<std::unique_ptr<ClientState>, NameHash, NameEq> clients_;
  absl::btree_set<ExpiryKey> expiry_;
  absl::btree_set<const LockState*, ByLockName> active_locks_;
  absl::btree_set<IdleKey> idle_;  // only with track_idle_clients
  // Cycle-search scratch, kept to avoid allocating per search.
  mutable uint64_t search_epoch_ = 0;
  mutable std::vector<ClientState*> search_stack_;
  mutable std::vector<ClientState*> search_successors_;
  mutable std::vector<ClientState*> search_reached_;
  // Free successors still missing, per AND-waiter with several successors
  // (the head of a shared lock with several holders).
  mutable absl::flat_hash_map<const ClientState*, size_t> search_pending_;
  std::vector<Event> events_;
};

}  // namespace leasekeeper

#endif  // LEASEKEEPER_CORE_LOCK_TABLE_H_
