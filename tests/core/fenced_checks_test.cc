// The daemon's checks on the fenced store (op::Write's daemon-only fields and
// op::FencedRead), and that the contract's write (rule 6) is unchanged when
// they are off, as leasekeeper-replay sends it.
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/errors.h"
#include "core/state_machine.h"
#include "gtest/gtest.h"

namespace leasekeeper {
namespace {

constexpr FencingToken kMaxToken = ~FencingToken{0};

// The daemon's write: every check on.
op::Write HeldWrite(std::string client, std::string lock, std::string key,
                    std::string value, FencingToken token) {
  return op::Write{.lock = std::move(lock),
                   .key = std::move(key),
                   .value = std::move(value),
                   .token = token,
                   .refuse_unissued = true,
                   .require_held = true,
                   .client = std::move(client)};
}

// The daemon's write without the holder check (require_held = false).
op::Write UnheldWrite(std::string lock, std::string key, std::string value,
                      FencingToken token) {
  return op::Write{.lock = std::move(lock),
                   .key = std::move(key),
                   .value = std::move(value),
                   .token = token,
                   .refuse_unissued = true};
}

std::optional<ErrorCode> CodeOf(const absl::StatusOr<Reply>& reply) {
  return ErrorCodeOf(reply.status());
}

std::optional<std::string> ValueOf(StateMachine& sm, Tick now,
                                   absl::string_view lock,
                                   absl::string_view key) {
  absl::StatusOr<std::optional<std::string>> value = sm.Read(now, lock, key);
  EXPECT_TRUE(value.ok()) << value.status();
  return value.ok() ? *value : std::nullopt;
}

// Takes `lock` for `client` at `now` and returns the granted token.
FencingToken Grant(StateMachine& sm, Tick now, const std::string& client,
                   const std::string& lock, int64_t ttl) {
  absl::StatusOr<Reply> r = sm.Apply({now, op::Acquire{client, lock, ttl}});
  EXPECT_TRUE(r.ok()) << r.status();
  const auto& outcome = std::get<AcquireOutcome>(*r);
  EXPECT_EQ(outcome.kind, AcquireOutcome::Kind::kGranted);
  return outcome.token;
}

TEST(ContractWrite, NeverIssuedTokenIsAcceptedAsRuleSixSays) {
  // Rule 6: the store never looks at leases and the lock need not exist.
  StateMachine sm;
  EXPECT_TRUE(sm.Apply({0, op::Write{"nowhere", "k", "v", kMaxToken}}).ok());
  EXPECT_EQ(sm.store().HighWater("nowhere"), kMaxToken);
}

TEST(TokenNotIssued, MadeUpTokenCannotPoisonTheStore) {
  StateMachine sm;
  ASSERT_EQ(Grant(sm, 0, "a", "L", 100), 1u);
  EXPECT_EQ(CodeOf(sm.Apply({1, UnheldWrite("L", "k", "evil", kMaxToken)})),
            ErrorCode::kTokenNotIssued);
  EXPECT_EQ(sm.store().HighWater("L"), 0u);
  EXPECT_EQ(ValueOf(sm, 1, "L", "k"), std::nullopt);
  // The real holder still writes.
  EXPECT_TRUE(sm.Apply({2, UnheldWrite("L", "k", "real", 1)}).ok());
  EXPECT_EQ(ValueOf(sm, 2, "L", "k"), "real");
}

TEST(TokenNotIssued, TokenOneAboveTheCounterIsRefusedAndTheCounterItselfIsNot) {
  StateMachine sm;
  ASSERT_EQ(Grant(sm, 0, "a", "L", 10), 1u);
  ASSERT_TRUE(sm.Apply({1, op::Release{"a", "L"}}).ok());
  EXPECT_EQ(CodeOf(sm.Apply({2, UnheldWrite("L", "k", "v", 2)})),
            ErrorCode::kTokenNotIssued);
  // Token 1 was issued (its lease has ended: without the holder check the
  // token rule alone decides).
  EXPECT_TRUE(sm.Apply({3, UnheldWrite("L", "k", "v", 1)}).ok());
}

TEST(TokenNotIssued, LockNeverGrantedHasNoIssuedToken) {
  StateMachine sm;
  EXPECT_EQ(CodeOf(sm.Apply({0, UnheldWrite("L", "k", "v", 1)})),
            ErrorCode::kTokenNotIssued);
  EXPECT_EQ(CodeOf(sm.Apply({0, op::FencedRead{"L", "k", 1}})),
            ErrorCode::kTokenNotIssued);
  EXPECT_EQ(sm.store().HighWater("L"), 0u);
}

TEST(TokenNotIssued, ArgumentsAreCheckedFirst) {
  StateMachine sm;
  EXPECT_EQ(CodeOf(sm.Apply({0, UnheldWrite("L", "k", "", kMaxToken)})),
            ErrorCode::kInvalidArguments);
  EXPECT_EQ(CodeOf(sm.Apply({0, HeldWrite("", "L", "k", "v", kMaxToken)})),
            ErrorCode::kInvalidArguments);
}

TEST(HeldWrite, AcceptedOnlyForTheLiveHolderWithItsExactToken) {
  StateMachine sm;
  ASSERT_EQ(Grant(sm, 0, "a", "L", 10), 1u);
  EXPECT_TRUE(sm.Apply({1, HeldWrite("a", "L", "k", "v1", 1)}).ok());
  // Someone else, with the holder's token.
  EXPECT_EQ(CodeOf(sm.Apply({2, HeldWrite("b", "L", "k", "x", 1)})),
            ErrorCode::kNotHolder);
  // The lease ends at 10 (rule 2): at 10 the holder no longer writes.
  EXPECT_TRUE(sm.Apply({9, HeldWrite("a", "L", "k", "v2", 1)}).ok());
  EXPECT_EQ(CodeOf(sm.Apply({10, HeldWrite("a", "L", "k", "v3", 1)})),
            ErrorCode::kNotHolder);
  EXPECT_EQ(ValueOf(sm, 10, "L", "k"), "v2");
  // A new lease of the same client has a new token; the old one is refused.
  ASSERT_EQ(Grant(sm, 11, "a", "L", 10), 2u);
  EXPECT_EQ(CodeOf(sm.Apply({12, HeldWrite("a", "L", "k", "v4", 1)})),
            ErrorCode::kNotHolder);
  EXPECT_TRUE(sm.Apply({12, HeldWrite("a", "L", "k", "v5", 2)}).ok());
}

TEST(HeldWrite, SharedHoldersAreStillFencedByTheTokenRule) {
  StateMachine sm;
  ASSERT_TRUE(sm.Apply({0, op::Acquire{"r1", "L", 10, LockMode::kShared}}).ok());
  ASSERT_TRUE(sm.Apply({0, op::Acquire{"r2", "L", 10, LockMode::kShared}}).ok());
  EXPECT_TRUE(sm.Apply({1, HeldWrite("r2", "L", "k", "two", 2)}).ok());
  EXPECT_EQ(CodeOf(sm.Apply({2, HeldWrite("r1", "L", "k", "one", 1)})),
            ErrorCode::kStaleToken);
}

// The lost update of a read-modify-write that fencing alone lets through:
// A (token 21) reads counter = 20 and stalls past its lease; B is granted
// token 22 and reads 20; A wakes and writes 21; B writes 21.
class LostUpdate : public ::testing::Test {
 protected:
  void SetUp() override {
    // Twenty earlier grants bring the lock's counter to 20; the last holder
    // wrote counter = 20 with token 20.
    for (int i = 1; i <= 20; ++i) {
      ASSERT_EQ(Grant(sm_, now_, "setup", "C", 1), static_cast<uint64_t>(i));
      ++now_;
    }
    ASSERT_TRUE(sm_.Apply({now_, op::Write{"C", "counter", "20", 20}}).ok());
    a_token_ = Grant(sm_, now_, "A", "C", 10);  // lease [now, now + 10)
    ASSERT_EQ(a_token_, 21u);
    ASSERT_EQ(ValueOf(sm_, now_, "C", "counter"), "20");  // A reads 20
    now_ += 10;                                           // A stalls: lapsed
    b_token_ = Grant(sm_, now_, "B", "C", 10);
    ASSERT_EQ(b_token_, 22u);
    ASSERT_EQ(ValueOf(sm_, now_, "C", "counter"), "20");  // B reads 20
    ++now_;
  }

