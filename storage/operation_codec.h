// OperationCodec: the binary encoding of one log entry: an Operation the
// core applied, a RestartGrace (restart_grace.h) or a ServerRecord
// (server_records.h). Version 4 is written; versions 1 to 3 are still read.
// The format, and why the codec checks structure but not meaning, are in
// docs/design/durable-path.md ("The operation codec").
//
// Thread-safety: pure functions.
//
// Invariants:
//  1. DecodeLogEntry(EncodeOperation(op)) == op for every op with
//     op.at in [kMinTick, kMaxTick].
//  2. DecodeLogEntry never reads outside its input; any input that is not
//     exactly one valid entry is an error.
#ifndef LEASEKEEPER_STORAGE_OPERATION_CODEC_H_
#define LEASEKEEPER_STORAGE_OPERATION_CODEC_H_

#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/state_machine.h"
#include "storage/restart_grace.h"
#include "storage/server_records.h"

namespace leasekeeper::storage {

inline constexpr uint8_t kOperationCodecVersion = 4;
// The oldest version DecodeLogEntry still reads.
inline constexpr uint8_t kOldestOperationCodecVersion = 1;

using LogEntry = std::variant<Operation, RestartGrace, ServerRecord>;

// A lock mode's byte in log entries and snapshots: 0 exclusive, 1 shared,
// 2 semaphore; and back (nullopt for any other byte).
uint8_t ModeByte(LockMode mode);
std::optional<LockMode> ModeOfByte(uint8_t byte);

// Appends the encoding of `operation` / `grace` to `out`. O(size).
void EncodeOperation(const Operation& operation, std::string& out);
void EncodeRestartGrace(const RestartGrace& grace, std::string& out);
void EncodeServerRecord(const ServerRecord& record, std::string& out);

inline std::string EncodeOperation(const Operation& operation) {
  std::string out;
  EncodeOperation(operation, out);
  return out;
}

// Decodes exactly one entry.
// Outcomes:
//  - the entry;
//  - FailedPrecondition: a codec version this build does not read (the
//    message names both versions);
//  - DataLoss: anything else malformed (unknown kind, a kind newer than
//    the entry's version, truncated field, a
//    tick outside [kMinTick, kMaxTick], a mode byte other than 0/1 (0..2
//    in kind 35), bytes
//    left over).
absl::StatusOr<LogEntry> DecodeLogEntry(absl::string_view bytes);

// Field-by-field equality of operations (tests, assertions).
bool SameOperation(const Operation& a, const Operation& b);

}  // namespace leasekeeper::storage

#endif  // LEASEKEEPER_STORAGE_OPERATION_CODEC_H_
