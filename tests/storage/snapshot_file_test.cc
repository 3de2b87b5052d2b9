#include "storage/snapshot_file.h"

#include <filesystem>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "storage/coding.h"
#include "storage/crc32c.h"
#include "storage_test_util.h"

namespace leasekeeper::storage {
namespace {

using testing::CanonicalState;
using testing::OperationGenerator;
using testing::Slurp;
using testing::Spit;
using testing::TempDir;

void ApplyAll(StateMachine& machine, const std::vector<Operation>& ops,
              size_t from, size_t to) {
  for (size_t i = from; i < to; ++i) {
    machine.Apply(ops[i]).status().IgnoreError();
  }
}

TEST(SnapshotFile, RoundTripRestoresTheSameState) {
  TempDir dir;
  StateMachine original;
  const std::vector<Operation> ops = OperationGenerator(3).Take(3000);
  ApplyAll(original, ops, 0, ops.size());

  absl::StatusOr<SnapshotFileInfo> written =
      WriteSnapshotFile(dir.path(), original.Snapshot(), 3000);
  ASSERT_TRUE(written.ok()) << written.status();
  const std::string path = dir.path() + "/" + SnapshotFileName(3000);
  EXPECT_EQ(std::filesystem::file_size(path), written->bytes);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));

  CoreSnapshot read;
  absl::StatusOr<SnapshotFileInfo> info = ReadSnapshotFile(path, &read);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->covered, 3000u);
  EXPECT_EQ(CanonicalState(read), CanonicalState(original));

  StateMachine restored;
  ASSERT_TRUE(restored.Restore(read).ok());
  EXPECT_EQ(CanonicalState(restored), CanonicalState(original));
  EXPECT_TRUE(restored.table().CheckInvariants().ok());
}

// The core is deterministic: restoring a snapshot taken after k operations
// and applying the rest gives, step by step, the replies and the state the
// original reached.
TEST(SnapshotFile, SnapshotPlusReplayEqualsTheOriginalOnRandomStreams) {
  TempDir dir;
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE(absl::StrCat("seed ", seed));
    const std::vector<Operation> ops = OperationGenerator(seed).Take(1500);
    const size_t k = 100 + seed * 53;
    StateMachine original;
    ApplyAll(original, ops, 0, k);
    ASSERT_TRUE(WriteSnapshotFile(dir.path(), original.Snapshot(), k).ok());

    CoreSnapshot read;
    ASSERT_TRUE(
        ReadSnapshotFile(dir.path() + "/" + SnapshotFileName(k), &read).ok());
    StateMachine recovered;
    ASSERT_TRUE(recovered.Restore(read).ok());
    for (size_t i = k; i < ops.size(); ++i) {
      absl::StatusOr<Reply> a = original.Apply(ops[i]);
      absl::StatusOr<Reply> b = recovered.Apply(ops[i]);
      ASSERT_EQ(a.status(), b.status()) << "op " << i;
      if (a.ok()) {
        ASSERT_EQ(a->index(), b->index()) << "op " << i;
      }
    }
    EXPECT_EQ(CanonicalState(recovered), CanonicalState(original));
  }
}

TEST(SnapshotFile, AnyDamagedByteIsDetected) {
  TempDir dir;
  StateMachine machine;
  ApplyAll(machine, OperationGenerator(5).Take(200), 0, 200);
  ASSERT_TRUE(WriteSnapshotFile(dir.path(), machine.Snapshot(), 200).ok());
  const std::string path = dir.path() + "/" + SnapshotFileName(200);
  const std::string intact = Slurp(path);
  for (size_t byte = 0; byte < intact.size(); ++byte) {
    std::string damaged = intact;
    damaged[byte] ^= 0x40;
    Spit(path, damaged);
    CoreSnapshot read;
    EXPECT_FALSE(ReadSnapshotFile(path, &read).ok()) << "byte " << byte;
  }
  for (size_t cut : {size_t{0}, size_t{10}, intact.size() - 1}) {
    Spit(path, intact.substr(0, cut));
    EXPECT_EQ(ReadSnapshotFile(path, nullptr).status().code(),
              absl::StatusCode::kDataLoss);
  }
}

TEST(SnapshotFile, FormatVersionMismatchIsAClearError) {
  TempDir dir;
  StateMachine machine;
  ASSERT_TRUE(WriteSnapshotFile(dir.path(), machine.Snapshot(), 1).ok());
  const std::string path = dir.path() + "/" + SnapshotFileName(1);
  std::string data = Slurp(path);
  data[8] = 9;
  Spit(path, data);
  absl::StatusOr<SnapshotFileInfo> info = ReadSnapshotFile(path, nullptr);
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(info.status().message().find("format version 9"),
            std::string::npos);
}

