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
      Operation{22, op::Write{.lock = "exports/daily",
                              .key = "part-2",
                              .value = "v",
                              .token = 7,
                              .refuse_unissued = true,
                              .require_held = true,
                              .client = "job-1"}},
      Operation{23, op::Write{.lock = "L",
                              .key = "k",
                              .value = "v",
                              .token = 1,
                              .refuse_unissued = true}},
      Operation{24, op::FencedRead{"exports/daily", "part-1", 9}},
      Operation{25, op::Forget{"job-4"}},
      Operation{26, op::Acquire{"job-5", "pool", 100, LockMode::kSemaphore,
                                65535}},
      Operation{27, op::Delete{.lock = "exports/daily",
                               .key = "part-1",
                               .token = ~FencingToken{0},
                               .client = "job-1"}},
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
  for (const char version : {'\x00', '\x05'}) {
    std::string bytes = EncodeOperation(Operation{1, op::Advance{}});
    bytes[0] = version;
    absl::StatusOr<LogEntry> entry = DecodeLogEntry(bytes);
    ASSERT_FALSE(entry.ok());
    EXPECT_EQ(entry.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(entry.status().message().find(
                  absl::StrCat("codec version ", static_cast<int>(version))),
              std::string::npos)
        << entry.status();
    EXPECT_NE(entry.status().message().find("versions 1 to 4"),
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
      ServerRecord{10, srec::LabelSet{"job-1", "exports/daily", "run 7"}},
      ServerRecord{11, srec::LabelCleared{"job-1", "exports/daily"}},
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
    if (static_cast<uint8_t>(bytes[1]) >= 32) continue;  // came with version 2
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

// Bytes a version-1 build wrote: a data dir of an older leasekeeperd stays
// readable, and its writes replay as the contract's write (no daemon check).
TEST(OperationCodec, VersionOneContractWriteBytesStillDecode) {
  const std::string v1_write(
      "\x01\x07\x2a"  // version 1, Write, at 21
      "\x01L\x01k\x01v\x05",  // lock, key, value, token 5
      10);
  absl::StatusOr<LogEntry> entry = DecodeLogEntry(v1_write);
  ASSERT_TRUE(entry.ok()) << entry.status();
  EXPECT_TRUE(SameOperation(std::get<Operation>(*entry),
                            Operation{21, op::Write{"L", "k", "v", 5}}));

  std::string v1_fenced_read =
      EncodeOperation(Operation{1, op::FencedRead{"L", "k", 1}});
  v1_fenced_read[0] = 1;
  EXPECT_EQ(DecodeLogEntry(v1_fenced_read).status().code(),
            absl::StatusCode::kDataLoss);
}

TEST(OperationCodec, ContractWriteKeepsTheVersionOneLayout) {
  const std::string bytes =
      EncodeOperation(Operation{21, op::Write{"L", "k", "v", 5}});
  EXPECT_EQ(bytes.substr(1), std::string("\x07\x2a\x01L\x01k\x01v\x05", 9));
}

// A semaphore acquire is kind 35, new in version 3; the contract's acquire
// keeps kind 1 and its layout, so version 3 logs without semaphores differ
// from version 2 ones only in the version byte.
TEST(OperationCodec, SemaphoreAcquireIsANewKindOfVersionThree) {
  const std::string contract = EncodeOperation(
      Operation{1, op::Acquire{"c", "L", 5, LockMode::kShared}});
  EXPECT_EQ(contract.substr(1), std::string("\x01\x02\x01" "c\x01L\x0a\x01", 8));
  std::string semaphore = EncodeOperation(
      Operation{1, op::Acquire{"c", "L", 5, LockMode::kSemaphore, 4}});
  EXPECT_EQ(static_cast<uint8_t>(semaphore[1]), 35);
  EXPECT_EQ(semaphore.back(), '\x04');
  semaphore[0] = 2;
  EXPECT_EQ(DecodeLogEntry(semaphore).status().code(),
            absl::StatusCode::kDataLoss);
}

// A delete is kind 36, new in version 4: a data dir of a version 3 build
// (which has none) still opens, and a delete in an older entry is
// corruption.
TEST(OperationCodec, DeleteIsANewKindOfVersionFour) {
  std::string del = EncodeOperation(
      Operation{1, op::Delete{.lock = "L", .key = "k", .token = 5,
                              .client = "c"}});
  EXPECT_EQ(del, std::string("\x04\x24\x02\x01L\x01k\x05\x01" "c", 10));
  del[0] = 3;
  EXPECT_EQ(DecodeLogEntry(del).status().code(), absl::StatusCode::kDataLoss);
  for (const Operation& op : OneOfEachKind()) {
    if (std::holds_alternative<op::Delete>(op.body)) continue;
    std::string bytes = EncodeOperation(op);
    bytes[0] = 3;
    absl::StatusOr<LogEntry> entry = DecodeLogEntry(bytes);
    ASSERT_TRUE(entry.ok()) << entry.status();
    EXPECT_TRUE(SameOperation(std::get<Operation>(*entry), op));
  }
}

// Holder labels are kinds 69 and 70, new in version 4: a version 3 log
// (written before labels were durable) has none, and one there is
// corruption; a version 3 log still reads.
TEST(OperationCodec, LabelRecordsAreNewKindsOfVersionFour) {
  for (const ServerRecord& record :
       {ServerRecord{1, srec::LabelSet{"c", "L", "x"}},
        ServerRecord{1, srec::LabelCleared{"c", "L"}}}) {
    std::string bytes;
    EncodeServerRecord(record, bytes);
    EXPECT_EQ(bytes[0], '\x04');
    bytes[0] = 3;
    EXPECT_EQ(DecodeLogEntry(bytes).status().code(),
              absl::StatusCode::kDataLoss);
  }
  std::string v3_session;
  EncodeServerRecord(ServerRecord{1, srec::SessionOpened{"s", "c"}}, v3_session);
  v3_session[0] = 3;
  EXPECT_TRUE(DecodeLogEntry(v3_session).ok());
}

TEST(OperationCodec, SemaphoreKindSpellingAContractAcquireIsMalformed) {
  std::string bytes = EncodeOperation(
      Operation{1, op::Acquire{"c", "L", 5, LockMode::kSemaphore, 4}});
  bytes[bytes.size() - 2] = 0;  // mode exclusive
  bytes.back() = 0;             // capacity 0: kind 1's business
  EXPECT_EQ(DecodeLogEntry(bytes).status().code(),
            absl::StatusCode::kDataLoss);
  bytes[bytes.size() - 2] = 3;  // no such mode
  bytes.back() = 4;
  EXPECT_EQ(DecodeLogEntry(bytes).status().code(),
            absl::StatusCode::kDataLoss);
}

TEST(OperationCodec, UnknownCheckBitsAreMalformed) {
  std::string bytes = EncodeOperation(Operation{
      1, op::Write{.lock = "L", .key = "k", .value = "v", .token = 1,
                   .refuse_unissued = true, .client = ""}});
  bytes[bytes.size() - 2] = 4;  // the checks byte, before the empty client
  EXPECT_EQ(DecodeLogEntry(bytes).status().code(),
            absl::StatusCode::kDataLoss);
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
