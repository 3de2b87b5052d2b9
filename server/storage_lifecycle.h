// StorageLifecycle: the owner's storage from opening to settling: opens the
// operation log (a data dir's WAL, the log config.open_log opens, or one
// given) and recovers the core into the DurableStateMachine, keeps the
// recovered server state until the owner puts it back, and names the
// recovered waits that settling withdraws. Owned by CoreOwner beside its
// DurableStateMachine; after settling, the log's durable half is
// DurableStateMachine::Durability.
// Thread-safety: none; the owner calls it under its mutex.
#ifndef LEASEKEEPER_SERVER_STORAGE_LIFECYCLE_H_
#define LEASEKEEPER_SERVER_STORAGE_LIFECYCLE_H_

#include <memory>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/state_machine.h"
#include "server/durable_state_machine.h"
#include "server/server_config.h"
#include "storage/durable_store.h"
#include "storage/operation_log.h"
#include "storage/server_records.h"

namespace leasekeeper::server {

class StorageLifecycle {
 public:
  StorageLifecycle(DurabilityConfig durability, DurableStateMachine& machine)
      : durability_(std::move(durability)), machine_(machine) {}
  StorageLifecycle(const StorageLifecycle&) = delete;
  StorageLifecycle& operator=(const StorageLifecycle&) = delete;

  // Without `log`: opens durability.data_dir and recovers the core from it
  // (storage::DurableStore::Open), or, when durability.open_log is set, the
  // log that opens (cluster mode); without either, nothing is opened. With
  // `log`: uses it instead (tests' fake logs; the state starts fresh).
  // REQUIRES: called once, before the machine applies anything.
  // Outcomes: the recovery report (a fresh one with `log` or without a
  // data dir); the store's error (a locked data dir, corruption before the
  // tail of the log, a version mismatch, I/O); FailedPrecondition if a log
  // is in use already or `log` holds records.
  absl::StatusOr<storage::RecoveryReport> Open(
      std::unique_ptr<storage::OperationLog> log);

  // The withdrawals that settle the recovered core: one per wait recovered
  // from the log (its call died with the previous process), lock by lock,
  // last in line first, so that no withdrawal grants anything. Empty when
  // nothing waits. Cost: O(size of the core) when something waits.
  std::vector<op::Withdraw> RecoveredWaitWithdrawals() const;

  // The server state Open recovered (sessions, retry-cache entries),
  // handed over once: empty afterwards, and empty without a log.
  storage::ServerState TakeRecoveredServerState();

 private:
  const DurabilityConfig durability_;
  DurableStateMachine& machine_;
  storage::ServerState recovered_server_;
};

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_STORAGE_LIFECYCLE_H_
