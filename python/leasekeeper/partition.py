"""Which of `count` partitions a key belongs to, the same answer as the C++
client's client/partition.h and `leasekeeper-ctl partition-of` on every
platform (tests/client/partition_vectors.json holds the vectors both check).

partition_of: FNV-1a 32-bit over the key's UTF-8 bytes, modulo count.
Growing from N to N+1 partitions moves N/(N+1) of the keys.

consistent_partition_of: jump consistent hash (Lamping and Veach, 2014) of
FNV-1a 64-bit over the key's UTF-8 bytes. Growing from N to M moves only
(M - N) / M of the keys, each to one of the new partitions.
"""

from __future__ import annotations

MAX_PARTITION_COUNT = 2_147_483_647

_MASK32 = 0xFFFFFFFF
_MASK64 = 0xFFFFFFFFFFFFFFFF


def _key_bytes(key: str | bytes) -> bytes:
    return key.encode("utf-8") if isinstance(key, str) else key


def _check_count(count: int) -> None:
    if not 1 <= count <= MAX_PARTITION_COUNT:
        raise ValueError(
            f"partition count {count} is not in 1..{MAX_PARTITION_COUNT}")


def fnv1a32(data: bytes) -> int:
    """FNV-1a 32-bit of `data`."""
    value = 2166136261
    for byte in data:
        value = ((value ^ byte) * 16777619) & _MASK32
    return value


def fnv1a64(data: bytes) -> int:
    """FNV-1a 64-bit of `data`."""
    value = 14695981039346656037
    for byte in data:
        value = ((value ^ byte) * 1099511628211) & _MASK64
    return value


def jump_consistent_hash(key: int, buckets: int) -> int:
    """Lamping and Veach's jump consistent hash of a 64-bit `key` into
    [0, buckets)."""
    _check_count(buckets)
    bucket, next_bucket = -1, 0
    while next_bucket < buckets:
        bucket = next_bucket
        key = (key * 2862933555777941757 + 1) & _MASK64
        # IEEE double, as in the C++ client.
        next_bucket = int(float(bucket + 1) *
                          (float(1 << 31) / float((key >> 33) + 1)))
    return bucket


def partition_of(key: str | bytes, count: int) -> int:
    """fnv1a32(key) % count; ValueError unless 1 <= count <= 2**31 - 1."""
    _check_count(count)
    return fnv1a32(_key_bytes(key)) % count


def consistent_partition_of(key: str | bytes, count: int) -> int:
    """jump_consistent_hash(fnv1a64(key), count); ValueError unless
    1 <= count <= 2**31 - 1."""
    return jump_consistent_hash(fnv1a64(_key_bytes(key)), count)
