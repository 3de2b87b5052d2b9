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
  kDelete = 36,
  kRestartGrace = 64,
  kSessionOpened = 65,
  kSessionEnded = 66,
  kRetryAnswered = 67,
  kRetryForgotten = 68,
  kLabelSet = 69,      // version 4 on
  kLabelCleared = 70,  // version 4 on
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
          [&](const op::Delete& d) {
            PutHeader(out, kDelete, operation.at);
            PutLengthPrefixed(out, d.lock);
            PutLengthPrefixed(out, d.key);
            PutVarint64(out, d.token);
            PutLengthPrefixed(out, d.client);
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
          [&](const srec::LabelSet& r) {
            PutHeader(out, kLabelSet, record.at);
            PutLengthPrefixed(out, r.client);
            PutLengthPrefixed(out, r.lock);
            PutLengthPrefixed(out, r.label);
          },
          [&](const srec::LabelCleared& r) {
            PutHeader(out, kLabelCleared, record.at);
            PutLengthPrefixed(out, r.client);
            PutLengthPrefixed(out, r.lock);
          },
      },
      record.body);
}

namespace {

// Kinds 65..68 (version 2 on) and 69..70 (version 4 on); `in` is past the
// header.
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
    case kLabelSet: {
      srec::LabelSet r;
      ok = in.GetString(r.client, kAnyLength) &&
           in.GetString(r.lock, kAnyLength) &&
           in.GetString(r.label, kAnyLength);
      record.body = std::move(r);
      break;
    }
    case kLabelCleared: {
      srec::LabelCleared r;
      ok = in.GetString(r.client, kAnyLength) &&
           in.GetString(r.lock, kAnyLength);
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

// An entry's version, kind and tick, read and checked against each other.
struct EntryHeader {
  uint8_t version = 0;
  uint8_t kind = 0;
  Tick at = 0;
};

absl::Status DecodeEntryHeader(ByteReader& in, EntryHeader& header) {
  const uint8_t& version = header.version;
  const uint8_t& kind = header.kind;
  if (!in.GetByte(header.version)) return Malformed("empty");
  if (version < kOldestOperationCodecVersion ||
      version > kOperationCodecVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        "log entry has codec version ", version, "; this build reads versions ",
        kOldestOperationCodecVersion, " to ", kOperationCodecVersion));
  }
  if (!in.GetByte(header.kind)) return Malformed("no kind");
  if (version == 1 &&
      (kind == kCheckedWrite || kind == kFencedRead || kind == kForget)) {
    return Malformed(absl::StrCat("kind ", kind, " in a version 1 entry"));
  }
  if ((version < 3 && kind == kAcquireWithCapacity) ||
      (version < 4 && (kind == kDelete || kind == kLabelSet ||
                       kind == kLabelCleared))) {
    return Malformed(absl::StrCat("kind ", kind, " in a version ", version,
                                  " entry"));
  }
  if (!in.GetSignedVarint64(header.at)) return Malformed("bad tick");
  if (header.at < kMinTick || header.at > kMaxTick) {
    return Malformed("tick out of range");
  }
  return absl::OkStatus();
}

absl::StatusOr<LogEntry> DecodeRestartGrace(Tick at, ByteReader& in) {
  RestartGrace grace;
  grace.at = at;
  if (!in.GetSignedVarint64(grace.grace_ticks) || grace.grace_ticks < 0) {
    return Malformed("bad restart grace");
  }
  if (!in.empty()) return Malformed("trailing bytes");
  return LogEntry(grace);
}

// One operation kind's fields, after the header: false if they are
// truncated or invalid. `operation.at` is set already.
using BodyDecoder = bool (*)(ByteReader& in, Operation& operation);

bool DecodeAcquire(ByteReader& in, Operation& operation) {
  op::Acquire a;
  uint8_t mode = 0;
  const bool ok = in.GetString(a.client, kAnyLength) &&
                  in.GetString(a.lock, kAnyLength) &&
                  in.GetSignedVarint64(a.ttl) && in.GetByte(mode);
  a.mode = mode == 1 ? LockMode::kShared : LockMode::kExclusive;
  operation.body = std::move(a);
  return ok && mode <= 1;
}

bool DecodeAcquireWithCapacity(ByteReader& in, Operation& operation) {
  op::Acquire a;
  uint8_t mode = 0;
  uint64_t capacity = 0;
  bool ok = in.GetString(a.client, kAnyLength) &&
            in.GetString(a.lock, kAnyLength) && in.GetSignedVarint64(a.ttl) &&
            in.GetByte(mode) && mode <= 2 && in.GetVarint64(capacity) &&
            capacity <= std::numeric_limits<uint32_t>::max();
  a.mode = ModeOfByte(mode).value_or(LockMode::kExclusive);
  a.capacity = static_cast<uint32_t>(capacity);
  // Kind 1 is the only spelling of a contract acquire.
  if (ok && IsContractAcquire(a)) ok = false;
  operation.body = std::move(a);
  return ok;
}

