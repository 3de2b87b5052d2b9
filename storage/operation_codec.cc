#include "storage/operation_codec.h"

#include <cstdint>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "storage/coding.h"
#include "storage/overloaded.h"

namespace leasekeeper::storage {
namespace {

enum Kind : uint8_t {
  kAcquire = 1,
  kRenew = 2,
  kRelease = 3,
  kWithdraw = 4,
  kReleaseAll = 5,
  kRenewAll = 6,
  kWrite = 7,
  kAdvance = 8,
  kCheckedWrite = 32,
  kFencedRead = 33,
  kForget = 34,
  kAcquireWithCapacity = 35,
  kRestartGrace = 64,
  kSessionOpened = 65,
  kSessionEnded = 66,
  kRetryAnswered = 67,
  kRetryForgotten = 68,
};

// The checks byte of a CheckedWrite.
constexpr uint8_t kRefuseUnissuedBit = 1;
constexpr uint8_t kRequireHeldBit = 2;

bool IsContractWrite(const op::Write& w) {
  return !w.refuse_unissued && !w.require_held && w.client.empty();
}

// No field can be longer than the entry itself; the log bounds entries.
constexpr uint64_t kAnyLength = ~uint64_t{0};

void PutHeader(std::string& out, Kind kind, Tick at) {
  out.push_back(static_cast<char>(kOperationCodecVersion));
  out.push_back(static_cast<char>(kind));
  PutSignedVarint64(out, at);
}

// The contract's acquire (kind 1) has no capacity; any other is kind 35.
bool IsContractAcquire(const op::Acquire& a) {
  return a.mode != LockMode::kSemaphore && a.capacity == 0;
}

absl::Status Malformed(absl::string_view what) {
  return absl::DataLossError(absl::StrCat("malformed log entry: ", what));
}

}  // namespace

uint8_t ModeByte(LockMode mode) {
  switch (mode) {
    case LockMode::kExclusive:
      return 0;
    case LockMode::kShared:
      return 1;
    case LockMode::kSemaphore:
      return 2;
  }
  return 0;
}

std::optional<LockMode> ModeOfByte(uint8_t byte) {
  switch (byte) {
    case 0:
      return LockMode::kExclusive;
    case 1:
      return LockMode::kShared;
    case 2:
      return LockMode::kSemaphore;
    default:
      return std::nullopt;
  }
}

void EncodeOperation(const Operation& operation, std::string& out) {
  std::visit(
      Overloaded{
          [&](const op::Acquire& a) {
            const bool contract = IsContractAcquire(a);
            PutHeader(out, contract ? kAcquire : kAcquireWithCapacity,
                      operation.at);
            PutLengthPrefixed(out, a.client);
            PutLengthPrefixed(out, a.lock);
            PutSignedVarint64(out, a.ttl);
            out.push_back(static_cast<char>(ModeByte(a.mode)));
            if (!contract) PutVarint64(out, a.capacity);
          },
          [&](const op::Renew& r) {
            PutHeader(out, kRenew, operation.at);
            PutLengthPrefixed(out, r.client);
            PutLengthPrefixed(out, r.lock);
            PutSignedVarint64(out, r.ttl);
          },
          [&](const op::Release& r) {
            PutHeader(out, kRelease, operation.at);
            PutLengthPrefixed(out, r.client);
            PutLengthPrefixed(out, r.lock);
          },
          [&](const op::Withdraw& w) {
            PutHeader(out, kWithdraw, operation.at);
            PutLengthPrefixed(out, w.client);
            PutLengthPrefixed(out, w.lock);
          },
          [&](const op::ReleaseAll& r) {
            PutHeader(out, kReleaseAll, operation.at);
            PutLengthPrefixed(out, r.client);
          },
          [&](const op::RenewAll& r) {
            PutHeader(out, kRenewAll, operation.at);
            PutLengthPrefixed(out, r.client);
          },
          [&](const op::Write& w) {
            const bool contract = IsContractWrite(w);
            PutHeader(out, contract ? kWrite : kCheckedWrite, operation.at);
            PutLengthPrefixed(out, w.lock);
            PutLengthPrefixed(out, w.key);
            PutLengthPrefixed(out, w.value);
            PutVarint64(out, w.token);
            if (contract) return;
            out.push_back(static_cast<char>(
                (w.refuse_unissued ? kRefuseUnissuedBit : 0) |
                (w.require_held ? kRequireHeldBit : 0)));
            PutLengthPrefixed(out, w.client);
          },
          [&](const op::Advance&) { PutHeader(out, kAdvance, operation.at); },
          [&](const op::FencedRead& r) {
            PutHeader(out, kFencedRead, operation.at);
            PutLengthPrefixed(out, r.lock);
            PutLengthPrefixed(out, r.key);
            PutVarint64(out, r.token);
          },
          [&](const op::Forget& f) {
            PutHeader(out, kForget, operation.at);
            PutLengthPrefixed(out, f.client);
          },
      },
      operation.body);
}

void EncodeRestartGrace(const RestartGrace& grace, std::string& out) {
  PutHeader(out, kRestartGrace, grace.at);
  PutSignedVarint64(out, grace.grace_ticks);
}

void EncodeServerRecord(const ServerRecord& record, std::string& out) {
  std::visit(
      Overloaded{
          [&](const srec::SessionOpened& r) {
            PutHeader(out, kSessionOpened, record.at);
            PutLengthPrefixed(out, r.session_id);
            PutLengthPrefixed(out, r.client);
          },
          [&](const srec::SessionEnded& r) {
            PutHeader(out, kSessionEnded, record.at);
            PutLengthPrefixed(out, r.session_id);
          },
          [&](const srec::RetryAnswered& r) {
            PutHeader(out, kRetryAnswered, record.at);
            PutLengthPrefixed(out, r.client);
            PutLengthPrefixed(out, r.request_id);
            PutLengthPrefixed(out, r.entry);
          },
          [&](const srec::RetryForgotten& r) {
            PutHeader(out, kRetryForgotten, record.at);
            PutLengthPrefixed(out, r.client);
            PutLengthPrefixed(out, r.request_id);
          },
      },
      record.body);
}

namespace {

// Kinds 65..68 (version 2 on); `in` is past the header.
absl::StatusOr<LogEntry> DecodeServerRecord(uint8_t kind, Tick at,
                                            ByteReader& in) {
  ServerRecord record;
  record.at = at;
  bool ok = false;
  switch (kind) {
    case kSessionOpened: {
      srec::SessionOpened r;
      ok = in.GetString(r.session_id, kAnyLength) &&
           in.GetString(r.client, kAnyLength);
      record.body = std::move(r);
      break;
    }
    case kSessionEnded: {
      srec::SessionEnded r;
      ok = in.GetString(r.session_id, kAnyLength);
      record.body = std::move(r);
      break;
    }
    case kRetryAnswered: {
      srec::RetryAnswered r;
      ok = in.GetString(r.client, kAnyLength) &&
           in.GetString(r.request_id, kAnyLength) &&
           in.GetString(r.entry, kAnyLength);
      record.body = std::move(r);
      break;
    }
    case kRetryForgotten: {
      srec::RetryForgotten r;
      ok = in.GetString(r.client, kAnyLength) &&
           in.GetString(r.request_id, kAnyLength);
      record.body = std::move(r);
      break;
    }
    default:
      return Malformed(absl::StrCat("unknown kind ", kind));
  }
  if (!ok) return Malformed("truncated or invalid field");
  if (!in.empty()) return Malformed("trailing bytes");
  return LogEntry(std::move(record));
}

}  // namespace

absl::StatusOr<LogEntry> DecodeLogEntry(absl::string_view bytes) {
  ByteReader in(bytes);
  uint8_t version = 0;
  uint8_t kind = 0;
  Tick at = 0;
  if (!in.GetByte(version)) return Malformed("empty");
  if (version < kOldestOperationCodecVersion ||
      version > kOperationCodecVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        "log entry has codec version ", version, "; this build reads versions ",
        kOldestOperationCodecVersion, " to ", kOperationCodecVersion));
  }
  if (!in.GetByte(kind)) return Malformed("no kind");
  if (version == 1 &&
      (kind == kCheckedWrite || kind == kFencedRead || kind == kForget)) {
    return Malformed(absl::StrCat("kind ", kind, " in a version 1 entry"));
  }
  if (version < 3 && kind == kAcquireWithCapacity) {
    return Malformed(absl::StrCat("kind ", kind, " in a version ", version,
                                  " entry"));
  }
  if (!in.GetSignedVarint64(at)) return Malformed("bad tick");
  if (at < kMinTick || at > kMaxTick) return Malformed("tick out of range");

  bool ok = true;
  auto mode_of = [&](uint8_t b) {
    if (b > 1) ok = false;
    return b == 1 ? LockMode::kShared : LockMode::kExclusive;
  };
  LogEntry entry;
  Operation operation;
  operation.at = at;
  switch (kind) {
    case kAcquire: {
      op::Acquire a;
      uint8_t mode = 0;
      ok = in.GetString(a.client, kAnyLength) &&
           in.GetString(a.lock, kAnyLength) && in.GetSignedVarint64(a.ttl) &&
           in.GetByte(mode);
      a.mode = mode_of(mode);
      operation.body = std::move(a);
      break;
    }
    case kAcquireWithCapacity: {
      op::Acquire a;
      uint8_t mode = 0;
      uint64_t capacity = 0;
      ok = in.GetString(a.client, kAnyLength) &&
           in.GetString(a.lock, kAnyLength) && in.GetSignedVarint64(a.ttl) &&
           in.GetByte(mode) && mode <= 2 && in.GetVarint64(capacity) &&
           capacity <= std::numeric_limits<uint32_t>::max();
      a.mode = ModeOfByte(mode).value_or(LockMode::kExclusive);
      a.capacity = static_cast<uint32_t>(capacity);
      // Kind 1 is the only spelling of a contract acquire.
      if (ok && IsContractAcquire(a)) ok = false;
      operation.body = std::move(a);
      break;
    }
    case kRenew: {
      op::Renew r;
      ok = in.GetString(r.client, kAnyLength) &&
           in.GetString(r.lock, kAnyLength) && in.GetSignedVarint64(r.ttl);
      operation.body = std::move(r);
      break;
    }
    case kRelease: {
      op::Release r;
      ok = in.GetString(r.client, kAnyLength) &&
           in.GetString(r.lock, kAnyLength);
      operation.body = std::move(r);
      break;
    }
    case kWithdraw: {
      op::Withdraw w;
      ok = in.GetString(w.client, kAnyLength) &&
           in.GetString(w.lock, kAnyLength);
      operation.body = std::move(w);
      break;
    }
    case kReleaseAll: {
      op::ReleaseAll r;
      ok = in.GetString(r.client, kAnyLength);
      operation.body = std::move(r);
      break;
    }
    case kRenewAll: {
      op::RenewAll r;
      ok = in.GetString(r.client, kAnyLength);
      operation.body = std::move(r);
      break;
    }
    case kWrite: {
      op::Write w;
      ok = in.GetString(w.lock, kAnyLength) && in.GetString(w.key, kAnyLength) &&
           in.GetString(w.value, kAnyLength) && in.GetVarint64(w.token);
      operation.body = std::move(w);
      break;
    }
    case kCheckedWrite: {
      op::Write w;
      uint8_t checks = 0;
      ok = in.GetString(w.lock, kAnyLength) && in.GetString(w.key, kAnyLength) &&
           in.GetString(w.value, kAnyLength) && in.GetVarint64(w.token) &&
           in.GetByte(checks) &&
           (checks & ~(kRefuseUnissuedBit | kRequireHeldBit)) == 0 &&
           in.GetString(w.client, kAnyLength);
      w.refuse_unissued = (checks & kRefuseUnissuedBit) != 0;
      w.require_held = (checks & kRequireHeldBit) != 0;
      operation.body = std::move(w);
      break;
    }
    case kFencedRead: {
      op::FencedRead r;
      ok = in.GetString(r.lock, kAnyLength) && in.GetString(r.key, kAnyLength) &&
           in.GetVarint64(r.token);
      operation.body = std::move(r);
      break;
    }
    case kForget: {
      op::Forget f;
      ok = in.GetString(f.client, kAnyLength);
      operation.body = std::move(f);
      break;
    }
    case kAdvance:
      operation.body = op::Advance{};
      break;
    case kRestartGrace: {
      RestartGrace grace;
      grace.at = at;
      ok = in.GetSignedVarint64(grace.grace_ticks) && grace.grace_ticks >= 0;
      if (!ok) return Malformed("bad restart grace");
      if (!in.empty()) return Malformed("trailing bytes");
      return LogEntry(grace);
    }
    case kSessionOpened:
    case kSessionEnded:
    case kRetryAnswered:
    case kRetryForgotten:
      if (version < 2) {
        return Malformed(absl::StrCat("kind ", kind, " in a version ",
                                      version, " entry"));
      }
      return DecodeServerRecord(kind, at, in);
    default:
      return Malformed(absl::StrCat("unknown kind ", kind));
  }
  if (!ok) return Malformed("truncated or invalid field");
  if (!in.empty()) return Malformed("trailing bytes");
  return LogEntry(std::move(operation));
}

