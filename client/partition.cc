#include "client/partition.h"

namespace leasekeeper::client {

namespace {

// FNV-1a with the published offset basis and prime for Hash's width.
template <typename Hash>
Hash Fnv1a(absl::string_view bytes, Hash offset_basis, Hash prime) {
  Hash hash = offset_basis;
  for (const char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= prime;
  }
  return hash;
}

}  // namespace

uint32_t Fnv1a32(absl::string_view bytes) {
  return Fnv1a<uint32_t>(bytes, 2166136261u, 16777619u);
}

uint64_t Fnv1a64(absl::string_view bytes) {
  return Fnv1a<uint64_t>(bytes, 14695981039346656037ull, 1099511628211ull);
}

uint32_t PartitionOf(absl::string_view key, uint32_t count) {
  return Fnv1a32(key) % count;
}

uint32_t JumpConsistentHash(uint64_t key, uint32_t buckets) {
  // The paper's loop, with its constants. The division is in IEEE double,
  // the same on every platform (and in Python's float).
  int64_t bucket = -1;
  int64_t next = 0;
  while (next < static_cast<int64_t>(buckets)) {
    bucket = next;
    key = key * 2862933555777941757ull + 1;
    next = static_cast<int64_t>(
        static_cast<double>(bucket + 1) *
        (static_cast<double>(int64_t{1} << 31) /
         static_cast<double>((key >> 33) + 1)));
  }
  return static_cast<uint32_t>(bucket);
}

uint32_t ConsistentPartitionOf(absl::string_view key, uint32_t count) {
  return JumpConsistentHash(Fnv1a64(key), count);
}

}  // namespace leasekeeper::client
