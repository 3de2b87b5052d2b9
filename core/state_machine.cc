#include "core/state_machine.h"

#include "core/errors.h"

namespace leasekeeper {
namespace {

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

// Wraps a typed result into a Reply, keeping its error.
template <typename T>
absl::StatusOr<Reply> ToReply(absl::StatusOr<T> result) {
  if (!result.ok()) return result.status();
  return Reply(*std::move(result));
}

}  // namespace

absl::StatusOr<Reply> StateMachine::Apply(const Operation& op) {
  const Tick at = op.at;
  return std::visit(
      Overloaded{
          [&](const op::Acquire& a) {
            return ToReply(table_.Acquire(at, a.client, a.lock, a.ttl, a.mode));
          },
          [&](const op::Renew& r) {
            return ToReply(table_.Renew(at, r.client, r.lock, r.ttl));
          },
          [&](const op::Release& r) {
            return ToReply(table_.Release(at, r.client, r.lock));
          },
          [&](const op::Withdraw& w) -> absl::StatusOr<Reply> {
            return Reply(table_.Withdraw(at, w.client, w.lock));
          },
          [&](const op::ReleaseAll& r) -> absl::StatusOr<Reply> {
            return Reply(table_.ReleaseAll(at, r.client));
          },
          [&](const op::RenewAll& r) -> absl::StatusOr<Reply> {
            return Reply(table_.RenewAll(at, r.client));
          },
          [&](const op::Write& w) -> absl::StatusOr<Reply> {
            table_.AdvanceTo(at);
            absl::Status status = store_.Write(w.lock, w.key, w.value, w.token);
            if (!status.ok()) return status;
            return Reply(std::monostate{});
          },
          [&](const op::Advance&) -> absl::StatusOr<Reply> {
            table_.AdvanceTo(at);
            return Reply(std::monostate{});
          },
      },
      op.body);
}

CoreSnapshot StateMachine::Snapshot() const {
  CoreSnapshot snapshot;
  table_.ExportTo(snapshot);
  store_.ExportTo(snapshot);
  return snapshot;
}

absl::Status StateMachine::Restore(const CoreSnapshot& snapshot) {
  store_.ImportFrom(snapshot);
  return table_.ImportFrom(snapshot);
}

absl::StatusOr<std::optional<std::string>> StateMachine::Read(
    Tick now, absl::string_view lock, absl::string_view key) {
  table_.AdvanceTo(now);
  if (lock.empty() || key.empty()) {
    return MakeError(ErrorCode::kInvalidArguments);
  }
  return store_.Read(lock, key);
}

absl::StatusOr<LockView> StateMachine::Inspect(Tick now,
                                               absl::string_view lock) {
  table_.AdvanceTo(now);
  if (lock.empty()) return MakeError(ErrorCode::kInvalidArguments);
  return table_.Inspect(now, lock);
}

absl::StatusOr<ClientView> StateMachine::Status(Tick now,
                                                absl::string_view client) {
  table_.AdvanceTo(now);
  if (client.empty()) return MakeError(ErrorCode::kInvalidArguments);
  return table_.Status(now, client);
}

}  // namespace leasekeeper
