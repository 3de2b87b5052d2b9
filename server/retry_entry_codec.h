// RetryEntryCodec: the bytes a retry-cache entry is logged and snapshotted
// as (storage/server_records.h carries them without reading them): what a
// retry must repeat (the Fingerprint) and the first answer it gets.
//
// Format, version 1 (varints and strings as in storage/operation_codec.h;
// "s" = zigzag-signed):
//
//   byte version | byte method (0 Acquire, 1 Renew, 2 Release) |
//   lock | s ttl_ms | byte mode (0 exclusive, 1 shared) |
//   byte answer kind (0 Acquire, 1 Renew, 2 Release) |
//   status: varint code, message, n payloads, each: type url, bytes |
//   if the status is OK, the value:
//     Acquire  byte kind (0 granted, 1 queued, 2 withdrawn), varint token,
//              s ttl_ms, s waited_ms, s position,
//              byte withdraw cause (0 released by client, 1 session ended),
//              n aborted, each: client
//     Renew    varint token, s ttl_ms
//     Release  byte outcome (0 released, 1 withdrawn)
//
// An error answer keeps its code, message and payloads (the ErrorDetail a
// client reads), so a retry after a restart is refused exactly as the first
// call was.
//
// Thread-safety: pure functions.
//
// Invariants:
//  1. DecodeRetryEntry(EncodeRetryEntry(f, a)) gives back f and a, field for
//     field (status payloads included).
//  2. DecodeRetryEntry never reads outside its input; any input that is not
//     exactly one valid entry is an error.
#ifndef LEASEKEEPER_SERVER_RETRY_ENTRY_CODEC_H_
#define LEASEKEEPER_SERVER_RETRY_ENTRY_CODEC_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/retry_cache.h"

namespace leasekeeper::server {

inline constexpr uint8_t kRetryEntryCodecVersion = 1;

struct DecodedRetryEntry {
  Fingerprint fingerprint;
  CachedAnswer answer;
};

std::string EncodeRetryEntry(const Fingerprint& fingerprint,
                             const CachedAnswer& answer);

// Outcomes: the entry; FailedPrecondition for a version this build does not
// read; DataLoss for anything else malformed.
absl::StatusOr<DecodedRetryEntry> DecodeRetryEntry(absl::string_view bytes);

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_RETRY_ENTRY_CODEC_H_
