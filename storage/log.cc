#include "storage/log.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "storage/coding.h"
#include "storage/crc32c.h"

namespace leasekeeper::storage {
namespace {

constexpr absl::string_view kSegmentMagic = "LKWALSEG";
constexpr absl::string_view kSegmentPrefix = "wal-";
constexpr absl::string_view kSegmentSuffix = ".log";
// The next segment, preallocated before its first position is known.
constexpr absl::string_view kNextSegmentName = "next-wal-segment.tmp";

uint32_t LengthCheck(uint32_t length) {
  const char bytes[3] = {static_cast<char>(length), static_cast<char>(length >> 8),
                         static_cast<char>(length >> 16)};
  return Crc32cExtend(0, bytes, 3) & 0xFF;
}

std::string SegmentHeader(LogPosition first) {
  std::string header(kSegmentMagic);
  PutFixed32(header, kLogFormatVersion);
  PutFixed32(header, 0);
  PutFixed64(header, first);
  PutFixed32(header, Crc32c(header));
  return header;
}

bool AllZero(absl::string_view bytes) {
  return std::all_of(bytes.begin(), bytes.end(),
                     [](char c) { return c == 0; });
}

// The outcome of parsing the records of one segment.
struct FrameScan {
  enum class Stop {
    kEnd,      // every byte parsed
    kTorn,     // a tail: cut short, or bad and followed only by zeros
    kCorrupt,  // a bad frame with data after it
  };
  uint64_t count = 0;
  uint64_t good_end = 0;  // offset just after the last good record
  Stop stop = Stop::kEnd;
  std::string why;
};

// Parses the frames of data[start, end), calling visit (if any) for every
// good record at position >= from. Stops at the first bad frame and says
// whether it looks like a torn tail. Returns visit's first error.
absl::Status ScanFrames(absl::string_view data, size_t start,
                        LogPosition first, LogPosition from,
                        const LogVisitor* visit, FrameScan& scan) {
  size_t offset = start;
  scan = FrameScan{};
  scan.good_end = start;
  auto stop = [&](bool torn, std::string why) {
    scan.stop = torn ? FrameScan::Stop::kTorn : FrameScan::Stop::kCorrupt;
    scan.why = std::move(why);
    return absl::OkStatus();
  };
  while (offset < data.size()) {
    // Zeros from a frame boundary on: preallocated space, the end.
    if (data[offset] == 0 && AllZero(data.substr(offset))) break;
    const size_t rest = data.size() - offset;
    const char* p = data.data() + offset;
    if (rest < kLogFrameHeaderBytes) {
      return stop(true, "incomplete record header at the end of the file");
    }
    const uint32_t word = DecodeFixed32(p);
    const uint32_t length = word & 0xFFFFFF;
    if ((word >> 24) != LengthCheck(length)) {
      // Zeros: a torn tail. A frame that would end exactly at the end of
      // the file: the last record, with a damaged check byte. Otherwise
      // the length cannot be trusted, so neither can "where the log ends".
      return stop(AllZero(data.substr(offset)) ||
                      length == rest - kLogFrameHeaderBytes,
                  "bad record length");
    }
    if (length > rest - kLogFrameHeaderBytes) {
      return stop(true, "record cut short by the end of the file");
    }
    const uint32_t crc = Crc32cExtend(Crc32cExtend(0, p, 4),
                                      p + kLogFrameHeaderBytes, length);
    const size_t end = offset + kLogFrameHeaderBytes + length;
    if (crc != DecodeFixed32(p + 4)) {
      return stop(end == data.size() || AllZero(data.substr(end)),
                  "record checksum mismatch");
    }
    const LogPosition position = first + scan.count;
    if (visit != nullptr && position >= from) {
      absl::Status status = (*visit)(
          position, absl::string_view(p + kLogFrameHeaderBytes, length));
      if (!status.ok()) return status;
    }
    ++scan.count;
    offset = end;
    scan.good_end = end;
  }
  return absl::OkStatus();
}

// Checks a segment header. OK, or an error describing it.
absl::Status CheckHeader(absl::string_view data, const std::string& path,
                         LogPosition expected_first) {
  if (data.substr(0, kSegmentMagic.size()) != kSegmentMagic) {
    return absl::DataLossError(
        absl::StrCat(path, " is not a leasekeeper log segment (bad magic at "
                           "byte offset 0)"));
  }
  const uint32_t version = DecodeFixed32(data.data() + 8);
  if (version != kLogFormatVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        "log segment ", path, " has format version ", version,
        "; this build reads version ", kLogFormatVersion,
        ". Run the leasekeeperd that wrote it, or move the data dir aside"));
  }
  if (Crc32c(data.substr(0, kLogSegmentHeaderBytes - 4)) !=
      DecodeFixed32(data.data() + kLogSegmentHeaderBytes - 4)) {
    return absl::DataLossError(absl::StrCat(
        "corrupt log segment header in ", path, " at byte offset 0"));
  }
  const LogPosition first = DecodeFixed64(data.data() + 16);
  if (first != expected_first) {
    return absl::DataLossError(absl::StrCat(
        "log segment ", path, " says it starts at position ", first,
        " but its name says ", expected_first));
  }
  return absl::OkStatus();
}

