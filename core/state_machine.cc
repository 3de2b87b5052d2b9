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
            return ToReply(table_.Acquire(at, a.client, a.lock, a.ttl, a.mode,
                                          a.capacity));
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
          [&](const op::Write& w) { return ApplyWrite(at, w); },
          [&](const op::Advance&) -> absl::StatusOr<Reply> {
            table_.AdvanceTo(at);
            return Reply(std::monostate{});
          },
          [&](const op::FencedRead& r) { return ApplyFencedRead(at, r); },
          [&](const op::Forget& f) -> absl::StatusOr<Reply> {
            return Reply(table_.Forget(at, f.client));
          },
          [&](const op::Delete& d) { return ApplyDelete(at, d); },
      },
      op.body);
}

absl::StatusOr<Reply> StateMachine::ApplyWrite(Tick at, const op::Write& w) {
  table_.AdvanceTo(at);
  if (absl::Status s =
          FencedStore::CheckWriteArguments(w.lock, w.key, w.value, w.token);
      !s.ok()) {
    return s;
  }
  if (w.require_held && w.client.empty()) {
    return MakeError(ErrorCode::kInvalidArguments);
  }
  if (w.refuse_unissued && w.token > table_.LastToken(w.lock)) {
    return MakeError(ErrorCode::kTokenNotIssued);
  }
  if (w.require_held && !table_.HoldsWithToken(w.client, w.lock, w.token)) {
    return MakeError(ErrorCode::kNotHolder);
  }
  absl::Status status = store_.Write(w.lock, w.key, w.value, w.token);
  if (!status.ok()) return status;
  return Reply(std::monostate{});
}

absl::StatusOr<Reply> StateMachine::ApplyFencedRead(Tick at,
                                                    const op::FencedRead& r) {
  table_.AdvanceTo(at);
  if (r.lock.empty() || r.key.empty() || r.token < 1) {
    return MakeError(ErrorCode::kInvalidArguments);
  }
  if (r.token > table_.LastToken(r.lock)) {
    return MakeError(ErrorCode::kTokenNotIssued);
  }
  if (absl::Status s = store_.Fence(r.lock, r.token); !s.ok()) return s;
  return Reply(ReadOutcome{store_.Read(r.lock, r.key)});
}

absl::StatusOr<Reply> StateMachine::ApplyDelete(Tick at, const op::Delete& d) {
  table_.AdvanceTo(at);
  if (d.lock.empty() || d.key.empty() || d.client.empty() || d.token < 1) {
    return MakeError(ErrorCode::kInvalidArguments);
  }
  if (d.token > table_.LastToken(d.lock)) {
    return MakeError(ErrorCode::kTokenNotIssued);
  }
  if (!table_.HoldsWithToken(d.client, d.lock, d.token)) {
    return MakeError(ErrorCode::kNotHolder);
  }
  return ToReply(store_.Delete(d.lock, d.key, d.token));
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

absl::StatusOr<KeyPage> StateMachine::Keys(Tick now, absl::string_view lock,
                                            absl::string_view after,
                                            size_t limit) {
  table_.AdvanceTo(now);
  if (lock.empty()) return MakeError(ErrorCode::kInvalidArguments);
  return store_.Keys(lock, after, limit);
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

LockPage StateMachine::InspectPage(Tick now, absl::string_view lock,
                                   const InspectCursor& from, size_t limit) {
  return table_.InspectPage(now, lock, from, limit);
}

ClientPage StateMachine::StatusPage(Tick now, absl::string_view client,
                                    absl::string_view after, size_t limit) {
  return table_.StatusPage(now, client, after, limit);
}

}  // namespace leasekeeper