  StateMachine sm_;
  Tick now_ = 0;
  FencingToken a_token_ = 0;
  FencingToken b_token_ = 0;
};

TEST_F(LostUpdate, TokenRuleAloneLosesAnIncrement) {
  // Without the holder check A's stale write is accepted: the highest token
  // accepted so far is 20.
  EXPECT_TRUE(sm_.Apply({now_, UnheldWrite("C", "counter", "21", a_token_)})
                  .ok());
  EXPECT_TRUE(sm_.Apply({now_, UnheldWrite("C", "counter", "21", b_token_)})
                  .ok());
  // Two increments, one visible.
  EXPECT_EQ(ValueOf(sm_, now_, "C", "counter"), "21");
}

TEST_F(LostUpdate, HeldWriteRefusesTheHolderThatStalled) {
  EXPECT_EQ(CodeOf(sm_.Apply(
                {now_, HeldWrite("A", "C", "counter", "21", a_token_)})),
            ErrorCode::kNotHolder);
  EXPECT_TRUE(
      sm_.Apply({now_, HeldWrite("B", "C", "counter", "21", b_token_)}).ok());
  EXPECT_EQ(ValueOf(sm_, now_, "C", "counter"), "21");
  EXPECT_EQ(sm_.store().HighWater("C"), b_token_);
}

// The external-store form: B's read carries its token, which raises the
// mark, so A's later write with a lower token is stale.
class FencedReadLostUpdate : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(Grant(sm_, 0, "A", "C", 10), 1u);
    ASSERT_TRUE(sm_.Apply({0, UnheldWrite("C", "counter", "20", 1)}).ok());
    ASSERT_EQ(ReadFenced(1, 1), "20");  // A reads 20, then stalls
    ASSERT_EQ(Grant(sm_, 10, "B", "C", 10), 2u);
  }