std::string CorruptionMessage(const std::string& path, uint64_t offset,
                              absl::string_view why) {
  return absl::StrCat(
      "corrupt log record in ", path, " at byte offset ", offset, " (", why,
      "), before the tail of the log. Records after it may have been "
      "acknowledged, so leasekeeperd will not drop them silently. Ways "
      "forward: restore the data dir from a backup, or restart with "
      "--recover-truncate to cut the log at this record (everything after "
      "it is lost, and fencing tokens handed out after it may be issued "
      "again)");
}

// The segment files in `dir` ("wal-<20 digits>.log"), oldest first.
absl::StatusOr<std::vector<std::pair<LogPosition, std::string>>>
FindSegmentFiles(const std::string& dir) {
  absl::StatusOr<std::vector<std::string>> names = ListDirectory(dir);
  if (!names.ok()) return names.status();
  std::vector<std::pair<LogPosition, std::string>> found;
  for (const std::string& name : *names) {
    absl::string_view digits = name;
    if (!absl::ConsumePrefix(&digits, kSegmentPrefix) ||
        !absl::ConsumeSuffix(&digits, kSegmentSuffix) || digits.size() != 20) {
      continue;
    }
    LogPosition first = 0;
    if (!absl::SimpleAtoi(digits, &first) || first < 1) continue;
    found.emplace_back(first, dir + "/" + name);
  }
  std::sort(found.begin(), found.end());
  return found;
}

// Removes a next segment an earlier process prepared and never used.
absl::Status RemoveUnusedNextSegment(const std::string& path) {
  if (::unlink(path.c_str()) == 0 || errno == ENOENT) return absl::OkStatus();
  return absl::UnavailableError(
      absl::StrCat("unlink ", path, ": ", std::strerror(errno)));
}

// Removes a segment recovery gives up, counting its bytes and saying why.
absl::Status DropSegment(const std::string& path, uint64_t bytes,
                         absl::string_view why, LogOpenReport& r) {
  r.bytes_dropped += bytes;
  r.warnings.push_back(absl::StrCat("removed log segment ", path, ": ", why));
  return RemoveFile(path);
}

}  // namespace

void AppendLogFrame(absl::string_view payload, std::string& out) {
  const uint32_t length = static_cast<uint32_t>(payload.size());
  const size_t at = out.size();
  PutFixed32(out, length | (LengthCheck(length) << 24));
  const uint32_t crc = Crc32cExtend(Crc32cExtend(0, out.data() + at, 4),
                                    payload.data(), payload.size());
  PutFixed32(out, crc);
  out.append(payload.data(), payload.size());
}

