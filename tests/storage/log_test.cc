#include "storage/log.h"

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "storage/coding.h"
#include "storage_test_util.h"

namespace leasekeeper::storage {
namespace {

using testing::CountFiles;
using testing::Slurp;
using testing::Spit;
using testing::TempDir;

std::string Record(int i) {
  return absl::StrCat("record-", i, std::string(i % 7, '#'));
}

std::unique_ptr<FileLog> OpenLog(const std::string& dir,
                                 LogOpenReport* report = nullptr,
                                 FileLogOptions options = {}) {
  absl::StatusOr<std::unique_ptr<FileLog>> log =
      FileLog::Open(dir, std::move(options), report);
  EXPECT_TRUE(log.ok()) << log.status();
  return log.ok() ? *std::move(log) : nullptr;
}

// Writes records 1..n (in batches of 3) and closes the log.
void WriteRecords(const std::string& dir, int n, FileLogOptions options = {}) {
  std::unique_ptr<FileLog> log = OpenLog(dir, nullptr, options);
  ASSERT_NE(log, nullptr);
  std::vector<std::string> batch;
  for (int i = 1; i <= n; ++i) {
    batch.push_back(Record(i));
    if (batch.size() == 3 || i == n) {
      ASSERT_TRUE(log->Append(batch).ok());
      ASSERT_TRUE(log->Sync().ok());
      batch.clear();
    }
  }
}

std::vector<std::string> ReadAll(const Log& log, LogPosition from = 1) {
  std::vector<std::string> records;
  absl::Status status =
      log.ReadFrom(from, [&](LogPosition position, absl::string_view record) {
        EXPECT_EQ(position, from + records.size());
        records.emplace_back(record);
        return absl::OkStatus();
      });
  EXPECT_TRUE(status.ok()) << status;
  return records;
}

// Segment files of `dir` with records, oldest first.
std::vector<std::string> Segments(const std::string& dir) {
  std::vector<std::string> paths;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename();
    if (name.rfind("wal-", 0) == 0 &&
        e.file_size() > kLogSegmentHeaderBytes) {
      paths.push_back(e.path());
    }
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

// Byte offsets at which each record frame of a segment starts.
std::vector<size_t> FrameOffsets(const std::string& data) {
  std::vector<size_t> offsets;
  size_t at = kLogSegmentHeaderBytes;
  while (at + kLogFrameHeaderBytes <= data.size()) {
    offsets.push_back(at);
    at += kLogFrameHeaderBytes + (DecodeFixed32(data.data() + at) & 0xFFFFFF);
  }
  return offsets;
}

TEST(FileLog, AppendedRecordsReadBackAfterReopenAcrossSegments) {
  for (bool preallocate : {false, true}) {
  SCOPED_TRACE(preallocate ? "preallocated segments" : "growing segments");
  TempDir dir;
  FileLogOptions small;
  small.segment_bytes = 200;
  small.preallocate_segments = preallocate;
  WriteRecords(dir.path(), 100, small);
  EXPECT_GT(Segments(dir.path()).size(), 5u);

  LogOpenReport report;
  std::unique_ptr<FileLog> log = OpenLog(dir.path(), &report, small);
  EXPECT_FALSE(report.tail_dropped);
  EXPECT_TRUE(report.warnings.empty());
  EXPECT_EQ(log->first_position(), 1u);
  EXPECT_EQ(log->next_position(), 101u);
  std::vector<std::string> all = ReadAll(*log);
  ASSERT_EQ(all.size(), 100u);
  for (int i = 1; i <= 100; ++i) EXPECT_EQ(all[i - 1], Record(i));
  EXPECT_EQ(ReadAll(*log, 57).front(), Record(57));

  // Appending continues the numbering.
  ASSERT_TRUE(log->Append({"after"}).ok());
  ASSERT_TRUE(log->Sync().ok());
  EXPECT_EQ(ReadAll(*log, 101), std::vector<std::string>{"after"});
  }
}

TEST(FileLog, PreallocatedSegmentIsWrittenOverAndItsUnusedZerosCutOnReopen) {
  TempDir dir;
  FileLogOptions options;
  options.segment_bytes = 64 << 10;
  options.preallocate_segments = true;
  {
    std::unique_ptr<FileLog> log = OpenLog(dir.path(), nullptr, options);
    ASSERT_NE(log, nullptr);
    ASSERT_TRUE(log->Append({Record(1), Record(2)}).ok());
    ASSERT_TRUE(log->Sync().ok());
    const std::string path = Segments(dir.path()).back();
    const std::string data = Slurp(path);
    // The file has its full size from the start; the records sit at its
    // beginning and zeros follow.
    EXPECT_EQ(data.size(), options.segment_bytes);
    ASSERT_EQ(FrameOffsets(data.substr(0, data.find_last_not_of('\0') + 1))
                  .size(),
              2u);
  }
  const std::string first_segment = Segments(dir.path()).front();
  LogOpenReport report;
  std::unique_ptr<FileLog> log = OpenLog(dir.path(), &report, options);
  ASSERT_NE(log, nullptr);
  EXPECT_FALSE(report.tail_dropped);
  EXPECT_TRUE(report.warnings.empty());
  EXPECT_EQ(ReadAll(*log), (std::vector<std::string>{Record(1), Record(2)}));
  // The old segment now ends at its last record.
  const std::string trimmed = Slurp(first_segment);
  EXPECT_EQ(FrameOffsets(trimmed).size(), 2u);
  EXPECT_NE(trimmed.back(), '\0');
}

TEST(FileLog, CrashWhileAPreallocatedSegmentWasCreatedLosesNothing) {
  TempDir dir;
  WriteRecords(dir.path(), 4);
  // A next segment whose header never reached the disk, zeros after it.
  const std::string ghost =
      dir.path() + "/wal-00000000000000000005.log";
  Spit(ghost, std::string(4096, '\0'));
  LogOpenReport report;
  std::unique_ptr<FileLog> log = OpenLog(dir.path(), &report);
  ASSERT_NE(log, nullptr);
  EXPECT_TRUE(report.tail_dropped);  // the empty segment, with a warning
  EXPECT_EQ(ReadAll(*log).size(), 4u);
  EXPECT_EQ(log->next_position(), 5u);
  // Replaced by a proper segment for the records to come.
  EXPECT_EQ(Slurp(ghost).substr(0, 8), "LKWALSEG");
}

TEST(FileLog, TornTailAtEveryByteOffsetIsDroppedWithAWarning) {
  TempDir dir;
  WriteRecords(dir.path(), 10);
  const std::string path = Segments(dir.path()).back();
  const std::string intact = Slurp(path);
  const size_t last = FrameOffsets(intact).back();
  for (size_t cut = last + 1; cut < intact.size(); ++cut) {
    SCOPED_TRACE(absl::StrCat("cut at ", cut));
    Spit(path, intact.substr(0, cut));
    LogOpenReport report;
    std::unique_ptr<FileLog> log = OpenLog(dir.path(), &report);
    ASSERT_NE(log, nullptr);
    EXPECT_TRUE(report.tail_dropped);
    ASSERT_EQ(report.warnings.size(), 1u);
    EXPECT_NE(report.warnings[0].find(path), std::string::npos);
    EXPECT_EQ(report.bytes_dropped, cut - last);
    EXPECT_EQ(ReadAll(*log).size(), 9u);
    EXPECT_EQ(log->next_position(), 10u);
    EXPECT_EQ(Slurp(path).size(), last);  // truncated away
    log.reset();
    // Start the next round from the intact file again.
    for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
      if (e.path() != path) std::filesystem::remove(e.path());
    }
  }
}

TEST(FileLog, TailCutBeforeItsFrameHeaderEndsIsDroppedToo) {
  TempDir dir;
  WriteRecords(dir.path(), 4);
  const std::string path = Segments(dir.path()).back();
  const std::string intact = Slurp(path);
  Spit(path, intact + std::string("\x05\x00\x00", 3));
  LogOpenReport report;
  std::unique_ptr<FileLog> log = OpenLog(dir.path(), &report);
  EXPECT_TRUE(report.tail_dropped);
  EXPECT_EQ(ReadAll(*log).size(), 4u);
}

TEST(FileLog, ZerosAfterTheLastRecordAreTheEndNotDamage) {
  TempDir dir;
  WriteRecords(dir.path(), 4);
  const std::string path = Segments(dir.path()).back();
  const std::string records = Slurp(path);
  Spit(path, records + std::string(4096, '\0'));
  LogOpenReport report;
  std::unique_ptr<FileLog> log = OpenLog(dir.path(), &report);
  EXPECT_FALSE(report.tail_dropped);
  EXPECT_TRUE(report.warnings.empty());
  EXPECT_EQ(ReadAll(*log).size(), 4u);
  EXPECT_EQ(Slurp(path), records);
}

TEST(FileLog, ZerosAfterACutShortRecordAreATornTail) {
  TempDir dir;
  WriteRecords(dir.path(), 4);
  const std::string path = Segments(dir.path()).back();
  const std::string intact = Slurp(path);
  // The last record's frame header survived, its payload did not.
  const size_t last = FrameOffsets(intact).back();
  Spit(path, intact.substr(0, last + kLogFrameHeaderBytes) +
                 std::string(4096, '\0'));
  LogOpenReport report;
  std::unique_ptr<FileLog> log = OpenLog(dir.path(), &report);
  EXPECT_TRUE(report.tail_dropped);
  EXPECT_EQ(ReadAll(*log).size(), 3u);
}

TEST(FileLog, BitFlipInTheTailRecordIsDropped) {
  TempDir dir;
  WriteRecords(dir.path(), 10);
  const std::string path = Segments(dir.path()).back();
  const std::string intact = Slurp(path);
  const size_t last = FrameOffsets(intact).back();
  // Every byte but the 3 length bytes (see log.h: a damaged length of the
  // last record cannot be told from damage before it).
  for (size_t byte = last + 3; byte < intact.size(); ++byte) {
    SCOPED_TRACE(absl::StrCat("byte ", byte));
    std::string damaged = intact;
    damaged[byte] ^= 0x10;
    Spit(path, damaged);
    LogOpenReport report;
    std::unique_ptr<FileLog> log = OpenLog(dir.path(), &report);
    ASSERT_NE(log, nullptr);
    EXPECT_TRUE(report.tail_dropped);
    EXPECT_EQ(ReadAll(*log).size(), 9u);
    log.reset();
    for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
      if (e.path() != path) std::filesystem::remove(e.path());
    }
  }
}

TEST(FileLog, BitFlipBeforeTheTailIsAnErrorNamingFileAndOffset) {
  TempDir dir;
  WriteRecords(dir.path(), 10);
  const std::string path = Segments(dir.path()).back();
  const std::string intact = Slurp(path);
  const std::vector<size_t> frames = FrameOffsets(intact);
  const size_t victim = frames[4];  // record 5 of 10
  for (size_t bit = victim * 8; bit < frames[5] * 8; ++bit) {
    SCOPED_TRACE(absl::StrCat("bit ", bit));
    std::string damaged = intact;
    damaged[bit / 8] ^= static_cast<char>(1 << (bit % 8));
    Spit(path, damaged);
    absl::StatusOr<std::unique_ptr<FileLog>> log =
        FileLog::Open(dir.path(), {}, nullptr);
    ASSERT_FALSE(log.ok());
    EXPECT_EQ(log.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_NE(log.status().message().find(path), std::string::npos);
    EXPECT_NE(log.status().message().find(
                  absl::StrCat("byte offset ", victim)),
              std::string::npos)
        << log.status();
    EXPECT_NE(log.status().message().find("--recover-truncate"),
              std::string::npos);
  }
  Spit(path, intact);
}

TEST(FileLog, DamageInAnEarlierSegmentIsAnErrorEvenAtItsEnd) {
  TempDir dir;
  FileLogOptions small;
  small.segment_bytes = 100;
  WriteRecords(dir.path(), 30, small);
  const std::string first = Segments(dir.path()).front();
  const std::string data = Slurp(first);
  Spit(first, data.substr(0, data.size() - 1));  // torn, but not the tail
  absl::StatusOr<std::unique_ptr<FileLog>> log =
      FileLog::Open(dir.path(), small, nullptr);
  ASSERT_FALSE(log.ok());
  EXPECT_EQ(log.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(log.status().message().find(first), std::string::npos);
}

TEST(FileLog, RecoverTruncateCutsAtTheFirstBadRecord) {
  TempDir dir;
  FileLogOptions small;
  small.segment_bytes = 100;
  WriteRecords(dir.path(), 30, small);
  const std::vector<std::string> segments = Segments(dir.path());
  ASSERT_GE(segments.size(), 3u);
  std::string data = Slurp(segments[1]);
  const std::vector<size_t> frames = FrameOffsets(data);
  data[frames[1] + kLogFrameHeaderBytes] ^= 1;  // second record's payload
  Spit(segments[1], data);

  FileLogOptions truncate = small;
  truncate.truncate_at_corruption = true;
  LogOpenReport report;
  std::unique_ptr<FileLog> log = OpenLog(dir.path(), &report, truncate);
  ASSERT_NE(log, nullptr);
  EXPECT_FALSE(report.warnings.empty());
  // Everything before the bad record survives; nothing after it does.
  const std::vector<std::string> all = ReadAll(*log);
  const size_t kept = all.size();
  for (size_t i = 0; i < kept; ++i) EXPECT_EQ(all[i], Record(i + 1));
  EXPECT_EQ(log->next_position(), kept + 1);
  EXPECT_LT(kept, 30u);
  for (size_t i = 2; i < segments.size(); ++i) {
    EXPECT_FALSE(std::filesystem::exists(segments[i])) << segments[i];
  }
}

TEST(FileLog, FormatVersionMismatchIsAClearError) {
  TempDir dir;
  WriteRecords(dir.path(), 3);
  const std::string path = Segments(dir.path()).back();
  std::string data = Slurp(path);
  data[8] = 2;  // format version field
  Spit(path, data);
  absl::StatusOr<std::unique_ptr<FileLog>> log =
      FileLog::Open(dir.path(), {}, nullptr);
  ASSERT_FALSE(log.ok());
  EXPECT_EQ(log.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(log.status().message().find("format version 2"),
            std::string::npos);
  EXPECT_NE(log.status().message().find("reads version 1"),
            std::string::npos);
}

TEST(FileLog, TornSegmentHeaderOfTheLastSegmentIsRemoved) {
  TempDir dir;
  WriteRecords(dir.path(), 3);
  const std::string torn = dir.path() + "/" + FileLog::SegmentName(4);
  Spit(torn, "LKWAL");
  LogOpenReport report;
  std::unique_ptr<FileLog> log = OpenLog(dir.path(), &report);
  EXPECT_TRUE(report.tail_dropped);
  EXPECT_EQ(ReadAll(*log).size(), 3u);
}

TEST(FileLog, DiscardBeforeDeletesCoveredSegmentsOnly) {
  TempDir dir;
  FileLogOptions small;
  small.segment_bytes = 100;
  WriteRecords(dir.path(), 40, small);
  std::unique_ptr<FileLog> log = OpenLog(dir.path(), nullptr, small);
  ASSERT_TRUE(log->DiscardBefore(20).ok());
  EXPECT_GT(log->first_position(), 1u);
  EXPECT_LE(log->first_position(), 20u);
  const absl::Status discarded =
      log->ReadFrom(1, [](LogPosition, absl::string_view) {
        return absl::OkStatus();
      });
  EXPECT_EQ(discarded.code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(ReadAll(*log, 20).size(), 21u);
  log.reset();
  // Reopening finds the same range.
  log = OpenLog(dir.path(), nullptr, small);
  EXPECT_EQ(ReadAll(*log, 20).size(), 21u);
}

TEST(FileLog, SnapshotBeyondTheEndOfTheLogRestartsNumbering) {
  TempDir dir;
  WriteRecords(dir.path(), 5);
  FileLogOptions options;
  options.min_next_position = 9;  // a snapshot covers 1..8
  LogOpenReport report;
  std::unique_ptr<FileLog> log = OpenLog(dir.path(), &report, options);
  EXPECT_EQ(log->first_position(), 9u);
  EXPECT_EQ(log->next_position(), 9u);
  ASSERT_TRUE(log->Append({"nine"}).ok());
  EXPECT_EQ(ReadAll(*log, 9), std::vector<std::string>{"nine"});
}

TEST(FileLog, FailedWriteOrSyncFailsTheLogForGood) {
  TempDir dir;
  auto plan = std::make_shared<testing::FaultPlan>();
  FileLogOptions options;
  options.open_file = testing::FaultyFactory(plan);
  std::unique_ptr<FileLog> log = OpenLog(dir.path(), nullptr, options);
  plan->syncs_ok = plan->syncs.load();  // the next sync fails
  ASSERT_TRUE(log->Append({"a"}).ok());
  const absl::Status failed = log->Sync();
  EXPECT_EQ(failed.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(failed.message().find("Input/output error"),
            std::string::npos);
  EXPECT_EQ(log->Append({"b"}).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(log->Sync().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(log->health().code(), absl::StatusCode::kUnavailable);
}

TEST(FileLog, FullDiskRefusesAnAppendAndLeavesTheLogAsItWas) {
  TempDir dir;
  auto plan = std::make_shared<testing::FaultPlan>();
  plan->out_of_space = true;
  FileLogOptions options;
  options.open_file = testing::FaultyFactory(plan);
  std::unique_ptr<FileLog> log = OpenLog(dir.path(), nullptr, options);
  ASSERT_TRUE(log->Append({"a"}).ok());
  plan->writes_ok = plan->writes.load();  // the disk is full now
  const absl::Status full = log->Append({"bb", "cc"});
  EXPECT_TRUE(IsOutOfSpace(full)) << full;
  EXPECT_TRUE(log->health().ok());
  EXPECT_EQ(log->next_position(), 2u);
  EXPECT_TRUE(IsOutOfSpace(log->Append({"bb", "cc"})));

  plan->writes_ok = 1 << 30;  // space is freed
  ASSERT_TRUE(log->Append({"bb", "cc"}).ok());
  ASSERT_TRUE(log->Sync().ok());
  EXPECT_EQ(ReadAll(*log), (std::vector<std::string>{"a", "bb", "cc"}));
  log.reset();
  // The half-written attempts were overwritten: nothing torn, nothing twice.
  LogOpenReport report;
  log = OpenLog(dir.path(), &report);
  EXPECT_FALSE(report.tail_dropped);
  EXPECT_EQ(ReadAll(*log), (std::vector<std::string>{"a", "bb", "cc"}));
}

TEST(FileLog, FullDiskAtASegmentRollKeepsAppendingToTheOldSegmentLater) {
  TempDir dir;
  auto plan = std::make_shared<testing::FaultPlan>();
  plan->out_of_space = true;
  FileLogOptions options;
  options.segment_bytes = 64;
  options.open_file = testing::FaultyFactory(plan);
  std::unique_ptr<FileLog> log = OpenLog(dir.path(), nullptr, options);
  ASSERT_TRUE(log->Append({std::string(60, 'a')}).ok());  // segment full
  plan->writes_ok = plan->writes.load();  // the new segment's header fails
  EXPECT_TRUE(IsOutOfSpace(log->Append({"b"})));
  EXPECT_TRUE(log->health().ok());
  EXPECT_EQ(CountFiles(dir.path(), "wal-"), 1u);  // the half-made one is gone

  plan->writes_ok = 1 << 30;
  ASSERT_TRUE(log->Append({"b"}).ok());
  ASSERT_TRUE(log->Sync().ok());
  EXPECT_EQ(CountFiles(dir.path(), "wal-"), 2u);
  log.reset();
  LogOpenReport report;
  log = OpenLog(dir.path(), &report);
  EXPECT_EQ(ReadAll(*log),
            (std::vector<std::string>{std::string(60, 'a'), "b"}));
}

// A preallocated log with 100-byte records in 4 KiB segments.
FileLogOptions PreallocatedSmallSegments(
    std::shared_ptr<testing::FaultPlan> plan) {
  FileLogOptions options;
  options.segment_bytes = 4096;
  options.preallocate_segments = true;
  options.open_file = testing::FaultyFactory(std::move(plan));
  return options;
}

// A 100-byte record, its letter from `i`.
std::string Filler(size_t i) {
  return std::string(100, static_cast<char>('a' + i % 26));
}

bool NextSegmentPrepared(const std::string& dir) {
  return std::filesystem::exists(dir + "/next-wal-segment.tmp");
}

TEST(FileLog, TheNextSegmentIsPreparedAQuarterSegmentAheadAndTakenAtTheRoll) {
  TempDir dir;
  auto plan = std::make_shared<testing::FaultPlan>();
  std::unique_ptr<FileLog> log =
      OpenLog(dir.path(), nullptr, PreallocatedSmallSegments(plan));
  std::vector<std::string> written;
  while (!NextSegmentPrepared(dir.path())) {
    written.push_back(Filler(written.size()));
    ASSERT_TRUE(log->Append({written.back()}).ok());
    ASSERT_LT(written.size(), 40u) << "no next segment was prepared";
  }
  // Prepared once a quarter segment or less was left.
  EXPECT_GE(written.size() * 108 + kLogSegmentHeaderBytes, 3u * 4096 / 4);
  EXPECT_EQ(Segments(dir.path()).size(), 1u);
  EXPECT_TRUE(log->room().ok());
  while (NextSegmentPrepared(dir.path())) {
    written.push_back(Filler(written.size()));
    ASSERT_TRUE(log->Append({written.back()}).ok());
  }
  // The roll came before the record that would have overflowed the
  // preallocated blocks.
  const std::vector<std::string> segments = Segments(dir.path());
  ASSERT_EQ(segments.size(), 2u);
  EXPECT_EQ(std::filesystem::file_size(segments[0]), 4096u);
  ASSERT_TRUE(log->Sync().ok());
  EXPECT_EQ(ReadAll(*log), written);
  log.reset();
  log = OpenLog(dir.path());
  EXPECT_EQ(ReadAll(*log), written);
}

TEST(FileLog, RoomIsShortOnceTheDiskRefusesTheNextSegmentAndTheRestStillGoesIn) {
  TempDir dir;
  auto plan = std::make_shared<testing::FaultPlan>();
  std::unique_ptr<FileLog> log =
      OpenLog(dir.path(), nullptr, PreallocatedSmallSegments(plan));
  plan->preallocations_ok = plan->preallocations.load();  // the disk is full
  std::vector<std::string> written;
  while (log->room().ok()) {
    written.push_back(Filler(written.size()));
    ASSERT_TRUE(log->Append({written.back()}).ok());
    ASSERT_LT(written.size(), 40u) << "room never ran short";
  }
  EXPECT_TRUE(IsOutOfSpace(log->room())) << log->room();
  EXPECT_NE(log->room().message().find("No space left"), std::string::npos);
  EXPECT_TRUE(log->health().ok());
  // What the current segment still owns takes the records in flight.
  for (int i = 0; i < 5; ++i) {
    written.push_back(std::string(100, 'z'));
    ASSERT_TRUE(log->Append({written.back()}).ok());
  }
  EXPECT_TRUE(IsOutOfSpace(log->ReserveRoom()));

  plan->preallocations_ok = 1 << 30;  // space is freed
  EXPECT_TRUE(log->ReserveRoom().ok());
  EXPECT_TRUE(log->room().ok());
  EXPECT_TRUE(NextSegmentPrepared(dir.path()));
  for (int i = 0; i < 20; ++i) {
    written.push_back(std::string(100, 'n'));
    ASSERT_TRUE(log->Append({written.back()}).ok());
  }
  ASSERT_TRUE(log->Sync().ok());
  log.reset();
  EXPECT_FALSE(NextSegmentPrepared(dir.path()));  // removed with the log
  log = OpenLog(dir.path());
  EXPECT_EQ(ReadAll(*log), written);
}

TEST(FileLog, ASegmentStartedWithoutRoomIsShortUntilItsBlocksAreTaken) {
  TempDir dir;
  auto plan = std::make_shared<testing::FaultPlan>();
  plan->preallocations_ok = 0;
  std::unique_ptr<FileLog> log =
      OpenLog(dir.path(), nullptr, PreallocatedSmallSegments(plan));
  EXPECT_TRUE(IsOutOfSpace(log->room())) << log->room();
  ASSERT_TRUE(log->Append({"still goes in"}).ok());
  plan->preallocations_ok = 1 << 30;
  EXPECT_TRUE(log->ReserveRoom().ok());
  ASSERT_TRUE(log->Append({"after"}).ok());
  ASSERT_TRUE(log->Sync().ok());
  EXPECT_EQ(std::filesystem::file_size(Segments(dir.path()).front()), 4096u);
  log.reset();
  log = OpenLog(dir.path());
  EXPECT_EQ(ReadAll(*log),
            (std::vector<std::string>{"still goes in", "after"}));
}

// A file-size limit is no full disk: the log appends as it would without
// preallocation, its room is not short, and the write that fails fails it.
TEST(FileLog, APreallocationErrorOtherThanAFullDiskLeavesTheRoomAlone) {
  TempDir dir;
  auto plan = std::make_shared<testing::FaultPlan>();
  plan->preallocations_ok = 0;
  plan->preallocations_find_no_space = false;
  std::unique_ptr<FileLog> log =
      OpenLog(dir.path(), nullptr, PreallocatedSmallSegments(plan));
  ASSERT_NE(log, nullptr);
  EXPECT_TRUE(log->room().ok()) << log->room();
  std::vector<std::string> written;
  for (size_t i = 0; i < 100; ++i) {
    written.push_back(Filler(i));
    ASSERT_TRUE(log->Append({written.back()}).ok());
    ASSERT_TRUE(log->room().ok()) << log->room();
  }
  EXPECT_TRUE(log->ReserveRoom().ok());
  EXPECT_TRUE(log->health().ok());
  ASSERT_TRUE(log->Sync().ok());
  EXPECT_GT(Segments(dir.path()).size(), 1u);
  EXPECT_EQ(ReadAll(*log), written);
}

TEST(FileLog, ANextSegmentLeftByAnEarlierProcessIsRemovedOnOpen) {
  TempDir dir;
  WriteRecords(dir.path(), 3);
  Spit(dir.path() + "/next-wal-segment.tmp", std::string(4096, '\0'));
  std::unique_ptr<FileLog> log = OpenLog(dir.path());
  EXPECT_FALSE(NextSegmentPrepared(dir.path()));
  EXPECT_EQ(ReadAll(*log).size(), 3u);
}

TEST(FileLog, GrowingSegmentsAlwaysHaveRoom) {
  TempDir dir;
  auto plan = std::make_shared<testing::FaultPlan>();
  FileLogOptions options = PreallocatedSmallSegments(plan);
  options.preallocate_segments = false;
  plan->preallocations_ok = 0;
  std::unique_ptr<FileLog> log = OpenLog(dir.path(), nullptr, options);
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(log->Append({Record(i)}).ok());
  EXPECT_TRUE(log->room().ok());
  EXPECT_FALSE(NextSegmentPrepared(dir.path()));
}

TEST(FileLog, OversizedRecordIsRefusedAndAppendsNothing) {
  TempDir dir;
  std::unique_ptr<FileLog> log = OpenLog(dir.path());
  EXPECT_EQ(log->Append({"ok", std::string(kMaxLogRecordBytes, 'x')}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(log->next_position(), 1u);
}

TEST(DirLock, SecondLockerIsRefusedWithTheHoldersPid) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<DirLock>> first = DirLock::Acquire(dir.path());
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<std::unique_ptr<DirLock>> second =
      DirLock::Acquire(dir.path());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(second.status().message().find(absl::StrCat("pid ", ::getpid())),
            std::string::npos)
      << second.status();
  first->reset();
  EXPECT_TRUE(DirLock::Acquire(dir.path()).ok());
}

}  // namespace
}  // namespace leasekeeper::storage