ServerState SomeServerState() {
  ServerState server;
  server.sessions = {{"s-1", "job-1"}, {"s-2", "job-2"}};
  server.retries = {{"job-1", "r-1", std::string("en\0try", 6), 40},
                    {"job-2", "r-9", "", -3}};
  server.labels = {{"job-1", "exports/daily", "run 7"},
                   {"job-2", "pool", "pod-3"}};
  return server;
}

TEST(SnapshotFile, ServerStateRoundTripsWithTheCore) {
  TempDir dir;
  StateMachine machine;
  ApplyAll(machine, OperationGenerator(4).Take(200), 0, 200);
  ASSERT_TRUE(
      WriteSnapshotFile(dir.path(), machine.Snapshot(), 7, SomeServerState())
          .ok());
  CoreSnapshot core;
  ServerState server;
  absl::StatusOr<SnapshotFileInfo> info =
      ReadSnapshotFile(dir.path() + "/" + SnapshotFileName(7), &core, &server);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_TRUE(SameServerState(server, SomeServerState()));
  EXPECT_EQ(CanonicalState(core), CanonicalState(machine));
}

// Writes `payload` as the snapshot file of an older build (format `version`)
// covering `covered`; returns its path.
std::string SpitOldSnapshotFile(const TempDir& dir, uint32_t version,
                                LogPosition covered,
                                const std::string& payload) {
  std::string header("LKSNAPSH");
  PutFixed32(header, version);
  PutFixed32(header, 0);
  PutFixed64(header, covered);
  PutFixed64(header, payload.size());
  PutFixed32(header, Crc32c(payload));
  PutFixed32(header, Crc32c(header));
  const std::string path = dir.path() + "/" + SnapshotFileName(covered);
  Spit(path, header + payload);
  return path;
}

// A data dir written before the server state was durable still opens: a
// version 1 file (the core's payload alone) reads as an empty server state.
TEST(SnapshotFile, VersionOneFileReadsAsAnEmptyServerState) {
  TempDir dir;
  StateMachine machine;
  ApplyAll(machine, OperationGenerator(5).Take(200), 0, 200);
  std::string payload;
  EncodeSnapshotPayload(machine.Snapshot(), payload, /*version=*/1);
  const std::string path = SpitOldSnapshotFile(dir, 1, 3, payload);

  CoreSnapshot core;
  ServerState server = SomeServerState();
  absl::StatusOr<SnapshotFileInfo> info = ReadSnapshotFile(path, &core, &server);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->covered, 3u);
  EXPECT_TRUE(server.empty());
  EXPECT_EQ(CanonicalState(core), CanonicalState(machine));
}

TEST(SnapshotFile, SemaphoreCapacitySurvivesTheFile) {
  TempDir dir;
  StateMachine machine;
  ASSERT_TRUE(
      machine.Apply({0, op::Acquire{"a", "pool", 50, LockMode::kSemaphore, 3}})
          .ok());
  ASSERT_TRUE(
      machine.Apply({1, op::Acquire{"b", "pool", 50, LockMode::kSemaphore, 3}})
          .ok());
  ASSERT_TRUE(WriteSnapshotFile(dir.path(), machine.Snapshot(), 2).ok());
  CoreSnapshot core;
  ASSERT_TRUE(
      ReadSnapshotFile(dir.path() + "/" + SnapshotFileName(2), &core).ok());
  StateMachine restored;
  ASSERT_TRUE(restored.Restore(core).ok());
  EXPECT_EQ(CanonicalState(restored), CanonicalState(machine));
  EXPECT_EQ(restored.Inspect(2, "pool")->capacity, 3u);
}

// A data dir written before semaphores still opens: a version 2 file (no
// capacities) reads with every capacity 0.
TEST(SnapshotFile, VersionTwoFileStillReads) {
  TempDir dir;
  StateMachine machine;
  for (const Operation& op : OperationGenerator(8).Take(300)) {
    if (const auto* a = std::get_if<op::Acquire>(&op.body);
        a != nullptr && a->mode == LockMode::kSemaphore) {
      continue;  // version 2 had none
    }
    machine.Apply(op).status().IgnoreError();
  }
  std::string payload;
  EncodeSnapshotPayload(machine.Snapshot(), payload, /*version=*/2);
  PutVarint64(payload, 0);  // no sessions
  PutVarint64(payload, 0);  // no retries
  const std::string path = SpitOldSnapshotFile(dir, 2, 4, payload);
  CoreSnapshot core;
  absl::StatusOr<SnapshotFileInfo> info = ReadSnapshotFile(path, &core);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(CanonicalState(core), CanonicalState(machine));
}

