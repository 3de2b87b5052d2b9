// Log: the write-ahead log of the ordered operation stream, and FileLog,
// its implementation as segment files (wal-<first position>.log) in a data
// directory. A record is an opaque byte string (an operation codec entry);
// its position is its 1-based index in the log's history and never changes.
// FileLog::Open applies the recovery rules of docs/design/durable-path.md
// (a torn tail is dropped; corruption before it is DataLoss unless
// truncate_at_corruption), which also gives the format.
//
// Thread-safety: every FileLog method is thread-safe (one mutex); Append and
// Sync are meant for one writer thread, ReadFrom and DiscardBefore may run
// beside it.
//
// Invariants:
//  1. The records on disk are exactly [first_position(), next_position()).
//  2. After Sync() returns OK, every record appended before it survives a
//     crash (power loss included) and is read back by the next Open.
//  3. After a write or sync failed, every later Append and Sync fails;
//     except for a full disk (IsOutOfSpace), which leaves the log as it was
//     before that Append, so that it can be retried once there is room.
//  4. With preallocated segments, room() is OK while the log owns the
//     blocks for at least a quarter segment of further records (the rest
//     of the current segment, and the next one prepared in advance), so a
//     caller that stops taking new work when room() fails still has its
//     records in flight written.
#ifndef LEASEKEEPER_STORAGE_LOG_H_
#define LEASEKEEPER_STORAGE_LOG_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "storage/file.h"

namespace leasekeeper::storage {

using LogPosition = uint64_t;

inline constexpr uint32_t kLogFormatVersion = 1;
inline constexpr size_t kLogSegmentHeaderBytes = 28;
inline constexpr size_t kLogFrameHeaderBytes = 8;
// A record's payload must be shorter than this (24 bits of length).
inline constexpr size_t kMaxLogRecordBytes = (size_t{1} << 24) - 1;

// Called for each record read; a non-OK return stops the read and is
// returned by it.
using LogVisitor =
    std::function<absl::Status(LogPosition position, absl::string_view record)>;

class Log {
 public:
  virtual ~Log() = default;

  // Appends `records` at positions next_position(), next_position() + 1, ...
  // and hands them to the OS; they are durable only after Sync().
  // Outcomes: OK; InvalidArgument if a record is kMaxLogRecordBytes or
  // longer (nothing appended); ResourceExhausted (IsOutOfSpace) if the
  // disk is full (nothing appended, the log stays healthy: retry later);
  // Unavailable if writing failed otherwise (the log is failed, invariant
  // 3). Cost: O(bytes), one write(2).
  virtual absl::Status Append(absl::Span<const std::string> records) = 0;

  // Makes every appended record durable. OK or Unavailable (the log is
  // failed). Cost: one fdatasync.
  virtual absl::Status Sync() = 0;

  // Calls visit for every record at position >= from, in order, up to the
  // records appended when the call started. Outcomes: OK; OutOfRange if
  // `from` < first_position() (discarded); DataLoss naming file and offset
  // if a record no longer checks out; or the first non-OK of visit.
  // REQUIRES: from >= 1. Cost: reads every segment from the one holding
  // `from`.
  virtual absl::Status ReadFrom(LogPosition from,
                                const LogVisitor& visit) const = 0;

  // Deletes whole segments whose records all lie before `position` (a
  // snapshot covers them); the segment being written is kept. OK, or the
  // error of deleting a file (the log stays usable).
  virtual absl::Status DiscardBefore(LogPosition position) = 0;

  // The oldest record kept; == next_position() when the log is empty.
  virtual LogPosition first_position() const = 0;
  // The position the next appended record gets.
  virtual LogPosition next_position() const = 0;
};

struct FileLogOptions {
  // A segment is rolled once it reaches this size.
  uint64_t segment_bytes = uint64_t{8} << 20;
  // Write a new segment full of zeros (segment_bytes) before records go in,
  // so that records are written over blocks the file already has: a sync
  // then flushes the data alone, without a journal commit for the file's
  // new size, and a full disk is seen a quarter segment ahead (room(),
  // invariant 4). The next segment is prepared (next-wal-segment.tmp) once
  // the current one is three quarters full; a batch that would overflow
  // the current segment starts the next. Costs a write and sync of
  // segment_bytes per segment, on the writing thread (bench/README.md has
  // both figures). If the disk has no room for it, records are still
  // appended as they fit, and a full disk refuses Appends as it would
  // without it.
  bool preallocate_segments = false;
  // --recover-truncate: cut the log at the first bad record instead of
  // refusing to open (see the recovery rules above).
  bool truncate_at_corruption = false;
  // New records are numbered from at least here (the position after the
  // latest snapshot). If the log ends before it, the log's old segments are
  // all covered by that snapshot and are deleted, so positions stay
  // gap-free.
  LogPosition min_next_position = 1;
  // How segment files are opened for writing; tests inject faults here.
  WritableFileFactory open_file = OpenPosixWritableFile;
};

// What FileLog::Open found and did.
struct LogOpenReport {
  size_t segments = 0;           // segment files read
  uint64_t bytes_scanned = 0;
  LogPosition first_position = 1;
  LogPosition next_position = 1;
  bool tail_dropped = false;
  uint64_t bytes_dropped = 0;    // torn tail, or everything cut
  std::vector<std::string> warnings;  // human-readable, one per event
};

class FileLog final : public Log {
 public:
  // Scans every segment in `dir` (which must exist), applies the recovery
  // rules above and starts a new segment for appends.
  // Outcomes: the log (and *report filled in); DataLoss for corruption
  // before the tail (file and offset in the message); FailedPrecondition
  // for a format version this build does not read; another error for I/O.
  // Cost: reads every segment once.
  static absl::StatusOr<std::unique_ptr<FileLog>> Open(
      const std::string& dir, FileLogOptions options, LogOpenReport* report);

