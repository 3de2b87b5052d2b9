#include "server/retry_entry_codec.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "storage/coding.h"

namespace leasekeeper::server {
namespace {

using storage::ByteReader;
using storage::PutLengthPrefixed;
using storage::PutSignedVarint64;
using storage::PutVarint64;

constexpr uint64_t kAnyLength = std::numeric_limits<uint64_t>::max();

void PutByte(std::string& out, uint8_t b) { out.push_back(static_cast<char>(b)); }

void PutStatus(std::string& out, const absl::Status& status) {
  PutVarint64(out, static_cast<uint64_t>(status.code()));
  PutLengthPrefixed(out, status.message());
  std::vector<std::pair<std::string, std::string>> payloads;
  status.ForEachPayload([&](absl::string_view url, const absl::Cord& payload) {
    payloads.emplace_back(std::string(url), std::string(payload));
  });
  PutVarint64(out, payloads.size());
  for (const auto& [url, payload] : payloads) {
    PutLengthPrefixed(out, url);
    PutLengthPrefixed(out, payload);
  }
}

template <typename T>
void PutAnswerStatus(std::string& out, const absl::StatusOr<T>& answer) {
  PutStatus(out, answer.ok() ? absl::OkStatus() : answer.status());
}

void PutValue(std::string& out, const AcquireAnswer& a) {
  PutByte(out, static_cast<uint8_t>(a.kind));
  PutVarint64(out, a.token);
  PutSignedVarint64(out, a.ttl_ms);
  PutSignedVarint64(out, a.waited_ms);
  PutSignedVarint64(out, a.position);
  PutByte(out, static_cast<uint8_t>(a.withdraw_cause));
  PutVarint64(out, a.aborted.size());
  for (const std::string& victim : a.aborted) PutLengthPrefixed(out, victim);
}

void PutValue(std::string& out, const RenewAnswer& r) {
  PutVarint64(out, r.token);
  PutSignedVarint64(out, r.ttl_ms);
}

void PutValue(std::string& out, ReleaseAnswer outcome) {
  PutByte(out, static_cast<uint8_t>(outcome));
}

absl::Status Malformed(absl::string_view what) {
  return absl::DataLossError(
      absl::StrCat("malformed retry-cache entry: ", what));
}

class EntryReader {
 public:
  explicit EntryReader(absl::string_view bytes) : in_(bytes) {}

  bool Byte(uint8_t& b, uint8_t max) { return in_.GetByte(b) && b <= max; }

  // OK with the status read into *status, or an error.
  bool Status(absl::Status& status) {
    uint64_t code = 0;
    std::string message;
    uint64_t payloads = 0;
    if (!in_.GetVarint64(code) || code > 16 ||
        !in_.GetString(message, kAnyLength) || !in_.GetVarint64(payloads) ||
        payloads > in_.remaining()) {
      return false;
    }
    status = absl::Status(static_cast<absl::StatusCode>(code), message);
    for (uint64_t i = 0; i < payloads; ++i) {
      std::string url;
      std::string payload;
      if (!in_.GetString(url, kAnyLength) ||
          !in_.GetString(payload, kAnyLength)) {
        return false;
      }
      // An OK status carries no payloads.
      if (status.ok()) return false;
      status.SetPayload(url, absl::Cord(std::move(payload)));
    }
    return true;
  }

  bool Value(AcquireAnswer& a) {
    uint8_t kind = 0;
    uint8_t cause = 0;
    uint64_t aborted = 0;
    if (!Byte(kind, 2) || !in_.GetVarint64(a.token) ||
        !in_.GetSignedVarint64(a.ttl_ms) ||
        !in_.GetSignedVarint64(a.waited_ms) ||
        !in_.GetSignedVarint64(a.position) || !Byte(cause, 1) ||
        !in_.GetVarint64(aborted) || aborted > in_.remaining()) {
      return false;
    }
    a.kind = static_cast<AcquireAnswer::Kind>(kind);
    a.withdraw_cause = static_cast<WithdrawCause>(cause);
    a.aborted.resize(aborted);
    for (std::string& victim : a.aborted) {
      if (!in_.GetString(victim, kAnyLength)) return false;
    }
    return true;
  }