bool DecodeRenew(ByteReader& in, Operation& operation) {
  op::Renew r;
  const bool ok = in.GetString(r.client, kAnyLength) &&
                  in.GetString(r.lock, kAnyLength) &&
                  in.GetSignedVarint64(r.ttl);
  operation.body = std::move(r);
  return ok;
}

// Release and Withdraw: a client and a lock.
template <typename ClientAndLock>
bool DecodeClientAndLock(ByteReader& in, Operation& operation) {
  ClientAndLock r;
  const bool ok =
      in.GetString(r.client, kAnyLength) && in.GetString(r.lock, kAnyLength);
  operation.body = std::move(r);
  return ok;
}

// ReleaseAll, RenewAll and Forget: a client.
template <typename ClientOnly>
bool DecodeClientOnly(ByteReader& in, Operation& operation) {
  ClientOnly r;
  const bool ok = in.GetString(r.client, kAnyLength);
  operation.body = std::move(r);
  return ok;
}

bool DecodeWrite(ByteReader& in, Operation& operation) {
  op::Write w;
  const bool ok =
      in.GetString(w.lock, kAnyLength) && in.GetString(w.key, kAnyLength) &&
      in.GetString(w.value, kAnyLength) && in.GetVarint64(w.token);
  operation.body = std::move(w);
  return ok;
}

bool DecodeCheckedWrite(ByteReader& in, Operation& operation) {
  op::Write w;
  uint8_t checks = 0;
  const bool ok =
      in.GetString(w.lock, kAnyLength) && in.GetString(w.key, kAnyLength) &&
      in.GetString(w.value, kAnyLength) && in.GetVarint64(w.token) &&
      in.GetByte(checks) &&
      (checks & ~(kRefuseUnissuedBit | kRequireHeldBit)) == 0 &&
      in.GetString(w.client, kAnyLength);
  w.refuse_unissued = (checks & kRefuseUnissuedBit) != 0;
  w.require_held = (checks & kRequireHeldBit) != 0;
  operation.body = std::move(w);
  return ok;
}

bool DecodeFencedRead(ByteReader& in, Operation& operation) {
  op::FencedRead r;
  const bool ok = in.GetString(r.lock, kAnyLength) &&
                  in.GetString(r.key, kAnyLength) && in.GetVarint64(r.token);
  operation.body = std::move(r);
  return ok;
}

bool DecodeDelete(ByteReader& in, Operation& operation) {
  op::Delete d;
  const bool ok = in.GetString(d.lock, kAnyLength) &&
                  in.GetString(d.key, kAnyLength) && in.GetVarint64(d.token) &&
                  in.GetString(d.client, kAnyLength);
  operation.body = std::move(d);
  return ok;
}

bool DecodeAdvance(ByteReader&, Operation& operation) {
  operation.body = op::Advance{};
  return true;
}

// The decoder of an operation kind; null for a kind that is not one.
BodyDecoder OperationDecoder(uint8_t kind) {
  switch (kind) {
    case kAcquire: return DecodeAcquire;
    case kAcquireWithCapacity: return DecodeAcquireWithCapacity;
    case kRenew: return DecodeRenew;
    case kRelease: return DecodeClientAndLock<op::Release>;
    case kWithdraw: return DecodeClientAndLock<op::Withdraw>;
    case kReleaseAll: return DecodeClientOnly<op::ReleaseAll>;
    case kRenewAll: return DecodeClientOnly<op::RenewAll>;
    case kWrite: return DecodeWrite;
    case kCheckedWrite: return DecodeCheckedWrite;
    case kFencedRead: return DecodeFencedRead;
    case kForget: return DecodeClientOnly<op::Forget>;
    case kDelete: return DecodeDelete;
    case kAdvance: return DecodeAdvance;
    default: return nullptr;
  }
}

}  // namespace

absl::StatusOr<LogEntry> DecodeLogEntry(absl::string_view bytes) {
  ByteReader in(bytes);
  EntryHeader header;
  if (absl::Status s = DecodeEntryHeader(in, header); !s.ok()) return s;
  switch (header.kind) {
    case kRestartGrace:
      return DecodeRestartGrace(header.at, in);
    case kSessionOpened:
    case kSessionEnded:
    case kRetryAnswered:
    case kRetryForgotten:
    case kLabelSet:
    case kLabelCleared:
      if (header.version < 2) {
        return Malformed(absl::StrCat("kind ", header.kind, " in a version ",
                                      header.version, " entry"));
      }
      return DecodeServerRecord(header.kind, header.at, in);
    default:
      break;
  }
  const BodyDecoder decode = OperationDecoder(header.kind);
  if (decode == nullptr) {
    return Malformed(absl::StrCat("unknown kind ", header.kind));
  }
  Operation operation;
  operation.at = header.at;
  if (!decode(in, operation)) return Malformed("truncated or invalid field");
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
          [&](const op::Delete& x) {
            const auto& y = std::get<op::Delete>(b.body);
            return x.lock == y.lock && x.key == y.key && x.token == y.token &&
                   x.client == y.client;
          },
      },
      a.body);
}

}  // namespace leasekeeper::storage