  std::optional<std::string> ReadFenced(Tick now, FencingToken token) {
    absl::StatusOr<Reply> r =
        sm_.Apply({now, op::FencedRead{"C", "counter", token}});
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return std::nullopt;
    return std::get<ReadOutcome>(*r).value;
  }

  StateMachine sm_;
};

TEST_F(FencedReadLostUpdate, ReadWithTokenRefusesTheLowerWriteAfterIt) {
  ASSERT_EQ(ReadFenced(10, 2), "20");  // B reads 20 with token 2
  EXPECT_EQ(sm_.store().HighWater("C"), 2u);
  EXPECT_EQ(CodeOf(sm_.Apply({11, UnheldWrite("C", "counter", "21", 1)})),
            ErrorCode::kStaleToken);
  EXPECT_TRUE(sm_.Apply({11, UnheldWrite("C", "counter", "21", 2)}).ok());
  EXPECT_EQ(ValueOf(sm_, 11, "C", "counter"), "21");
}

TEST_F(FencedReadLostUpdate, PlainReadLeavesTheLowerWriteAccepted) {
  ASSERT_EQ(ValueOf(sm_, 10, "C", "counter"), "20");  // B reads, no token
  EXPECT_TRUE(sm_.Apply({11, UnheldWrite("C", "counter", "21", 1)}).ok());
}

TEST_F(FencedReadLostUpdate, StaleOrMadeUpReadTokenIsRefusedAndChangesNothing) {
  ASSERT_EQ(ReadFenced(10, 2), "20");
  EXPECT_EQ(CodeOf(sm_.Apply({11, op::FencedRead{"C", "counter", 1}})),
            ErrorCode::kStaleToken);
  EXPECT_EQ(CodeOf(sm_.Apply({11, op::FencedRead{"C", "counter", 3}})),
            ErrorCode::kTokenNotIssued);
  EXPECT_EQ(CodeOf(sm_.Apply({11, op::FencedRead{"C", "", 2}})),
            ErrorCode::kInvalidArguments);
  EXPECT_EQ(sm_.store().HighWater("C"), 2u);
}

