// CRC32C (Castagnoli, polynomial 0x1EDC6F41 / reflected 0x82F63B78): the
// checksum of every log record and snapshot file.
//
// Uses the SSE4.2 crc32 instruction when the CPU has it (checked once at
// run time) and a table-driven slicing-by-8 loop otherwise; both give the
// same value. This Abseil (20220623) has no absl/crc, hence our own.
//
// Thread-safety: pure functions.
#ifndef LEASEKEEPER_STORAGE_CRC32C_H_
#define LEASEKEEPER_STORAGE_CRC32C_H_

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"

namespace leasekeeper::storage {

// The CRC32C of `crc`'s input followed by data[0, n). Extend(0, ...) starts
// a new checksum. Cost: O(n).
uint32_t Crc32cExtend(uint32_t crc, const char* data, size_t n);

// The CRC32C of `data`; Crc32c("123456789") == 0xE3069283.
inline uint32_t Crc32c(absl::string_view data) {
  return Crc32cExtend(0, data.data(), data.size());
}

namespace internal {
// The table-driven path alone, so tests can compare it with the hardware one.
uint32_t Crc32cExtendPortable(uint32_t crc, const char* data, size_t n);
}  // namespace internal

}  // namespace leasekeeper::storage

#endif  // LEASEKEEPER_STORAGE_CRC32C_H_
