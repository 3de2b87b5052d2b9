#include "storage/operation_codec.h"

#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "storage_test_util.h"

namespace leasekeeper::storage {
namespace {

std::vector<Operation> OneOfEachKind() {
  return {
      Operation{0, op::Acquire{"job-1", "exports/daily", 30000,
                               LockMode::kExclusive}},
      Operation{kMaxTick, op::Acquire{"r", "cfg", 1, LockMode::kShared}},
      Operation{kMinTick, op::Renew{"job-1", "exports/daily", -5}},
      Operation{17, op::Release{"job-1", "exports/daily"}},
      Operation{18, op::Withdraw{"job-2", "exports/daily"}},
      Operation{19, op::ReleaseAll{"job-3"}},
      Operation{20, op::RenewAll{""}},  // empty names encode too
      Operation{21, op::Write{"exports/daily", "part-1",
                              std::string("bin\0ary\xff", 8),
                              ~FencingToken{0}}},
      Operation{-3, op::Advance{}},
  };
}

TEST(OperationCodec, EveryKindRoundTrips) {
  for (const Operation& op : OneOfEachKind()) {
    const std::string bytes = EncodeOperation(op);
    absl::StatusOr<LogEntry> entry = DecodeLogEntry(bytes);
    ASSERT_TRUE(entry.ok()) << entry.status();
    const Operation* decoded = std::get_if<Operation>(&*entry);
    ASSERT_NE(decoded, nullptr);
    EXPECT_TRUE(SameOperation(*decoded, op)) << "kind " << op.body.index();
  }
}

TEST(OperationCodec, RestartGraceRoundTrips) {
  std::string bytes;
  EncodeRestartGrace(RestartGrace{123456, 10000}, bytes);
  absl::StatusOr<LogEntry> entry = DecodeLogEntry(bytes);
  ASSERT_TRUE(entry.ok()) << entry.status();
  const RestartGrace* grace = std::get_if<RestartGrace>(&*entry);
  ASSERT_NE(grace, nullptr);
  EXPECT_EQ(grace->at, 123456);
  EXPECT_EQ(grace->grace_ticks, 10000);
}

TEST(OperationCodec, RandomStreamsRoundTrip) {
  testing::OperationGenerator gen(11);
  for (int i = 0; i < 5000; ++i) {
    const Operation op = gen.Next();
    absl::StatusOr<LogEntry> entry = DecodeLogEntry(EncodeOperation(op));
    ASSERT_TRUE(entry.ok()) << entry.status();
    ASSERT_TRUE(SameOperation(std::get<Operation>(*entry), op));
  }
}

TEST(OperationCodec, EveryProperPrefixAndExtensionIsAnError) {
  for (const Operation& op : OneOfEachKind()) {
    const std::string bytes = EncodeOperation(op);
    for (size_t n = 0; n < bytes.size(); ++n) {
      EXPECT_FALSE(DecodeLogEntry(bytes.substr(0, n)).ok())
          << "prefix " << n << " of kind " << op.body.index();
    }
    EXPECT_FALSE(DecodeLogEntry(bytes + "x").ok());
  }
}

TEST(OperationCodec, UnknownVersionIsAClearError) {
  for (const char version : {'\x00', '\x03'}) {
    std::string bytes = EncodeOperation(Operation{1, op::Advance{}});
    bytes[0] = version;
    absl::StatusOr<LogEntry> entry = DecodeLogEntry(bytes);
    ASSERT_FALSE(entry.ok());
    EXPECT_EQ(entry.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(entry.status().message().find(
                  absl::StrCat("codec version ", static_cast<int>(version))),
              std::string::npos)
        << entry.status();
    EXPECT_NE(entry.status().message().find("versions 1 to 2"),
              std::string::npos);
  }
}

std::vector<ServerRecord> OneOfEachServerRecord() {
  return {
      ServerRecord{5, srec::SessionOpened{"s-0123", "job-1"}},
      ServerRecord{kMinTick, srec::SessionEnded{"s-0123"}},
      ServerRecord{kMaxTick, srec::RetryAnswered{"job-1", "req-7",
                                                 std::string("e\0n\xfftry", 7)}},
      ServerRecord{9, srec::RetryForgotten{"job-1", "req-7"}},
  };
}

TEST(OperationCodec, EveryServerRecordKindRoundTrips) {
  for (const ServerRecord& record : OneOfEachServerRecord()) {
    std::string bytes;
    EncodeServerRecord(record, bytes);
    absl::StatusOr<LogEntry> entry = DecodeLogEntry(bytes);
    ASSERT_TRUE(entry.ok()) << entry.status();
    const ServerRecord* decoded = std::get_if<ServerRecord>(&*entry);
    ASSERT_NE(decoded, nullptr);
    EXPECT_TRUE(SameServerRecord(*decoded, record))
        << "kind " << record.body.index();
    for (size_t n = 0; n < bytes.size(); ++n) {
      EXPECT_FALSE(DecodeLogEntry(bytes.substr(0, n)).ok()) << "prefix " << n;
    }
    EXPECT_FALSE(DecodeLogEntry(bytes + "x").ok());
  }
}

// A data dir written before version 2 still opens: its entries decode.
TEST(OperationCodec, VersionOneEntriesStillDecode) {
  for (const Operation& op : OneOfEachKind()) {
    std::string bytes = EncodeOperation(op);
    bytes[0] = 1;
    absl::StatusOr<LogEntry> entry = DecodeLogEntry(bytes);
    ASSERT_TRUE(entry.ok()) << entry.status();
    EXPECT_TRUE(SameOperation(std::get<Operation>(*entry), op));
  }
  std::string grace;
  EncodeRestartGrace(RestartGrace{7, 100}, grace);
  grace[0] = 1;
  EXPECT_TRUE(DecodeLogEntry(grace).ok());
}

// Version 1 had no server records: such a kind there is corruption.
TEST(OperationCodec, ServerRecordInAVersionOneEntryIsDataLoss) {
  for (const ServerRecord& record : OneOfEachServerRecord()) {
    std::string bytes;
    EncodeServerRecord(record, bytes);
    bytes[0] = 1;
    EXPECT_EQ(DecodeLogEntry(bytes).status().code(),
              absl::StatusCode::kDataLoss);
  }
}

TEST(OperationCodec, BadModeTickAndKindAreErrors) {
  std::string acquire = EncodeOperation(
      Operation{1, op::Acquire{"c", "L", 5, LockMode::kShared}});
  acquire.back() = 2;  // mode byte
  EXPECT_EQ(DecodeLogEntry(acquire).status().code(),
            absl::StatusCode::kDataLoss);

  std::string advance;
  advance.push_back(static_cast<char>(kOperationCodecVersion));
  advance.push_back(8);
  advance.append("\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01");  // 2^63 - 1
  EXPECT_EQ(DecodeLogEntry(advance).status().code(),
            absl::StatusCode::kDataLoss);

  std::string unknown = EncodeOperation(Operation{1, op::Advance{}});
  unknown[1] = 42;
  EXPECT_EQ(DecodeLogEntry(unknown).status().code(),
            absl::StatusCode::kDataLoss);
}

// Garbage never crashes (run under ASan/UBSan in CI to catch reads past the
// end) and, when it happens to decode, re-encodes to the same bytes.
TEST(OperationCodec, RandomGarbageDecodesOrFailsCleanly) {
  std::mt19937 rng(1234);
  int decoded = 0;
  for (int i = 0; i < 200000; ++i) {
    std::string bytes(rng() % 24, '\0');
    for (char& c : bytes) c = static_cast<char>(rng() % 4 == 0 ? rng() % 9 : rng());
    if (!bytes.empty() && rng() % 2 == 0) bytes[0] = 1;
    absl::StatusOr<LogEntry> entry = DecodeLogEntry(bytes);
    if (!entry.ok()) continue;
    ++decoded;
    if (const Operation* op = std::get_if<Operation>(&*entry)) {
      // Varints have one canonical form except over-long encodings, which
      // the decoder accepts; so compare decoded values, not bytes.
      absl::StatusOr<LogEntry> again = DecodeLogEntry(EncodeOperation(*op));
      ASSERT_TRUE(again.ok());
      EXPECT_TRUE(SameOperation(std::get<Operation>(*again), *op));
    }
  }
  EXPECT_GT(decoded, 0);  // the generator does reach valid entries
}

TEST(OperationCodec, BitFlipsNeverCrash) {
  for (const Operation& op : OneOfEachKind()) {
    const std::string bytes = EncodeOperation(op);
    for (size_t bit = 0; bit < bytes.size() * 8; ++bit) {
      std::string flipped = bytes;
      flipped[bit / 8] ^= static_cast<char>(1 << (bit % 8));
      DecodeLogEntry(flipped).status().IgnoreError();
    }
  }
}

}  // namespace
}  // namespace leasekeeper::storage
