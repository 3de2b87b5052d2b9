#include "storage/file.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace leasekeeper::storage {
namespace {

class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(int fd, std::string path, uint64_t end)
      : fd_(fd), path_(std::move(path)), append_at_(end) {}
  ~PosixWritableFile() override { Close().IgnoreError(); }

  absl::Status Append(absl::string_view data) override {
    return WriteAt(data, append_at_);
  }

  absl::Status RewindTo(uint64_t offset) override {
    if (fd_ < 0) return absl::FailedPreconditionError("file closed: " + path_);
    if (offset > append_at_) {
      return absl::FailedPreconditionError(absl::StrCat(
          "cannot rewind ", path_, " to ", offset, " past its end at ",
          append_at_));
    }
    append_at_ = offset;
    return absl::OkStatus();
  }

  // Once per log segment, so the size is asked of the file rather than
  // tracked on every Append.
  absl::Status Preallocate(uint64_t size) override {
    if (fd_ < 0) return absl::FailedPreconditionError("file closed: " + path_);
    struct stat st;
    if (::fstat(fd_, &st) != 0) return ErrnoError("stat", path_, errno);
    static constexpr size_t kChunk = 1 << 20;
    const std::string zeros(kChunk, '\0');
    for (uint64_t at = static_cast<uint64_t>(st.st_size); at < size;) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, size - at));
      if (absl::Status written = WriteAt(absl::string_view(zeros).substr(0, n), at);
          !written.ok()) {
        return written;
      }
    }
    return absl::OkStatus();
  }

  absl::Status Sync() override {
    if (fd_ < 0) return absl::FailedPreconditionError("file closed: " + path_);
    if (::fdatasync(fd_) != 0) {
      return absl::UnavailableError(
          absl::StrCat("fsync of ", path_, " failed: ", std::strerror(errno)));
    }
    return absl::OkStatus();
  }

  absl::Status Close() override {
    if (fd_ < 0) return absl::OkStatus();
    const int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0) return ErrnoError("close", path_, errno);
    return absl::OkStatus();
  }

  const std::string& path() const override { return path_; }

 private:
  // Writes all of `data` at `offset`, which ends up just after what was
  // written (also when it fails part-way).
  absl::Status WriteAt(absl::string_view data, uint64_t& offset) {
    if (fd_ < 0) return absl::FailedPreconditionError("file closed: " + path_);
    while (!data.empty()) {
      const ssize_t n = ::pwrite(fd_, data.data(), data.size(),
                                 static_cast<off_t>(offset));
      if (n < 0) {
        if (errno == EINTR) continue;
        const int error_number = errno;
        std::string message = absl::StrCat("write to ", path_, " failed: ",
                                           std::strerror(error_number));
        if (error_number == ENOSPC || error_number == EDQUOT) {
          return absl::ResourceExhaustedError(std::move(message));
        }
        return absl::UnavailableError(std::move(message));
      }
      data.remove_prefix(static_cast<size_t>(n));
      offset += static_cast<uint64_t>(n);
    }
    return absl::OkStatus();
  }

  int fd_;
  std::string path_;
  uint64_t append_at_;  // where the next Append writes
};

}  // namespace

bool IsOutOfSpace(const absl::Status& status) {
  return absl::IsResourceExhausted(status);
}

absl::Status ErrnoError(absl::string_view what, const std::string& path,
                        int error_number) {
  return absl::ErrnoToStatus(error_number,
                             absl::StrCat(what, " ", path, ": ",
                                          std::strerror(error_number)));
}