  ~FileLog() override;
  FileLog(const FileLog&) = delete;
  FileLog& operator=(const FileLog&) = delete;

  absl::Status Append(absl::Span<const std::string> records) override;
  absl::Status Sync() override;
  absl::Status ReadFrom(LogPosition from,
                        const LogVisitor& visit) const override;
  absl::Status DiscardBefore(LogPosition position) override;
  LogPosition first_position() const override;
  LogPosition next_position() const override;

  // The error that failed the log, OK while healthy.
  absl::Status health() const;

  // OK while the log owns room for a quarter segment more (invariant 4;
  // always OK without preallocate_segments); else the IsOutOfSpace error
  // of the disk that refused the room: Appends still go in while the
  // room lasts. Cost: O(1), no I/O.
  absl::Status room() const;
  // Tries again to take the room room() lacks (preallocates the current
  // or the next segment); returns room(). A write error other than a full
  // disk fails the log (invariant 3). Cost: up to a write and sync of
  // segment_bytes.
  absl::Status ReserveRoom();

  // The segment file name for a first position ("wal-000...0001.log").
  static std::string SegmentName(LogPosition first);

 private:
  struct Segment {
    std::string path;
    LogPosition first = 1;
    uint64_t count = 0;
    uint64_t bytes = 0;  // valid bytes, header included
  };

  FileLog(std::string dir, FileLogOptions options)
      : dir_(std::move(dir)), options_(std::move(options)) {}

  // Open's steps. RecoverSegment checks one segment file (`last`: the
  // newest) under the recovery rules above: keeps its good records, drops
  // a torn tail, or under truncate_at_corruption cuts the log there (sets
  // `cut`; later segments are then removed). Outcomes: OK; DataLoss for
  // corruption it may not repair; FailedPrecondition for an unknown format
  // version; the I/O error.
  absl::Status RecoverSegment(LogPosition first, const std::string& path,
                              bool last, bool& cut, LogOpenReport& report)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // RecoverSegment's part once the header checked out: scans the records.
  absl::Status KeepSegmentRecords(LogPosition first, const std::string& path,
                                  bool last, absl::string_view data, bool& cut,
                                  LogOpenReport& report)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops segments the snapshot covers and an empty last one, syncs what
  // the previous process left unsynced, starts the segment for appends.
  absl::Status StartAfterRecovery(LogOpenReport& report)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Starts the segment for appends at `first`: the one prepared ahead if
  // there is one, else a new file.
  absl::Status StartSegment(LogPosition first)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes the room invariant 4 asks for, if it can; sets room_.
  void EnsureRoom() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Creates and preallocates next-wal-segment.tmp as next_file_.
  absl::Status PrepareNextSegment() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Append's step when the current segment is full: syncs and closes it and
  // starts the next. Outcomes: OK; IsOutOfSpace (the current segment stays
  // the one appended to); the error that failed the log.
  absl::Status RollSegment() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Fail(absl::Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string dir_;
  const FileLogOptions options_;
  mutable absl::Mutex mu_;
  std::vector<Segment> segments_ ABSL_GUARDED_BY(mu_);  // oldest first
  std::unique_ptr<WritableFile> file_ ABSL_GUARDED_BY(mu_);  // last segment
  bool file_preallocated_ ABSL_GUARDED_BY(mu_) = false;
  // The next segment, preallocated ahead under a temporary name.
  std::unique_ptr<WritableFile> next_file_ ABSL_GUARDED_BY(mu_);
  absl::Status room_ ABSL_GUARDED_BY(mu_);  // see room()
  absl::Status failed_ ABSL_GUARDED_BY(mu_);
};

// Frames one record (exposed for tests that build damaged logs).
void AppendLogFrame(absl::string_view payload, std::string& out);

}  // namespace leasekeeper::storage

#endif  // LEASEKEEPER_STORAGE_LOG_H_