std::string FileLog::SegmentName(LogPosition first) {
  char name[64];
  std::snprintf(name, sizeof(name), "wal-%020" PRIu64 ".log", first);
  return name;
}

absl::StatusOr<std::unique_ptr<FileLog>> FileLog::Open(const std::string& dir,
                                                       FileLogOptions options,
                                                       LogOpenReport* report) {
  LogOpenReport local_report;
  LogOpenReport& r = report != nullptr ? *report : local_report;
  r = LogOpenReport{};
  std::unique_ptr<FileLog> log(new FileLog(dir, std::move(options)));
  absl::StatusOr<std::vector<std::pair<LogPosition, std::string>>> found =
      FindSegmentFiles(dir);
  if (!found.ok()) return found.status();

  if (absl::Status s = RemoveUnusedNextSegment(
          absl::StrCat(dir, "/", kNextSegmentName));
      !s.ok()) {
    return s;
  }
  absl::MutexLock lock(&log->mu_);
  // Set when --recover-truncate cut the log: later segments are deleted.
  bool cut = false;
  for (size_t i = 0; i < found->size(); ++i) {
    const auto& [first, path] = (*found)[i];
    const bool last = i + 1 == found->size();
    if (absl::Status s = log->RecoverSegment(first, path, last, cut, r);
        !s.ok()) {
      return s;
    }
  }
  if (absl::Status s = log->StartAfterRecovery(r); !s.ok()) return s;
  log->EnsureRoom();
  if (!log->failed_.ok()) return log->failed_;
  return log;
}

absl::Status FileLog::RecoverSegment(LogPosition first,
                                     const std::string& path, bool last,
                                     bool& cut, LogOpenReport& r) {
  absl::StatusOr<std::string> data = ReadWholeFile(path);
  if (!data.ok()) return data.status();
  ++r.segments;
  r.bytes_scanned += data->size();
  if (cut) {
    return DropSegment(path, data->size(), "after the --recover-truncate cut",
                       r);
  }
  // A header cut short, or never written (zeros), in the last segment is
  // a crash while the segment was being created: it holds no record.
  const bool torn_header =
      data->size() < kLogSegmentHeaderBytes || AllZero(*data);
  if (torn_header && last) {
    if (absl::Status s =
            DropSegment(path, data->size(), "incomplete header (torn tail)", r);
        !s.ok()) {
      return s;
    }
    r.tail_dropped = true;
    return absl::OkStatus();
  }
  absl::Status header =
      torn_header ? absl::DataLossError(absl::StrCat(
                        "log segment ", path, " is shorter than its header"))
                  : CheckHeader(*data, path, first);
  if (header.ok() && !segments_.empty() &&
      first != segments_.back().first + segments_.back().count) {
    header = absl::DataLossError(absl::StrCat(
        "gap in the log: ", path, " starts at position ", first,
        " but the previous segment ends before position ",
        segments_.back().first + segments_.back().count));
  }
  if (!header.ok()) {
    if (!options_.truncate_at_corruption ||
        absl::IsFailedPrecondition(header)) {
      return header;
    }
    cut = true;
    return DropSegment(
        path, data->size(),
        absl::StrCat("--recover-truncate: ", header.message()), r);
  }
  return KeepSegmentRecords(first, path, last, *data, cut, r);
}

