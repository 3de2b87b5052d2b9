// StateMachine: the whole core (LockTable + FencedStore) driven by a stream
// of plain-data operations.
//
// Every state change of leasekeeper is one Operation applied here, in order:
// plain values, so the same stream, written to the local log or replicated
// through etcd, rebuilds the same state in a fresh StateMachine (the core is
// deterministic). Queries (read, inspect, status) change nothing but the
// passage of time; they are methods, not operations.
//
// Thread-safety: none; one owner (the server's CoreOwner, or the replay).
#ifndef LEASEKEEPER_CORE_STATE_MACHINE_H_
#define LEASEKEEPER_CORE_STATE_MACHINE_H_

#include <cstddef>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/fenced_store.h"
#include "core/lock_table.h"
#include "core/types.h"

namespace leasekeeper {

namespace op {
struct Acquire {
  std::string client;
  std::string lock;
  int64_t ttl = 0;
  LockMode mode = LockMode::kExclusive;
  // Daemon-only: the semaphore's capacity for mode kSemaphore, else 0 (see
  // LockTable::Acquire).
  uint32_t capacity = 0;
};
struct Renew {
  std::string client;
  std::string lock;
  int64_t ttl = 0;
};
struct Release {
  std::string client;
  std::string lock;
};
// Withdraws a wait only (see LockTable::Withdraw).
struct Withdraw {
  std::string client;
  std::string lock;
};
// Session loss (see LockTable::ReleaseAll).
struct ReleaseAll {
  std::string client;
};
// Session keepalive (see LockTable::RenewAll).
struct RenewAll {
  std::string client;
};
// A write to the fenced store. With the daemon-only fields left at their
// defaults it is the contract's write (rule 6: the token rule alone, the
// store never looks at leases), which is what leasekeeper-replay sends.
// leasekeeperd sets them; each is checked in the same step as the token
// rule, so the log replays the decision exactly. Order of the checks:
// arguments, token issued, writer holds, token rule.
struct Write {
  std::string lock;
  std::string key;
  std::string value;
  FencingToken token = 0;
  // Daemon-only: refuse a token above the lock's fencing counter
  // (kTokenNotIssued), so a made-up token cannot raise the mark past every
  // real holder.
  bool refuse_unissued = false;
  // Daemon-only: accept only if `client` holds a live lease on `lock` with
  // exactly `token` at op.at (kNotHolder; kInvalidArguments if `client` is
  // empty). Ignored when false.
  bool require_held = false;
  std::string client{};
};
// Daemon-only: a holder-checked delete of one key of the fenced store, by
// Write's rules with every daemon check on, in Write's order: arguments
// (kInvalidArguments for an empty lock, key or client or a token < 1),
// token issued (kTokenNotIssued), `client` holds a live lease on `lock`
// with exactly `token` at op.at (kNotHolder), token rule (kStaleToken). A
// refused delete changes nothing. Accepted: the key's value is removed if
// it has one, and the token becomes the lock's high-water mark as an
// accepted write's does (FencedStore::Delete). The contract has no delete.
struct Delete {
  std::string lock;
  std::string key;
  FencingToken token = 0;
  std::string client;
};
// Daemon-only: forget an idle client (see LockTable::Forget).
struct Forget {
  std::string client;
};
// Daemon-only: a read that carries the reader's token. The token must have
// been issued for the lock (kTokenNotIssued) and not be below its
// high-water mark (kStaleToken); it then becomes the mark, so any later
// write with a lower token is refused, and the value is returned.
// kInvalidArguments for an empty lock or key or a token < 1.
struct FencedRead {
  std::string lock;
  std::string key;
  FencingToken token = 0;
};
// Only the passage of time: retires leases with expires_at <= at.
struct Advance {};
}  // namespace op

struct Operation {
  Tick at = 0;
  std::variant<op::Acquire, op::Renew, op::Release, op::Withdraw,
               op::ReleaseAll, op::RenewAll, op::Write, op::Advance,
               op::FencedRead, op::Forget, op::Delete>
      body;
};

// What a FencedRead answers: the last accepted value, or nullopt.
struct ReadOutcome {
  std::optional<std::string> value;
};

// What Apply answers for each kind of operation: AcquireOutcome, RenewOutcome,
// ReleaseOutcome, `bool` (Withdraw: whether a wait was withdrawn; Forget:
// whether the client was forgotten; Delete: whether the key had a value),
// `int`
// (ReleaseAll/RenewAll: leases affected), std::monostate (Write accepted,
// Advance), ReadOutcome (FencedRead).
using Reply = std::variant<AcquireOutcome, RenewOutcome, ReleaseOutcome, bool,
                           int, std::monostate, ReadOutcome>;

class StateMachine {
 public:
  explicit StateMachine(CoreConfig config = {}) : table_(config) {}
  StateMachine(const StateMachine&) = delete;
  StateMachine& operator=(const StateMachine&) = delete;

  // Applies one operation at op.at. Errors are the contract's (errors.h) and
  // leave the state as it was, except that time has advanced to op.at
  // (rule 1 applies to operations that then fail validation).
  absl::StatusOr<Reply> Apply(const Operation& op);

  // Queries at `now` (each retires lapsed leases first).
  // Read: kInvalidArguments for an empty lock or key; otherwise the value or
  // nullopt.
  absl::StatusOr<std::optional<std::string>> Read(Tick now,
                                                  absl::string_view lock,
                                                  absl::string_view key);
  // Keys: a page of `lock`'s key names after `after` (FencedStore::Keys);
  // like Read it needs no token. kInvalidArguments for an empty lock.
  absl::StatusOr<KeyPage> Keys(Tick now, absl::string_view lock,
                               absl::string_view after, size_t limit);
  // Inspect/Status: kInvalidArguments for an empty name.
  absl::StatusOr<LockView> Inspect(Tick now, absl::string_view lock);
  absl::StatusOr<ClientView> Status(Tick now, absl::string_view client);

  // The whole state as plain data, and back (see snapshot.h). Restore
  // replaces the state; on InvalidArgument the machine is left empty.
  CoreSnapshot Snapshot() const;
  absl::Status Restore(const CoreSnapshot& snapshot);

  // Paged views at `now` (LockTable::InspectPage and StatusPage; each
  // retires lapsed leases first, as the queries above).
  LockPage InspectPage(Tick now, absl::string_view lock,
                       const InspectCursor& from, size_t limit);
  ClientPage StatusPage(Tick now, absl::string_view client,
                        absl::string_view after, size_t limit);

  // The events of the operations and queries applied so far, oldest first
  // (LockTable::TakeEvents); the owner drains them after each step.
  std::vector<Event> TakeEvents() { return table_.TakeEvents(); }
  // Restarts `client`'s idle clock at `at` (LockTable::RestartIdleClock):
  // bookkeeping of the daemon's idle-client forgetting, not an operation
  // (the Forget it delays is one).
  void RestartIdleClock(absl::string_view client, Tick at) {
    table_.RestartIdleClock(client, at);
  }

  // Read-only: every change goes through Apply or the methods above, so
  // whatever the owner logs is the whole story.
  const LockTable& table() const { return table_; }
  const FencedStore& store() const { return store_; }

 private:
  absl::StatusOr<Reply> ApplyWrite(Tick at, const op::Write& write);
  absl::StatusOr<Reply> ApplyFencedRead(Tick at, const op::FencedRead& read);
  absl::StatusOr<Reply> ApplyDelete(Tick at, const op::Delete& del);

  LockTable table_;
  FencedStore store_;
};

}  // namespace leasekeeper

#endif  // LEASEKEEPER_CORE_STATE_MACHINE_H_