absl::StatusOr<std::unique_ptr<WritableFile>> OpenPosixWritableFile(
    const std::string& path, bool truncate) {
  const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (truncate ? O_TRUNC : 0);
  const int fd = ::open(path.c_str(), flags, 0644);
  if (fd < 0) return ErrnoError("open", path, errno);
  const off_t end = ::lseek(fd, 0, SEEK_END);
  if (end < 0) {
    const int error_number = errno;
    ::close(fd);
    return ErrnoError("seek to the end of", path, error_number);
  }
  return std::unique_ptr<WritableFile>(
      new PosixWritableFile(fd, path, static_cast<uint64_t>(end)));
}

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open", path, errno);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    return ErrnoError("stat", path, e);
  }
  std::string data;
  data.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::read(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      ::close(fd);
      return ErrnoError("read", path, e);
    }
    if (n == 0) break;  // shrank meanwhile
    done += static_cast<size_t>(n);
  }
  data.resize(done);
  // A file that grew meanwhile: read the rest too.
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    data.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return data;
}

absl::Status SyncDirectory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open directory", dir, errno);
  const int rc = ::fsync(fd);
  const int e = errno;
  ::close(fd);
  if (rc != 0) {
    return absl::UnavailableError(
        absl::StrCat("fsync of directory ", dir, " failed: ", std::strerror(e)));
  }
  return absl::OkStatus();
}

absl::Status SyncFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open", path, errno);
  const int rc = ::fsync(fd);
  const int e = errno;
  ::close(fd);
  if (rc != 0) {
    return absl::UnavailableError(
        absl::StrCat("fsync of ", path, " failed: ", std::strerror(e)));
  }
  return absl::OkStatus();
}

absl::Status TruncateFile(const std::string& path, uint64_t size) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open", path, errno);
  if (::ftruncate(fd, static_cast<off_t>(size)) != 0) {
    const int e = errno;
    ::close(fd);
    return ErrnoError("truncate", path, e);
  }
  const int rc = ::fsync(fd);
  const int e = errno;
  ::close(fd);
  if (rc != 0) return ErrnoError("fsync", path, e);
  return absl::OkStatus();
}

absl::Status CreateDirectories(const std::string& dir) {
  if (dir.empty()) return absl::InvalidArgumentError("empty directory name");
  std::string prefix;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    prefix = dir.substr(0, pos);
    if (prefix.empty()) continue;
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      return ErrnoError("mkdir", prefix, errno);
    }
  }
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) return ErrnoError("stat", dir, errno);
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(dir, " exists and is not a directory"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> ListDirectory(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return ErrnoError("opendir", dir, errno);
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(d)) {
    const absl::string_view name(e->d_name);
    if (name == "." || name == "..") continue;
    names.emplace_back(name);
  }
  ::closedir(d);
  return names;
}

absl::Status RemoveFile(const std::string& path) {
  if (::unlink(path.c_str()) != 0) return ErrnoError("unlink", path, errno);
  return absl::OkStatus();
}

absl::Status RenameDurably(const std::string& dir, const std::string& from,
                           const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) {
    return ErrnoError("rename to " + to + " of", from, errno);
  }
  return SyncDirectory(dir);
}

absl::StatusOr<std::unique_ptr<DirLock>> DirLock::Acquire(
    const std::string& dir) {
  const std::string path = dir + "/LOCK";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("open", path, errno);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int e = errno;
    char buffer[32] = {};
    const ssize_t n = ::pread(fd, buffer, sizeof(buffer) - 1, 0);
    ::close(fd);
    if (e == EWOULDBLOCK) {
      std::string holder = "another process";
      int pid = 0;
      if (n > 0 && absl::SimpleAtoi(absl::StripAsciiWhitespace(
                                        absl::string_view(buffer, n)),
                                    &pid)) {
        holder = absl::StrCat("another process (pid ", pid, ")");
      }
      return absl::FailedPreconditionError(absl::StrCat(
          "data dir ", dir, " is in use by ", holder,
          "; two daemons must not share a data dir (", path, " is locked)"));
    }
    return ErrnoError("flock", path, e);
  }
  const std::string pid = absl::StrCat(::getpid(), "\n");
  if (::ftruncate(fd, 0) != 0 ||
      ::pwrite(fd, pid.data(), pid.size(), 0) !=
          static_cast<ssize_t>(pid.size())) {
    // The pid is only for the message of the next comer; the lock holds.
  }
  return std::unique_ptr<DirLock>(new DirLock(fd));
}

DirLock::~DirLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace leasekeeper::storage