  bool Value(RenewAnswer& r) {
    return in_.GetVarint64(r.token) && in_.GetSignedVarint64(r.ttl_ms);
  }

  bool Value(ReleaseAnswer& outcome) {
    uint8_t b = 0;
    if (!Byte(b, 1)) return false;
    outcome = static_cast<ReleaseAnswer>(b);
    return true;
  }

  // The answer of type absl::StatusOr<T>.
  template <typename T>
  std::optional<CachedAnswer> Answer() {
    absl::Status status;
    if (!Status(status)) return std::nullopt;
    if (!status.ok()) return CachedAnswer(absl::StatusOr<T>(std::move(status)));
    T value{};
    if (!Value(value)) return std::nullopt;
    return CachedAnswer(absl::StatusOr<T>(std::move(value)));
  }

  ByteReader& in() { return in_; }

 private:
  ByteReader in_;
};

}  // namespace

std::string EncodeRetryEntry(const Fingerprint& fingerprint,
                             const CachedAnswer& answer) {
  std::string out;
  PutByte(out, kRetryEntryCodecVersion);
  PutByte(out, static_cast<uint8_t>(fingerprint.method));
  PutLengthPrefixed(out, fingerprint.lock);
  PutSignedVarint64(out, fingerprint.ttl_ms);
  // Mode 0 exclusive, 1 shared, 2 semaphore; only a semaphore's capacity
  // follows, so entries written before semaphores read unchanged.
  switch (fingerprint.mode) {
    case LockMode::kExclusive:
      PutByte(out, 0);
      break;
    case LockMode::kShared:
      PutByte(out, 1);
      break;
    case LockMode::kSemaphore:
      PutByte(out, 2);
      PutVarint64(out, fingerprint.capacity);
      break;
  }
  PutByte(out, static_cast<uint8_t>(answer.index()));
  std::visit(
      [&](const auto& result) {
        PutAnswerStatus(out, result);
        if (result.ok()) PutValue(out, *result);
      },
      answer);
  return out;
}

absl::StatusOr<DecodedRetryEntry> DecodeRetryEntry(absl::string_view bytes) {
  EntryReader reader(bytes);
  ByteReader& in = reader.in();
  uint8_t version = 0;
  if (!in.GetByte(version)) return Malformed("empty");
  if (version != kRetryEntryCodecVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        "retry-cache entry has codec version ", version,
        "; this build reads version ", kRetryEntryCodecVersion));
  }
  DecodedRetryEntry entry;
  uint8_t method = 0;
  uint8_t mode = 0;
  uint8_t kind = 0;
  if (!reader.Byte(method, 2) ||
      !in.GetString(entry.fingerprint.lock, kAnyLength) ||
      !in.GetSignedVarint64(entry.fingerprint.ttl_ms) || !reader.Byte(mode, 2)) {
    return Malformed("fingerprint");
  }
  uint64_t capacity = 0;
  if (mode == 2 && (!in.GetVarint64(capacity) ||
                    capacity > std::numeric_limits<uint32_t>::max())) {
    return Malformed("fingerprint");
  }
  if (!reader.Byte(kind, 2)) return Malformed("fingerprint");
  entry.fingerprint.method = static_cast<Fingerprint::Method>(method);
  entry.fingerprint.mode = mode == 2   ? LockMode::kSemaphore
                           : mode == 1 ? LockMode::kShared
                                       : LockMode::kExclusive;
  entry.fingerprint.capacity = static_cast<uint32_t>(capacity);
  std::optional<CachedAnswer> answer;
  switch (kind) {
    case 0:
      answer = reader.Answer<AcquireAnswer>();
      break;
    case 1:
      answer = reader.Answer<RenewAnswer>();
      break;
    default:
      answer = reader.Answer<ReleaseAnswer>();
      break;
  }
  if (!answer.has_value()) return Malformed("answer");
  if (!in.empty()) return Malformed("trailing bytes");
  entry.answer = *std::move(answer);
  return entry;
}

}  // namespace leasekeeper::server