bool SameOperation(const Operation& a, const Operation& b) {
  if (a.at != b.at || a.body.index() != b.body.index()) return false;
  return std::visit(
      Overloaded{
          [&](const op::Acquire& x) {
            const auto& y = std::get<op::Acquire>(b.body);
            return x.client == y.client && x.lock == y.lock && x.ttl == y.ttl &&
                   x.mode == y.mode && x.capacity == y.capacity;
          },
          [&](const op::Renew& x) {
            const auto& y = std::get<op::Renew>(b.body);
            return x.client == y.client && x.lock == y.lock && x.ttl == y.ttl;
          },
          [&](const op::Release& x) {
            const auto& y = std::get<op::Release>(b.body);
            return x.client == y.client && x.lock == y.lock;
          },
          [&](const op::Withdraw& x) {
            const auto& y = std::get<op::Withdraw>(b.body);
            return x.client == y.client && x.lock == y.lock;
          },
          [&](const op::ReleaseAll& x) {
            return x.client == std::get<op::ReleaseAll>(b.body).client;
          },
          [&](const op::RenewAll& x) {
            return x.client == std::get<op::RenewAll>(b.body).client;
          },
          [&](const op::Write& x) {
            const auto& y = std::get<op::Write>(b.body);
            return x.lock == y.lock && x.key == y.key && x.value == y.value &&
                   x.token == y.token &&
                   x.refuse_unissued == y.refuse_unissued &&
                   x.require_held == y.require_held && x.client == y.client;
          },
          [&](const op::Advance&) { return true; },
          [&](const op::FencedRead& x) {
            const auto& y = std::get<op::FencedRead>(b.body);
            return x.lock == y.lock && x.key == y.key && x.token == y.token;
          },
          [&](const op::Forget& x) {
            return x.client == std::get<op::Forget>(b.body).client;
          },
      },
      a.body);
}

}  // namespace leasekeeper::storage