absl::Status FileLog::KeepSegmentRecords(LogPosition first,
                                         const std::string& path, bool last,
                                         absl::string_view data, bool& cut,
                                         LogOpenReport& r) {
  FrameScan scan;
  absl::Status scanned =
      ScanFrames(data, kLogSegmentHeaderBytes, first, 0, nullptr, scan);
  if (!scanned.ok()) return scanned;
  Segment segment{path, first, scan.count, scan.good_end};
  if (scan.stop != FrameScan::Stop::kEnd) {
    const bool tail = last && scan.stop == FrameScan::Stop::kTorn;
    if (!tail && !options_.truncate_at_corruption) {
      return absl::DataLossError(
          CorruptionMessage(path, scan.good_end, scan.why));
    }
    const uint64_t dropped = data.size() - scan.good_end;
    r.bytes_dropped += dropped;
    if (tail) {
      r.tail_dropped = true;
      r.warnings.push_back(absl::StrCat(
          "dropped the torn tail of the log: ", dropped, " bytes at byte "
          "offset ", scan.good_end, " of ", path, " (", scan.why,
          "); that record was never acknowledged"));
    } else {
      cut = true;
      r.warnings.push_back(absl::StrCat(
          "--recover-truncate: cut the log at byte offset ", scan.good_end,
          " of ", path, " (", scan.why, "), dropping ", dropped,
          " bytes of it and every later segment; records from position ",
          first + scan.count, " on are lost"));
    }
    if (absl::Status s = TruncateFile(path, scan.good_end); !s.ok()) return s;
  } else if (last && scan.good_end < data.size()) {
    // Preallocated space nobody wrote: no new record goes here again.
    if (absl::Status s = TruncateFile(path, scan.good_end); !s.ok()) return s;
  }
  segments_.push_back(std::move(segment));
  return absl::OkStatus();
}

absl::Status FileLog::StartAfterRecovery(LogOpenReport& r) {
  const LogPosition min_next = options_.min_next_position;
  LogPosition next = segments_.empty()
                         ? min_next
                         : segments_.back().first + segments_.back().count;
  if (next < min_next) {
    // The snapshot covers everything this log holds (it was written after
    // records the log lost, e.g. with fsync never and a power loss).
    for (const Segment& segment : segments_) {
      if (absl::Status s = DropSegment(
              segment.path, segment.bytes,
              absl::StrCat("covered by the snapshot at position ",
                           min_next - 1),
              r);
          !s.ok()) {
        return s;
      }
    }
    segments_.clear();
    next = min_next;
  }
  // Every open writes to a fresh segment; an empty last one is replaced.
  if (!segments_.empty() && segments_.back().count == 0) {
    if (absl::Status s = RemoveFile(segments_.back().path); !s.ok()) return s;
    segments_.pop_back();
  }
  // The previous process may have written records it never synced (they
  // were not acknowledged, but recovery now builds on them): make them
  // durable before anything newer is, so a power loss cannot leave a hole
  // in the middle of the log. Earlier segments were synced when rolled.
  if (!segments_.empty()) {
    if (absl::Status s = SyncFile(segments_.back().path); !s.ok()) return s;
  }
  if (absl::Status s = SyncDirectory(dir_); !s.ok()) return s;
  if (absl::Status s = StartSegment(next); !s.ok()) return s;
  r.first_position = segments_.front().first;
  r.next_position = next;
  return absl::OkStatus();
}

FileLog::~FileLog() {
  absl::MutexLock lock(&mu_);
  if (file_ != nullptr) file_->Close().IgnoreError();
  if (next_file_ != nullptr) {
    next_file_->Close().IgnoreError();
    RemoveFile(next_file_->path()).IgnoreError();
  }
}

absl::Status FileLog::StartSegment(LogPosition first) {
  const std::string path = dir_ + "/" + SegmentName(first);
  if (next_file_ != nullptr) {
    // Prepared ahead: the header goes over its first zeros, then it takes
    // its name.
    std::unique_ptr<WritableFile> file = std::move(next_file_);
    absl::Status s = file->Append(SegmentHeader(first));
    if (s.ok()) s = file->Sync();
    if (s.ok()) s = RenameDurably(dir_, file->path(), path);
    if (!s.ok()) {
      file->Close().IgnoreError();
      RemoveFile(file->path()).IgnoreError();
      return s;
    }
    file_ = std::move(file);
    file_preallocated_ = true;
  } else {
    absl::StatusOr<std::unique_ptr<WritableFile>> file =
        options_.open_file(path, /*truncate=*/true);
    if (!file.ok()) return file.status();
    if (absl::Status s = (*file)->Append(SegmentHeader(first)); !s.ok()) {
      return s;
    }
    // On a disk too full for it the records still go in, as long as they
    // fit (zeros written part-way are the end, as ever); room() tells.
    const bool preallocated =
        options_.preallocate_segments &&
        (*file)->Preallocate(options_.segment_bytes).ok();
    if (absl::Status s = (*file)->Sync(); !s.ok()) return s;
    if (absl::Status s = SyncDirectory(dir_); !s.ok()) return s;
    file_ = *std::move(file);
    file_preallocated_ = preallocated;
  }
  segments_.push_back(Segment{path, first, 0, kLogSegmentHeaderBytes});
  return absl::OkStatus();
}