TEST(SnapshotFile, TruncatedServerStateIsDataLoss) {
  TempDir dir;
  StateMachine machine;
  ASSERT_TRUE(
      WriteSnapshotFile(dir.path(), machine.Snapshot(), 2, SomeServerState())
          .ok());
  const std::string path = dir.path() + "/" + SnapshotFileName(2);
  std::string data = Slurp(path);
  std::string payload = data.substr(kSnapshotHeaderBytes);
  payload.pop_back();  // the last label loses a byte
  std::string header = data.substr(0, 24);
  PutFixed64(header, payload.size());
  PutFixed32(header, Crc32c(payload));
  PutFixed32(header, Crc32c(header));
  Spit(path, header + payload);
  CoreSnapshot core;
  ServerState server;
  absl::StatusOr<SnapshotFileInfo> info = ReadSnapshotFile(path, &core, &server);
  EXPECT_EQ(info.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(info.status().message().find("label"), std::string::npos)
      << info.status();
}

// A data dir written before holder labels were durable still opens: a
// version 3 file reads with its sessions and retries and no labels.
TEST(SnapshotFile, VersionThreeFileReadsWithNoLabels) {
  TempDir dir;
  StateMachine machine;
  ApplyAll(machine, OperationGenerator(6).Take(200), 0, 200);
  std::string payload;
  EncodeSnapshotPayload(machine.Snapshot(), payload, /*version=*/3);
  PutVarint64(payload, 1);  // one session
  PutLengthPrefixed(payload, "s-1");
  PutLengthPrefixed(payload, "job-1");
  PutVarint64(payload, 0);  // no retries
  const std::string path = SpitOldSnapshotFile(dir, 3, 5, payload);
  CoreSnapshot core;
  ServerState server = SomeServerState();
  absl::StatusOr<SnapshotFileInfo> info = ReadSnapshotFile(path, &core, &server);
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_EQ(server.sessions.size(), 1u);
  EXPECT_EQ(server.sessions[0].client, "job-1");
  EXPECT_TRUE(server.retries.empty());
  EXPECT_TRUE(server.labels.empty());
  EXPECT_EQ(CanonicalState(core), CanonicalState(machine));
}

TEST(SnapshotFile, GarbagePayloadsDecodeOrFailCleanly) {
  std::mt19937 rng(99);
  StateMachine machine;
  ApplyAll(machine, OperationGenerator(8).Take(100), 0, 100);
  std::string valid;
  EncodeSnapshotPayload(machine.Snapshot(), valid);
  for (int i = 0; i < 20000; ++i) {
    std::string bytes = valid.substr(0, rng() % (valid.size() + 1));
    for (int flips = rng() % 4; flips > 0 && !bytes.empty(); --flips) {
      bytes[rng() % bytes.size()] = static_cast<char>(rng());
    }
    CoreSnapshot snapshot;
    if (DecodeSnapshotPayload(bytes, snapshot).ok()) {
      // Structurally valid; the core checks meaning and must not crash.
      StateMachine other;
      other.Restore(snapshot).IgnoreError();
    }
  }
  CoreSnapshot huge_count;
  EXPECT_FALSE(
      DecodeSnapshotPayload(std::string("\x00\x00\x00\xff\xff\xff\x0f", 7),
                            huge_count)
          .ok());
}

// A decoded payload is checked by the core only later, so it may name one
// lock many times; its encoding must still be a function of the snapshot:
// re-encoding what the encoding decodes to gives the same bytes.
TEST(SnapshotFile, EncodingOfRepeatedLockNamesIsStable) {
  CoreSnapshot snapshot;
  for (uint64_t i = 0; i < 64; ++i) {
    CoreSnapshot::Lock lock;
    lock.name = i % 2 == 0 ? "" : "L";
    lock.last_token = i;
    snapshot.locks.push_back(lock);
  }
  std::string first;
  EncodeSnapshotPayload(snapshot, first);
  CoreSnapshot decoded;
  ASSERT_TRUE(DecodeSnapshotPayload(first, decoded).ok());
  std::string second;
  EncodeSnapshotPayload(decoded, second);
  EXPECT_EQ(second, first);
  // Same-named locks keep the snapshot's order.
  ASSERT_EQ(decoded.locks.size(), 64u);
  for (size_t i = 0; i < 32; ++i) {
    EXPECT_EQ(decoded.locks[i].last_token, 2 * i);
    EXPECT_EQ(decoded.locks[32 + i].last_token, 2 * i + 1);
  }
}

}  // namespace
}  // namespace leasekeeper::storage
