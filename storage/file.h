// File: the few POSIX file operations storage needs, behind one small
// interface for the file the log appends to, so tests can inject a failing
// write or fsync (ENOSPC, EIO) without a full disk.
//
// Errors are absl::Status values made from errno and name the path. A
// failed write or sync is reported as Unavailable: the data is not durable
// and, after a failed fsync, the page cache may have dropped it (Linux clears
// the error once reported), so a caller must treat the file as lost from
// that point and never retry the sync to "make it durable".
//
// Thread-safety: a WritableFile has one user at a time; the free functions
// are thread-safe.
#ifndef LEASEKEEPER_STORAGE_FILE_H_
#define LEASEKEEPER_STORAGE_FILE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace leasekeeper::storage {

class WritableFile {
 public:
  virtual ~WritableFile() = default;
  // Writes all of `data` after what was appended before (handles short
  // writes and EINTR), over any preallocated zeros. On failure part of
  // `data` may have been written: ResourceExhausted when the disk or the
  // quota is full (IsOutOfSpace), Unavailable for any other error.
  virtual absl::Status Append(absl::string_view data) = 0;
  // The next Append writes at `offset`, which must not be past the end of
  // what was appended; the bytes after it stay until overwritten. For a
  // failed Append, so that its retry writes the same bytes in the same
  // place. FailedPrecondition if closed or `offset` is past the end.
  virtual absl::Status RewindTo(uint64_t offset) = 0;
  // Makes the file at least `size` bytes long by writing zero bytes after
  // its end; the next Append still goes right after the previous one.
  // Writing over real zeros later needs no change to the file's size or
  // block map, so Sync after such an Append flushes the data alone (no
  // journal commit): that is what it is for. Unavailable on failure.
  virtual absl::Status Preallocate(uint64_t size) = 0;
  // fdatasync: everything appended so far is durable. Unavailable on
  // failure. Cost: one disk flush.
  virtual absl::Status Sync() = 0;
  // Releases the descriptor; later calls are errors. Idempotent.
  virtual absl::Status Close() = 0;
  virtual const std::string& path() const = 0;
};

// Whether a write failed only because the disk (or the quota) is full:
// the file is intact and the write may be retried once there is space.
bool IsOutOfSpace(const absl::Status& status);

// Creates or opens a file for appending (after its current end).
// `truncate`: start empty.
using WritableFileFactory =
    std::function<absl::StatusOr<std::unique_ptr<WritableFile>>(
        const std::string& path, bool truncate)>;

// The real thing (open(2) with O_WRONLY|O_CREAT|O_CLOEXEC, mode 0644;
// pwrite(2) at the append offset).
absl::StatusOr<std::unique_ptr<WritableFile>> OpenPosixWritableFile(
    const std::string& path, bool truncate);

// The whole file. NotFound if it does not exist.
absl::StatusOr<std::string> ReadWholeFile(const std::string& path);

// fsync of a directory, making renames and creations in it durable.
absl::Status SyncDirectory(const std::string& dir);

// fsync of an existing file (data a previous process wrote but did not
// sync).
absl::Status SyncFile(const std::string& path);

// Cuts `path` to `size` bytes and fsyncs it.
absl::Status TruncateFile(const std::string& path, uint64_t size);

// mkdir -p (mode 0755).
absl::Status CreateDirectories(const std::string& dir);

// Names (not paths) of the entries of `dir`, excluding "." and "..".
absl::StatusOr<std::vector<std::string>> ListDirectory(const std::string& dir);

absl::Status RemoveFile(const std::string& path);

// rename(2) of `from` to `to` within one directory, then fsync of `dir`.
absl::Status RenameDurably(const std::string& dir, const std::string& from,
                           const std::string& to);

// An exclusive, advisory lock on a data directory: flock(LOCK_EX|LOCK_NB)
// on DIR/LOCK, held until destruction (or process death: the kernel drops
// it, so a crashed daemon never leaves a stale lock). The holder's pid is
// written into the file for the error message of the next comer. flock
// locks belong to the open file, so a second DirLock in the same process is
// refused too.
class DirLock {
 public:
  // Outcomes: the lock; FailedPrecondition "data dir DIR is in use by
  // another process (pid N)" if someone holds it; another error if DIR/LOCK
  // cannot be created.
  static absl::StatusOr<std::unique_ptr<DirLock>> Acquire(
      const std::string& dir);
  ~DirLock();
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

 private:
  explicit DirLock(int fd) : fd_(fd) {}
  int fd_;
};

// "what path: strerror(errno)" as a Status of the errno's code.
absl::Status ErrnoError(absl::string_view what, const std::string& path,
                        int error_number);

}  // namespace leasekeeper::storage

#endif  // LEASEKEEPER_STORAGE_FILE_H_
