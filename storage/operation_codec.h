// OperationCodec: the binary encoding of one log entry, i.e. one Operation
// the core applied, a RestartGrace (restart_grace.h), or a ServerRecord
// (server_records.h: sessions and the retry cache).
//
// Format, version 3 (all integers LEB128 varints; "s" = zigzag-signed;
// strings = varint length + bytes):
//
//   byte     codec version (kOperationCodecVersion)
//   byte     kind: 1 Acquire, 2 Renew, 3 Release, 4 Withdraw, 5 ReleaseAll,
//            6 RenewAll, 7 Write, 8 Advance, 32 CheckedWrite, 33 FencedRead,
//            34 Forget, 35 AcquireWithCapacity, 64 RestartGrace, 65 SessionOpened, 66 SessionEnded,
//            67 RetryAnswered, 68 RetryForgotten
//   s-varint at (the operation's Tick)
//   fields of the kind, in this order:
//     Acquire     client, lock, s ttl, byte mode (0 exclusive, 1 shared)
//     Renew       client, lock, s ttl
//     Release     client, lock
//     Withdraw    client, lock
//     ReleaseAll  client
//     RenewAll    client
//     Write       lock, key, value, varint token
//     Advance     (none)
//     CheckedWrite lock, key, value, varint token, byte checks (bit 0
//                 refuse_unissued, bit 1 require_held; others 0), client
//     FencedRead  lock, key, varint token
//     Forget      client
//     AcquireWithCapacity client, lock, s ttl, byte mode (0 exclusive,
//                 1 shared, 2 semaphore), varint capacity (< 2^32)
//     RestartGrace s grace_ticks
//     SessionOpened  session_id, client
//     SessionEnded   session_id
//     RetryAnswered  client, request_id, entry
//     RetryForgotten client, request_id
//
// An Acquire in the contract's modes with capacity 0 is encoded as kind 1,
// any other (a semaphore) as kind 35; a kind 35 that kind 1 could spell is
// malformed. Version 2 is version 3 without kind 35 (a data dir written
// before semaphores): it is still read, and a version-2 entry of kind 35 is
// malformed.
// Version 1 is version 2 without kinds 65..68 (a data dir written before
// sessions and the retry cache were durable): the decoder reads both, so
// such a dir still opens; the encoder writes version 3 only.
//
// A Write whose daemon-only fields are all unset (the contract's write) is
// encoded as kind 7, any other as CheckedWrite. Version 1 is version 2
// without kinds 32 to 34; it is still read (data dirs of older builds), and
// a version-1 entry of a newer kind is malformed.
// The entry has no length or checksum of its own: the log frames and
// checksums it. A new field or kind means a new codec version; a decoder
// refuses versions it does not know rather than guessing.
//
// The codec checks structure, not meaning: an operation the core would
// refuse (an empty name, ttl 0) encodes and decodes unchanged, because the
// log records what was applied, failures included (a failing operation
// still advances time, contract rule 1).
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

inline constexpr uint8_t kOperationCodecVersion = 3;
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
