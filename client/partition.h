// Partitioning keys: which of `count` partitions a key belongs to. The
// answer depends only on the key's bytes and the count, so every process,
// platform and version of leasekeeper (this library, the Python client and
// `leasekeeper-ctl partition-of`) gives the same one; tests hold vectors in
// tests/client/partition_vectors.json that both languages check.
//
// Two schemes (docs/clients.md#partitioning-keys):
//  - PartitionOf: FNV-1a 32-bit over the key's bytes, modulo the count.
//    Resizing from N to M partitions moves most keys (all but about
//    gcd-sized runs: 10 to 11 moves about 10/11 of them).
//  - ConsistentPartitionOf: jump consistent hash (Lamping and Veach, 2014)
//    of FNV-1a 64-bit over the key's bytes. Growing from N to M moves only
//    (M - N) / M of the keys, each to one of the new partitions; shrinking
//    moves only the keys of the partitions removed.
//
// Thread-safety: pure functions.
#ifndef LEASEKEEPER_CLIENT_PARTITION_H_
#define LEASEKEEPER_CLIENT_PARTITION_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace leasekeeper::client {

// The largest partition count either scheme takes (jump hash's buckets are
// 32-bit signed).
inline constexpr uint32_t kMaxPartitionCount = 2'147'483'647;

// FNV-1a over `bytes` (the published 32- and 64-bit parameters).
uint32_t Fnv1a32(absl::string_view bytes);
uint64_t Fnv1a64(absl::string_view bytes);

// Fnv1a32(key) % count, in [0, count).
// REQUIRES: 1 <= count <= kMaxPartitionCount.
uint32_t PartitionOf(absl::string_view key, uint32_t count);

// JumpConsistentHash(Fnv1a64(key), count), in [0, count).
// REQUIRES: 1 <= count <= kMaxPartitionCount. Cost: O(log count).
uint32_t ConsistentPartitionOf(absl::string_view key, uint32_t count);

// Lamping and Veach's jump consistent hash of `key` into [0, buckets).
// REQUIRES: 1 <= buckets <= kMaxPartitionCount. Cost: O(log buckets).
uint32_t JumpConsistentHash(uint64_t key, uint32_t buckets);

}  // namespace leasekeeper::client

#endif  // LEASEKEEPER_CLIENT_PARTITION_H_