TEST(FencedRead, KeyNeverWrittenAnswersNothingAndStillRaisesTheMark) {
  StateMachine sm;
  ASSERT_EQ(Grant(sm, 0, "a", "L", 10), 1u);
  absl::StatusOr<Reply> r = sm.Apply({1, op::FencedRead{"L", "k", 1}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(std::get<ReadOutcome>(*r).value, std::nullopt);
  EXPECT_EQ(sm.store().HighWater("L"), 1u);
}

// A holder-checked delete (op::Delete) has Write's daemon checks, always on.
class Delete : public ::testing::Test {
 protected:
  // "a" holds L with token 1 (until 100) and has written k = v.
  void SetUp() override {
    ASSERT_EQ(Grant(sm_, 0, "a", "L", 100), 1u);
    ASSERT_TRUE(sm_.Apply({1, HeldWrite("a", "L", "k", "v", 1)}).ok());
  }

  absl::StatusOr<Reply> Del(Tick now, std::string client, std::string key,
                            FencingToken token, std::string lock = "L") {
    return sm_.Apply({now, op::Delete{.lock = std::move(lock),
                                      .key = std::move(key),
                                      .token = token,
                                      .client = std::move(client)}});
  }

  // The store as a refused delete must leave it.
  void ExpectUnchanged() {
    EXPECT_EQ(ValueOf(sm_, 2, "L", "k"), "v");
    EXPECT_EQ(sm_.store().HighWater("L"), 1u);
    EXPECT_EQ(sm_.store().KeyCount("L"), 1u);
    EXPECT_EQ(sm_.store().bytes(), 3u);  // "L", "k", "v"
  }

  StateMachine sm_;
};

TEST_F(Delete, TheHolderDeletesAndTheKeysRoomIsFreed) {
  absl::StatusOr<Reply> r = Del(2, "a", "k", 1);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(std::get<bool>(*r)) << "the key existed";
  EXPECT_EQ(ValueOf(sm_, 2, "L", "k"), std::nullopt);
  EXPECT_EQ(sm_.store().KeyCount("L"), 0u);
  EXPECT_EQ(sm_.store().key_count(), 0u);
  EXPECT_EQ(sm_.store().bytes(), 1u) << "the lock's name stays, with its mark";
  EXPECT_EQ(sm_.store().HighWater("L"), 1u);
}

TEST_F(Delete, MissingKeyIsAcceptedAndSaysItDidNotExist) {
  absl::StatusOr<Reply> r = Del(2, "a", "never-written", 1);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(std::get<bool>(*r));
  // Repeating a delete (a lost answer) is harmless.
  ASSERT_TRUE(Del(3, "a", "k", 1).ok());
  r = Del(4, "a", "k", 1);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(std::get<bool>(*r));
}

TEST_F(Delete, EachRefusalIsWritesAndChangesNothing) {
  const struct {
    const char* what;
    Tick now;
    std::string client, key, lock;
    FencingToken token;
    ErrorCode code;
  } kCases[] = {
      {"empty key", 2, "a", "", "L", 1, ErrorCode::kInvalidArguments},
      {"empty lock", 2, "a", "k", "", 1, ErrorCode::kInvalidArguments},
      {"empty client", 2, "", "k", "L", 1, ErrorCode::kInvalidArguments},
      {"token 0", 2, "a", "k", "L", 0, ErrorCode::kInvalidArguments},
      {"made-up token", 2, "a", "k", "L", kMaxToken,
       ErrorCode::kTokenNotIssued},
      {"not the holder", 2, "b", "k", "L", 1, ErrorCode::kNotHolder},
      {"lease lapsed (rule 2)", 100, "a", "k", "L", 1, ErrorCode::kNotHolder},
  };
  for (const auto& c : kCases) {
    EXPECT_EQ(CodeOf(Del(c.now, c.client, c.key, c.token, c.lock)), c.code)
        << c.what;
    ExpectUnchanged();
  }
}

TEST_F(Delete, ChecksComeInWritesOrder) {
  // Arguments before the token: an empty client with a made-up token.
  EXPECT_EQ(CodeOf(Del(2, "", "k", kMaxToken)), ErrorCode::kInvalidArguments);
  // Token issued before holder: a stranger with a made-up token.
  EXPECT_EQ(CodeOf(Del(2, "b", "k", kMaxToken)), ErrorCode::kTokenNotIssued);
  // Holder before the token rule: once "a" lapsed and "b" raised the mark,
  // "a"'s token 1 is below it and "a" no longer holds: not holder.
  ASSERT_EQ(Grant(sm_, 100, "b", "L", 100), 2u);
  ASSERT_TRUE(sm_.Apply({101, HeldWrite("b", "L", "k2", "w", 2)}).ok());
  EXPECT_EQ(CodeOf(Del(101, "a", "k", 1)), ErrorCode::kNotHolder);
  EXPECT_EQ(ValueOf(sm_, 101, "L", "k"), "v");
}

TEST_F(Delete, StaleTokenOfASharedHolderIsRefused) {
  ASSERT_TRUE(sm_.Apply({2, op::Release{"a", "L"}}).ok());
  ASSERT_TRUE(
      sm_.Apply({3, op::Acquire{"r1", "L", 50, LockMode::kShared}}).ok());
  ASSERT_TRUE(
      sm_.Apply({3, op::Acquire{"r2", "L", 50, LockMode::kShared}}).ok());
  ASSERT_TRUE(sm_.Apply({4, HeldWrite("r2", "L", "k", "three", 3)}).ok());
  EXPECT_EQ(CodeOf(Del(5, "r1", "k", 2)), ErrorCode::kStaleToken);
  EXPECT_EQ(ValueOf(sm_, 5, "L", "k"), "three");
  EXPECT_EQ(sm_.store().HighWater("L"), 3u);
}

TEST_F(Delete, AcceptedDeleteRaisesTheMarkSoAnOldTokenCannotWriteTheKeyBack) {
  // "a" stalls past its lease; "b" takes over and deletes k.
  ASSERT_EQ(Grant(sm_, 100, "b", "L", 100), 2u);
  ASSERT_TRUE(Del(101, "b", "k", 2).ok());
  EXPECT_EQ(sm_.store().HighWater("L"), 2u);
  // "a" wakes and writes with token 1, even without the holder check.
  EXPECT_EQ(CodeOf(sm_.Apply({102, UnheldWrite("L", "k", "old", 1)})),
            ErrorCode::kStaleToken);
  EXPECT_EQ(ValueOf(sm_, 102, "L", "k"), std::nullopt);
}

TEST_F(Delete, ContractOperationsAreUnchanged) {
  // The contract's write (rule 6) still ignores leases after a delete.
  ASSERT_TRUE(Del(2, "a", "k", 1).ok());
  EXPECT_TRUE(sm_.Apply({3, op::Write{"nowhere", "k", "v", 7}}).ok());
  EXPECT_TRUE(sm_.Apply({3, op::Write{"L", "k", "back", 1}}).ok());
  EXPECT_EQ(ValueOf(sm_, 3, "L", "k"), "back");
}

TEST_F(Delete, SnapshotAfterADeleteRestoresWithoutTheKey) {
  ASSERT_TRUE(Del(2, "a", "k", 1).ok());
  StateMachine restored;
  ASSERT_TRUE(restored.Restore(sm_.Snapshot()).ok());
  EXPECT_EQ(ValueOf(restored, 2, "L", "k"), std::nullopt);
  EXPECT_EQ(restored.store().bytes(), sm_.store().bytes());
  EXPECT_EQ(restored.store().key_count(), 0u);
  EXPECT_EQ(restored.store().HighWater("L"), 1u);
}

TEST(Keys, ListedInByteOrderOnePageAfterAnother) {
  StateMachine sm;
  ASSERT_EQ(Grant(sm, 0, "a", "L", 100), 1u);
  for (const char* key : {"b", "a", "c/2", "c/10", "B"}) {
    ASSERT_TRUE(sm.Apply({1, HeldWrite("a", "L", key, "v", 1)}).ok());
  }
  absl::StatusOr<KeyPage> page = sm.Keys(2, "L", "", 2);
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_EQ(page->keys, (std::vector<std::string>{"B", "a"}));
  EXPECT_TRUE(page->more);
  page = sm.Keys(2, "L", "a", 2);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->keys, (std::vector<std::string>{"b", "c/10"}));
  EXPECT_TRUE(page->more);
  page = sm.Keys(2, "L", "c/10", 2);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->keys, (std::vector<std::string>{"c/2"}));
  EXPECT_FALSE(page->more);
  // `after` need not be a key; a limit of 0 is taken as 1.
  page = sm.Keys(2, "L", "bb", 0);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->keys, (std::vector<std::string>{"c/10"}));
  EXPECT_TRUE(page->more);
  // A deleted key is gone from the listing.
  ASSERT_TRUE(sm.Apply({3, op::Delete{"L", "b", 1, "a"}}).ok());
  page = sm.Keys(3, "L", "a", 10);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->keys, (std::vector<std::string>{"c/10", "c/2"}));
}

TEST(Keys, NeedNoTokenAndAnUnknownLockHasNone) {
  StateMachine sm;
  absl::StatusOr<KeyPage> page = sm.Keys(0, "nowhere", "", 10);
  ASSERT_TRUE(page.ok());
  EXPECT_TRUE(page->keys.empty());
  EXPECT_FALSE(page->more);
  EXPECT_EQ(ErrorCodeOf(sm.Keys(0, "", "", 10).status()),
            ErrorCode::kInvalidArguments);
}

}  // namespace
}  // namespace leasekeeper
