#include "server/storage_lifecycle.h"

#include <utility>

namespace leasekeeper::server {

absl::StatusOr<storage::RecoveryReport> StorageLifecycle::Open(
    std::unique_ptr<storage::OperationLog> log) {
  if (log == nullptr) return machine_.Open(durability_, &recovered_server_);
  if (absl::Status used = machine_.UseLog(std::move(log)); !used.ok()) {
    return used;
  }
  return storage::RecoveryReport{};
}

std::vector<op::Withdraw> StorageLifecycle::RecoveredWaitWithdrawals() const {
  std::vector<op::Withdraw> withdrawals;
  if (machine_.table().waiter_count() == 0) return withdrawals;
  const CoreSnapshot snapshot = machine_.Snapshot();
  for (const CoreSnapshot::Lock& lock : snapshot.locks) {
    for (auto it = lock.queue.rbegin(); it != lock.queue.rend(); ++it) {
      withdrawals.push_back(op::Withdraw{it->client, lock.name});
    }
  }
  return withdrawals;
}

storage::ServerState StorageLifecycle::TakeRecoveredServerState() {
  storage::ServerState recovered = std::move(recovered_server_);
  recovered_server_ = storage::ServerState{};
  return recovered;
}

}  // namespace leasekeeper::server
