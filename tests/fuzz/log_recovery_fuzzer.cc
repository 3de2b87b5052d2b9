// libFuzzer target over log recovery (storage/log.h): a small valid
// segment is damaged as the input says, then FileLog::Open recovers the
// directory and everything is read back.
//
// Input: a flags byte, then edits of 4 bytes each, applied in order to the
// segment file's bytes: op, offset (2 bytes, little-endian, modulo the
// current size + 1), value.
//   op % 4 == 0  xor the byte at offset with value (value 0 means 0x01)
//   op % 4 == 1  set the byte at offset to value
//   op % 4 == 2  truncate the file to offset
//   op % 4 == 3  insert value + 1 bytes of value at offset
// Flags: bit 0 FileLogOptions::truncate_at_corruption; bit 1 the input
// after the flags byte is the whole segment file instead of edits (so the
// fuzzer can also build headers and frames of its own).
//
// Checked (a violation aborts): Open, ReadFrom and a later reopen never
// crash, hang or trip ASan/UBSan; a refusal is DataLoss or
// FailedPrecondition; an opened log reads back exactly
// [first_position, next_position) in order, and, for the edited valid
// segment, those records are a prefix of what was written (damage drops
// records, it never invents or alters them); the opened log takes a new
// record and a reopen reads the same records plus that one.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "fuzz_files.h"
#include "storage/log.h"
#include "storage/operation_codec.h"

namespace {

using leasekeeper::fuzz::ClearDir;
using leasekeeper::fuzz::Die;
using leasekeeper::fuzz::MakeScratchDir;
using leasekeeper::fuzz::ReadWholeFile;
using leasekeeper::fuzz::WriteWholeFile;
using leasekeeper::storage::FileLog;
using leasekeeper::storage::FileLogOptions;
using leasekeeper::storage::LogOpenReport;
using leasekeeper::storage::LogPosition;

// The records of the valid segment: a few encoded operations.
std::vector<std::string> ValidRecords() {
  std::vector<std::string> records;
  for (int i = 0; i < 6; ++i) {
    leasekeeper::Operation op;
    op.at = 10 + i;
    const std::string client = absl::StrCat("client-", i % 3);
    if (i % 2 == 0) {
      op.body = leasekeeper::op::Acquire{client, "lock/a", 30,
                                         leasekeeper::LockMode::kExclusive};
    } else {
      op.body = leasekeeper::op::Release{client, "lock/a"};
    }
    records.push_back(leasekeeper::storage::EncodeOperation(op));
  }
  return records;
}

struct Fixture {
  std::string dir;
  std::vector<std::string> records;
  std::string segment_name;  // of the valid segment, first position 1
  std::string segment;       // its bytes
};

// Writes the valid segment once, with FileLog itself.
const Fixture& GetFixture() {
  static const Fixture* fixture = [] {
    auto* f = new Fixture;
    f->dir = MakeScratchDir("lk-log-fuzz");
    f->records = ValidRecords();
    {
      LogOpenReport report;
      auto log = FileLog::Open(f->dir, FileLogOptions{}, &report);
      if (!log.ok()) Die(log.status().ToString());
      if (!(*log)->Append(f->records).ok() || !(*log)->Sync().ok()) {
        Die("cannot write the valid segment");
      }
    }
    f->segment_name = FileLog::SegmentName(1);
    f->segment = ReadWholeFile(f->dir + "/" + f->segment_name);
    return f;
  }();
  return *fixture;
}

void ApplyEdits(absl::string_view edits, std::string& file) {
  for (size_t i = 0; i + 4 <= edits.size(); i += 4) {
    const uint8_t op = static_cast<uint8_t>(edits[i]);
    const size_t raw = static_cast<uint8_t>(edits[i + 1]) |
                       (size_t{static_cast<uint8_t>(edits[i + 2])} << 8);
    const size_t offset = raw % (file.size() + 1);
    const uint8_t value = static_cast<uint8_t>(edits[i + 3]);
    switch (op % 4) {
      case 0:
        if (offset < file.size()) file[offset] ^= value == 0 ? 1 : value;
        break;
      case 1:
        if (offset < file.size()) file[offset] = static_cast<char>(value);
        break;
      case 2:
        file.resize(offset);
        break;
      case 3:
        file.insert(offset, size_t{value} + 1, static_cast<char>(value));
        break;
    }
  }
}

// Reads every record of `log`, checking positions are consecutive from
// first_position() to next_position().
std::vector<std::string> ReadAll(const FileLog& log) {
  std::vector<std::string> out;
  LogPosition expected = log.first_position();
  const absl::Status read = log.ReadFrom(
      expected, [&](LogPosition position, absl::string_view record) {
        if (position != expected) Die("ReadFrom skipped a position");
        ++expected;
        out.emplace_back(record);
        return absl::OkStatus();
      });
  if (!read.ok()) Die(absl::StrCat("ReadFrom of an opened log: ", read.ToString()));
  if (expected != log.next_position()) {
    Die("ReadFrom stopped before next_position()");
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return -1;
  const Fixture& f = GetFixture();
  const uint8_t flags = data[0];
  const absl::string_view rest(reinterpret_cast<const char*>(data) + 1,
                               size - 1);
  const bool raw = (flags & 2) != 0;
  std::string file = raw ? std::string(rest) : f.segment;
  if (!raw) ApplyEdits(rest, file);

  ClearDir(f.dir);
  WriteWholeFile(f.dir + "/" + f.segment_name, file);

  FileLogOptions options;
  options.truncate_at_corruption = (flags & 1) != 0;
  LogOpenReport report;
  absl::StatusOr<std::unique_ptr<FileLog>> log =
      FileLog::Open(f.dir, options, &report);
  if (!log.ok()) {
    const absl::StatusCode code = log.status().code();
    if (code != absl::StatusCode::kDataLoss &&
        code != absl::StatusCode::kFailedPrecondition) {
      Die(absl::StrCat("Open refused with another code: ",
                       log.status().ToString()));
    }
    return 0;
  }
  if (report.first_position != (*log)->first_position() ||
      report.next_position != (*log)->next_position()) {
    Die("the open report disagrees with the log");
  }
  std::vector<std::string> read = ReadAll(**log);
  if (!raw) {
    if ((*log)->first_position() != 1 || read.size() > f.records.size()) {
      Die("recovery of a damaged segment invented records");
    }
    for (size_t i = 0; i < read.size(); ++i) {
      if (read[i] != f.records[i]) Die("recovery altered a record");
    }
  }

  // The recovered log is usable: a new record survives a reopen.
  const std::string extra = "fuzz-extra-record";
  if (!(*log)->Append({&extra, 1}).ok() || !(*log)->Sync().ok()) {
    Die("a recovered log refused an append");
  }
  log->reset();
  LogOpenReport again_report;
  absl::StatusOr<std::unique_ptr<FileLog>> again =
      FileLog::Open(f.dir, FileLogOptions{}, &again_report);
  if (!again.ok()) {
    Die(absl::StrCat("reopening a recovered log: ", again.status().ToString()));
  }
  read.push_back(extra);
  if (ReadAll(**again) != read) Die("a reopen read other records");
  return 0;
}
