// OperationLog: the narrow interface of the ordered log that makes
// leasekeeperd's state durable: append, learn when a prefix is durable, read
// from a position, snapshot (after which the covered records may go). The
// owner of the core sends everything it changes through it as plain data,
// in apply order: Operations, the restart grace, ServerRecords. Nothing
// above it knows which implementation runs: DurableStore (durable_store.h,
// the local write-ahead log) or EtcdLog (cluster/etcd_log.h, replicated
// through etcd). docs/design/durable-path.md explains the design.
//
// Thread-safety: every method is thread-safe; callbacks never run under a
// lock of the log (each implementation says on which thread).
//
// Invariants (every implementation):
//  1. Positions are 1, 2, 3, ... in Append order, with no gaps.
//  2. durable_position() never falls, and <= last_position().
//  3. OnDurable(p) reports OK only once p <= durable_position(): record p
//     and every record before it survive a crash.
//  4. Once health() is not OK it stays so; no callback of a record that was
//     not durable before the failure reports OK.
#ifndef LEASEKEEPER_STORAGE_OPERATION_LOG_H_
#define LEASEKEEPER_STORAGE_OPERATION_LOG_H_

#include <functional>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/snapshot.h"
#include "core/state_machine.h"
#include "storage/log.h"
#include "storage/operation_codec.h"
#include "storage/server_records.h"

namespace leasekeeper::storage {

class OperationLog {
 public:
  // Runs once the record is durable (OK) or can never be (Unavailable, or
  // FailedPrecondition if the log closed first).
  using DurableCallback = absl::AnyInvocable<void(absl::Status) &&>;
  // Called for each entry read back; a non-OK return stops the read.
  using EntryVisitor =
      std::function<absl::Status(LogPosition position, const LogEntry& entry)>;

  virtual ~OperationLog() = default;

  // Appends one entry and returns its position.
  // Outcomes: the position; Unavailable (with the reason) once the log
  // failed; FailedPrecondition after Close(); InvalidArgument if the entry
  // is too large for the log. Cost: O(size of the entry); never waits for
  // durability.
  virtual absl::StatusOr<LogPosition> Append(const Operation& operation) = 0;
  virtual absl::StatusOr<LogPosition> Append(const ServerRecord& record) = 0;

  // Calls `done` once record `position` is durable (OK), or with the
  // failure if it never will be. Also when it is durable already.
  // REQUIRES: position <= last_position().
  virtual void OnDurable(LogPosition position, DurableCallback done) = 0;

  // Blocks until record `position` is durable: OK, or the failure. Not for
  // gRPC threads; for tools, tests, recovery and shutdown.
  virtual absl::Status WaitDurable(LogPosition position) = 0;

  virtual LogPosition last_position() const = 0;     // last appended
  virtual LogPosition durable_position() const = 0;  // invariant 2

  // OK, or why the log failed (invariant 4).
  virtual absl::Status health() const = 0;

  // OK when a new mutation may be applied and appended; otherwise why not:
  // health()'s failure, or a condition that passes by itself (a full disk
  // under DurableStore). Entries appended while it passes are kept and
  // written, in order, once it has passed.
  virtual absl::Status AdmitsMutations() const { return health(); }

  // Calls visit for every entry at position >= from that the log has
  // written so far (at least every durable one), in order. Outcomes: OK;
  // OutOfRange if `from` was truncated away; DataLoss if an entry does not
  // check out or decode; or the first non-OK of visit. REQUIRES: from >= 1.
  virtual absl::Status ReadFrom(LogPosition from,
                                const EntryVisitor& visit) const = 0;

  // True when the owner should take a snapshot (enough records since the
  // last one, or an entry that is costly to replay).
  virtual bool SnapshotDue() const = 0;

  // Hands over the state after records 1..covered (taken under the
  // owner's lock). Once it is stored, records up to `covered` may be
  // truncated. Returns false (and drops it) if a snapshot is being taken or
  // `covered` is not after the last snapshot and at most last_position().
  virtual bool SubmitSnapshot(CoreSnapshot core, LogPosition covered,
                              ServerState server) = 0;

  // Makes everything appended durable (callbacks run), stops the log's
  // threads; later Appends fail. Returns health(). Idempotent.
  virtual absl::Status Close() = 0;
};

}  // namespace leasekeeper::storage

#endif  // LEASEKEEPER_STORAGE_OPERATION_LOG_H_
