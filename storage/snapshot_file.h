// SnapshotFile: a CoreSnapshot and the server's ServerState
// (server_records.h) on disk as DIR/snap-<covered position>.snap: the state
// after log records 1..covered, with a format version and checksums.
// Writing is atomic (a .tmp file, fsynced, renamed, the directory fsynced);
// reading checks header, version, size, checksum and structure before a
// byte is trusted (whether the state is consistent is
// StateMachine::Restore's to check). The format:
// docs/design/durable-path.md ("Snapshot files").
//
// Thread-safety: pure functions of their arguments and the file system.
#ifndef LEASEKEEPER_STORAGE_SNAPSHOT_FILE_H_
#define LEASEKEEPER_STORAGE_SNAPSHOT_FILE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/snapshot.h"
#include "storage/server_records.h"
#include "storage/log.h"

namespace leasekeeper::storage {

// Version 4 added the holder labels to the server state; a version 3 file
// reads with none.
inline constexpr uint32_t kSnapshotFormatVersion = 4;
// The oldest version ReadSnapshotFile still reads.
inline constexpr uint32_t kOldestSnapshotFormatVersion = 1;
inline constexpr size_t kSnapshotHeaderBytes = 40;

struct SnapshotFileInfo {
  LogPosition covered = 0;
  uint64_t bytes = 0;  // whole file
  uint32_t payload_crc32c = 0;  // as the header holds it
};

// A whole snapshot file as it is on disk (for sending it to another node).
struct SnapshotFileBytes {
  SnapshotFileInfo info;
  std::string bytes;
};

// Encodes / decodes the core's part of the payload alone (tests,
// benchmarks). `version` < 3 writes the layout of an older build (tests of
// reading old files); REQUIRES: then no lock has a capacity.
void EncodeSnapshotPayload(const CoreSnapshot& snapshot, std::string& out,
                           uint32_t version = kSnapshotFormatVersion);
// DataLoss if malformed.
absl::Status DecodeSnapshotPayload(absl::string_view payload,
                                   CoreSnapshot& snapshot);

// "snap-00000000000000000042.snap".
std::string SnapshotFileName(LogPosition covered);

// The snapshot files among the names of a directory's entries, as
// (covered position, name), newest first. O(n log n).
std::vector<std::pair<LogPosition, std::string>> SnapshotFilesIn(
    const std::vector<std::string>& names);

// Writes `snapshot` and `server`, covering log positions 1..covered, into
// `dir` under SnapshotFileName(covered), atomically (see above), then,
// unless keep_newest is 0, deletes every snapshot in `dir` but the newest
// keep_newest (one place for the retention of whoever writes snapshots).
// Outcomes: OK with the file's size; an I/O error of the write (the final
// name is then untouched; a .tmp may remain) or of a deletion (the new file
// is then in place). Cost: O(size of the state) plus two fsyncs.
absl::StatusOr<SnapshotFileInfo> WriteSnapshotFile(
    const std::string& dir, const CoreSnapshot& snapshot, LogPosition covered,
    const ServerState& server = ServerState{}, size_t keep_newest = 0);

// Writes the bytes of a whole snapshot file (one received from another
// node) into `dir` under SnapshotFileName(covered), atomically and with
// the deletions of WriteSnapshotFile. REQUIRES: DecodeSnapshotFileBytes
// accepted `file` and said it covers `covered`. Outcomes: those of
// WriteSnapshotFile. Cost: O(size) plus two fsyncs.
absl::Status WriteSnapshotFileBytes(const std::string& dir,
                                    LogPosition covered,
                                    absl::string_view file,
                                    size_t keep_newest);

// Checks the bytes of a whole snapshot file (`path` names it in messages)
// and, unless `snapshot` is null, decodes them into *snapshot and, unless
// null, *server (empty for a version 1 file). With a null `snapshot` only
// the header, the size and the payload checksum are checked.
// Outcomes: OK with what it covers; FailedPrecondition for a format
// version this build does not read (the message names them); DataLoss for
// a bad magic, header, size or checksum, or a malformed payload (the
// message names the file and byte offset).
absl::StatusOr<SnapshotFileInfo> DecodeSnapshotFileBytes(
    absl::string_view data, absl::string_view path, CoreSnapshot* snapshot,
    ServerState* server);

// Reads and checks the snapshot at `path` (DecodeSnapshotFileBytes).
// Outcomes: those of DecodeSnapshotFileBytes, and NotFound.
absl::StatusOr<SnapshotFileInfo> ReadSnapshotFile(
    const std::string& path, CoreSnapshot* snapshot,
    ServerState* server = nullptr);

// The bytes of the newest snapshot in `dir` whose header, size and
// checksum check out (not decoded), for sending. A damaged one (or one
// whose header names another position than its file name) falls back to
// the next older, its description appended to *damaged unless null; one
// deleted while being read is skipped. Outcomes: the bytes, or nullopt
// when none is usable; FailedPrecondition for a format version this build
// does not read; I/O errors. Cost: reads each file until one checks out.
absl::StatusOr<std::optional<SnapshotFileBytes>> ReadNewestSnapshotBytes(
    const std::string& dir, std::vector<std::string>* damaged = nullptr);

// Recovery's choice of snapshot in `dir`, given the names of its entries
// (ListDirectory): removes the .tmp files of interrupted writes, then reads
// the newest snapshot that checks out into `snapshot` and `server`; a
// damaged one (or one whose header names another position than its file
// name) falls back to the next older, its description appended to
// *damaged unless null. Outcomes: the info, or nullopt when none is usable
// (`snapshot` and `server` are then empty); FailedPrecondition for a format
// version this build does not read; the I/O error of a removal.
// Cost: reads each file until one checks out.
absl::StatusOr<std::optional<SnapshotFileInfo>> ReadNewestSnapshotFile(
    const std::string& dir, const std::vector<std::string>& names,
    CoreSnapshot& snapshot, ServerState& server,
    std::vector<std::string>* damaged = nullptr);

}  // namespace leasekeeper::storage

#endif  // LEASEKEEPER_STORAGE_SNAPSHOT_FILE_H_