// room_ is OK, the IsOutOfSpace error that room() reports, or another
// error of preallocating (a file-size limit, say): that is no full disk, so
// the log appends as it would without preallocation (a write that fails
// then fails the log, invariant 3) and tries again at the next segment.
void FileLog::EnsureRoom() {
  room_ = absl::OkStatus();
  if (!options_.preallocate_segments || !failed_.ok()) return;
  if (!file_preallocated_) {
    // Zeros from the file's end on, so never over a record.
    room_ = file_->Preallocate(options_.segment_bytes);
    if (!room_.ok()) return;
    file_preallocated_ = true;
  }
  const Segment& segment = segments_.back();
  if (next_file_ != nullptr ||
      segment.bytes + options_.segment_bytes / 4 < options_.segment_bytes) {
    return;
  }
  room_ = PrepareNextSegment();
}

absl::Status FileLog::PrepareNextSegment() {
  const std::string path = absl::StrCat(dir_, "/", kNextSegmentName);
  absl::StatusOr<std::unique_ptr<WritableFile>> file =
      options_.open_file(path, /*truncate=*/true);
  if (!file.ok()) return file.status();
  absl::Status s = (*file)->Preallocate(options_.segment_bytes);
  if (s.ok()) s = (*file)->Sync();
  if (!s.ok()) {
    (*file)->Close().IgnoreError();
    RemoveFile(path).IgnoreError();
    return s;
  }
  next_file_ = *std::move(file);
  return absl::OkStatus();
}

absl::Status FileLog::room() const {
  absl::MutexLock lock(&mu_);
  return IsOutOfSpace(room_) ? room_ : absl::OkStatus();
}

absl::Status FileLog::ReserveRoom() {
  absl::MutexLock lock(&mu_);
  EnsureRoom();
  return IsOutOfSpace(room_) ? room_ : absl::OkStatus();
}

absl::Status FileLog::RollSegment() {
  // The old segment is made durable before it is left behind, so Sync()
  // only ever concerns the current one; it stays open until the new one
  // has started, so that a full disk leaves the log appending to it.
  if (absl::Status s = file_->Sync(); !s.ok()) return Fail(s);
  const Segment& old = segments_.back();
  std::unique_ptr<WritableFile> old_file = std::move(file_);
  const LogPosition first = old.first + old.count;
  if (absl::Status s = StartSegment(first); !s.ok()) {
    file_ = std::move(old_file);
    if (!IsOutOfSpace(s)) return Fail(s);
    // Never synced into the directory, and started again next time.
    RemoveFile(dir_ + "/" + SegmentName(first)).IgnoreError();
    return s;
  }
  if (absl::Status s = old_file->Close(); !s.ok()) return Fail(s);
  room_ = absl::OkStatus();  // a new segment: preallocating is tried again
  return absl::OkStatus();
}

absl::Status FileLog::Fail(absl::Status status) {
  if (failed_.ok()) {
    failed_ = absl::UnavailableError(
        absl::StrCat("the log is failed and takes no more records: ",
                     status.message()));
  }
  return failed_;
}

