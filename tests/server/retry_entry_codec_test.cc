// The bytes a retry-cache entry is logged as: every answer kind, errors
// with their reason, and malformed input.
#include "server/retry_entry_codec.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/server_errors.h"

namespace leasekeeper::server {
namespace {

Fingerprint AcquireFingerprint() {
  return Fingerprint{.method = Fingerprint::Method::kAcquire,
                     .lock = "exports/daily",
                     .ttl_ms = 30'000,
                     .mode = LockMode::kShared};
}

std::vector<std::pair<Fingerprint, CachedAnswer>> OneOfEachAnswer() {
  AcquireAnswer granted;
  granted.kind = AcquireAnswer::Kind::kGranted;
  granted.token = ~FencingToken{0};
  granted.ttl_ms = 29'000;
  granted.waited_ms = 12;
  granted.aborted = {"victim-1", "victim-2"};
  AcquireAnswer withdrawn;
  withdrawn.kind = AcquireAnswer::Kind::kWithdrawn;
  withdrawn.withdraw_cause = WithdrawCause::kSessionEnded;
  AcquireAnswer queued;
  queued.kind = AcquireAnswer::Kind::kQueued;
  queued.position = 3;
  const Fingerprint renew{.method = Fingerprint::Method::kRenew,
                          .lock = "L",
                          .ttl_ms = -1};
  const Fingerprint release{.method = Fingerprint::Method::kRelease,
                            .lock = ""};
  const Fingerprint permit{.method = Fingerprint::Method::kAcquire,
                           .lock = "pool",
                           .ttl_ms = 1'000,
                           .mode = LockMode::kSemaphore,
                           .capacity = 65'535};
  return {
      {permit, absl::StatusOr<AcquireAnswer>(granted)},
      {permit,
       absl::StatusOr<AcquireAnswer>(MakeError(ErrorCode::kCapacityMismatch))},
      {AcquireFingerprint(), absl::StatusOr<AcquireAnswer>(granted)},
      {AcquireFingerprint(), absl::StatusOr<AcquireAnswer>(withdrawn)},
      {AcquireFingerprint(), absl::StatusOr<AcquireAnswer>(queued)},
      {AcquireFingerprint(),
       absl::StatusOr<AcquireAnswer>(DeadlockVictim({"a", "b"}))},
      {renew,
       absl::StatusOr<RenewAnswer>(RenewAnswer{.token = 7, .ttl_ms = 100})},
      {renew, absl::StatusOr<RenewAnswer>(MakeError(ErrorCode::kNotHolder))},
      {release, absl::StatusOr<ReleaseAnswer>(ReleaseAnswer::kWithdrawn)},
      {release,
       absl::StatusOr<ReleaseAnswer>(LimitExceeded("max-locks-per-client", 5))},
  };
}

template <typename T>
void ExpectSameAnswer(const absl::StatusOr<T>& a, const absl::StatusOr<T>& b);

void ExpectSameValue(const AcquireAnswer& a, const AcquireAnswer& b) {
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.token, b.token);
  EXPECT_EQ(a.ttl_ms, b.ttl_ms);
  EXPECT_EQ(a.waited_ms, b.waited_ms);
  EXPECT_EQ(a.position, b.position);
  EXPECT_EQ(a.withdraw_cause, b.withdraw_cause);
  EXPECT_EQ(a.aborted, b.aborted);
}
void ExpectSameValue(const RenewAnswer& a, const RenewAnswer& b) {
  EXPECT_EQ(a.token, b.token);
  EXPECT_EQ(a.ttl_ms, b.ttl_ms);
}
void ExpectSameValue(ReleaseAnswer a, ReleaseAnswer b) { EXPECT_EQ(a, b); }

template <typename T>
void ExpectSameAnswer(const absl::StatusOr<T>& a, const absl::StatusOr<T>& b) {
  // absl::Status equality covers code, message and payloads.
  EXPECT_EQ(a.status(), b.status());
  if (a.ok() && b.ok()) ExpectSameValue(*a, *b);
}

TEST(RetryEntryCodec, EveryAnswerKindRoundTripsWithItsFingerprint) {
  for (const auto& [fingerprint, answer] : OneOfEachAnswer()) {
    const std::string bytes = EncodeRetryEntry(fingerprint, answer);
    absl::StatusOr<DecodedRetryEntry> decoded = DecodeRetryEntry(bytes);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_TRUE(decoded->fingerprint == fingerprint);
    ASSERT_EQ(decoded->answer.index(), answer.index());
    std::visit(
        [&](const auto& original) {
          using T = std::decay_t<decltype(original)>;
          ExpectSameAnswer(std::get<T>(decoded->answer), original);
        },
        answer);
  }
}

// The client reads the reason (and the victims) from the ErrorDetail
// payload: a replayed error must carry it.
// Entries logged before semaphores (mode byte 0 or 1, no capacity) read
// unchanged: the capacity follows only a semaphore's mode byte.
TEST(RetryEntryCodec, APlainModeEntryHasNoCapacityBytes) {
  AcquireAnswer queued;
  queued.kind = AcquireAnswer::Kind::kQueued;
  Fingerprint semaphore = AcquireFingerprint();
  semaphore.mode = LockMode::kSemaphore;
  semaphore.capacity = 300;  // two varint bytes
  EXPECT_EQ(EncodeRetryEntry(semaphore, absl::StatusOr<AcquireAnswer>(queued)).size(),
            EncodeRetryEntry(AcquireFingerprint(),
                             absl::StatusOr<AcquireAnswer>(queued))
                    .size() +
                2);
}

TEST(RetryEntryCodec, AnErrorAnswerKeepsItsReasonAndDetails) {
  const CachedAnswer answer =
      absl::StatusOr<AcquireAnswer>(DeadlockVictim({"a", "b"}));
  absl::StatusOr<DecodedRetryEntry> decoded =
      DecodeRetryEntry(EncodeRetryEntry(AcquireFingerprint(), answer));
  ASSERT_TRUE(decoded.ok());
  const ErrorInfo info = ErrorInfoOf(
      std::get<absl::StatusOr<AcquireAnswer>>(decoded->answer).status());
  EXPECT_EQ(info.reason, v1::DEADLOCK_VICTIM);
  EXPECT_EQ(info.victims, (std::vector<std::string>{"a", "b"}));
}

TEST(RetryEntryCodec, EveryProperPrefixAndExtensionIsAnError) {
  for (const auto& [fingerprint, answer] : OneOfEachAnswer()) {
    const std::string bytes = EncodeRetryEntry(fingerprint, answer);
    for (size_t n = 0; n < bytes.size(); ++n) {
      EXPECT_FALSE(DecodeRetryEntry(bytes.substr(0, n)).ok()) << "prefix " << n;
    }
    EXPECT_EQ(DecodeRetryEntry(bytes + "x").status().code(),
              absl::StatusCode::kDataLoss);
  }
}

TEST(RetryEntryCodec, UnknownVersionIsAClearError) {
  std::string bytes = EncodeRetryEntry(
      AcquireFingerprint(),
      absl::StatusOr<AcquireAnswer>(MakeError(ErrorCode::kClientBusy)));
  bytes[0] = 9;
  absl::StatusOr<DecodedRetryEntry> decoded = DecodeRetryEntry(bytes);
  EXPECT_EQ(decoded.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(decoded.status().message().find("version 9"), std::string::npos);
}

TEST(RetryEntryCodec, BitFlipsNeverCrash) {
  for (const auto& [fingerprint, answer] : OneOfEachAnswer()) {
    const std::string bytes = EncodeRetryEntry(fingerprint, answer);
    for (size_t bit = 0; bit < bytes.size() * 8; ++bit) {
      std::string flipped = bytes;
      flipped[bit / 8] ^= static_cast<char>(1 << (bit % 8));
      DecodeRetryEntry(flipped).status().IgnoreError();
    }
  }
}

}  // namespace
}  // namespace leasekeeper::server