absl::Status FileLog::Append(absl::Span<const std::string> records) {
  size_t bytes = 0;
  for (const std::string& record : records) {
    if (record.size() >= kMaxLogRecordBytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "log record of ", record.size(), " bytes; the limit is ",
          kMaxLogRecordBytes - 1));
    }
    bytes += kLogFrameHeaderBytes + record.size();
  }
  absl::MutexLock lock(&mu_);
  if (!failed_.ok()) return failed_;
  if (records.empty()) return absl::OkStatus();
  Segment* segment = &segments_.back();
  // A preallocated segment is not overflowed: blocks past its end are the
  // ones a full disk refuses.
  const bool full =
      segment->bytes >= options_.segment_bytes ||
      (file_preallocated_ && segment->bytes + bytes > options_.segment_bytes);
  if (full && segment->count > 0) {
    if (absl::Status s = RollSegment(); !s.ok()) return s;
    segment = &segments_.back();
  }
  std::string buffer;
  buffer.reserve(bytes);
  for (const std::string& record : records) AppendLogFrame(record, buffer);
  if (absl::Status s = file_->Append(buffer); !s.ok()) {
    if (!IsOutOfSpace(s)) return Fail(s);
    // What was written part-way lies after the last record, where a crash
    // leaves a torn tail; the retry writes over it.
    if (absl::Status r = file_->RewindTo(segment->bytes); !r.ok()) {
      return Fail(r);
    }
    return s;
  }
  segment->count += records.size();
  segment->bytes += buffer.size();
  if (room_.ok()) EnsureRoom();  // while short, ReserveRoom tries again
  return absl::OkStatus();
}

absl::Status FileLog::Sync() {
  absl::MutexLock lock(&mu_);
  if (!failed_.ok()) return failed_;
  if (absl::Status s = file_->Sync(); !s.ok()) return Fail(s);
  return absl::OkStatus();
}

absl::Status FileLog::ReadFrom(LogPosition from,
                               const LogVisitor& visit) const {
  std::vector<Segment> segments;
  {
    absl::MutexLock lock(&mu_);
    segments = segments_;
  }
  if (from < segments.front().first) {
    return absl::OutOfRangeError(absl::StrCat(
        "log position ", from, " was discarded; the log starts at ",
        segments.front().first));
  }
  for (const Segment& segment : segments) {
    if (segment.first + segment.count <= from) continue;
    absl::StatusOr<std::string> data = ReadWholeFile(segment.path);
    if (!data.ok()) return data.status();
    if (data->size() < segment.bytes) {
      return absl::DataLossError(absl::StrCat(
          "log segment ", segment.path, " shrank to ", data->size(),
          " bytes; ", segment.bytes, " were written"));
    }
    const absl::string_view valid(data->data(), segment.bytes);
    if (absl::Status s = CheckHeader(valid, segment.path, segment.first);
        !s.ok()) {
      return s;
    }
    FrameScan scan;
    absl::Status status = ScanFrames(valid, kLogSegmentHeaderBytes,
                                     segment.first, from, &visit, scan);
    if (!status.ok()) return status;
    if (scan.stop != FrameScan::Stop::kEnd || scan.count != segment.count) {
      return absl::DataLossError(
          CorruptionMessage(segment.path, scan.good_end, scan.why));
    }
  }
  return absl::OkStatus();
}

absl::Status FileLog::DiscardBefore(LogPosition position) {
  std::vector<std::string> doomed;
  {
    absl::MutexLock lock(&mu_);
    while (segments_.size() > 1 &&
           segments_.front().first + segments_.front().count <= position) {
      doomed.push_back(segments_.front().path);
      segments_.erase(segments_.begin());
    }
  }
  absl::Status result;
  for (const std::string& path : doomed) result.Update(RemoveFile(path));
  if (!doomed.empty()) result.Update(SyncDirectory(dir_));
  return result;
}

LogPosition FileLog::first_position() const {
  absl::MutexLock lock(&mu_);
  return segments_.front().first;
}

LogPosition FileLog::next_position() const {
  absl::MutexLock lock(&mu_);
  return segments_.back().first + segments_.back().count;
}

absl::Status FileLog::health() const {
  absl::MutexLock lock(&mu_);
  return failed_;
}

}  // namespace leasekeeper::storage
