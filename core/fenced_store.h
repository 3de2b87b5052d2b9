// FencedStore: a key-value store that refuses writes with a stale fencing
// token (contract rule 6).
//
// A write to lock L is accepted iff its token >= the highest token the store
// has accepted for L (0 if none). The store never looks at leases; the
// daemon's checks that need the lock table run in StateMachine first. Fence
// (a fenced read) raises the mark without writing. Why: docs/design/core-rules.md.
//
// Thread-safety: none; one owner (StateMachine), like LockTable.
//
// Invariants:
//  1. A lock's high-water mark never falls.
//  2. A rejected write changes nothing.
//  3. bytes() is the sum of the names of the locks the store knows and of
//     the keys and values it holds, kept as a running total.
#ifndef LEASEKEEPER_CORE_FENCED_STORE_H_
#define LEASEKEEPER_CORE_FENCED_STORE_H_

#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/node_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/snapshot.h"
#include "core/types.h"

namespace leasekeeper {

class FencedStore {
 public:
  FencedStore() = default;
  FencedStore(const FencedStore&) = delete;
  FencedStore& operator=(const FencedStore&) = delete;

  // Outcomes: OK (value stored, high-water mark = token); kInvalidArguments
  // for an empty lock, key or value or a token < 1; kStaleToken for a token
  // below the high-water mark. O(1).
  absl::Status Write(absl::string_view lock, absl::string_view key,
                     absl::string_view value, FencingToken token);

  // The argument checks of Write alone: OK, or kInvalidArguments for an
  // empty lock, key or value or a token < 1. O(1).
  static absl::Status CheckWriteArguments(absl::string_view lock,
                                          absl::string_view key,
                                          absl::string_view value,
                                          FencingToken token);

  // Raises the high-water mark of `lock` to `token` (a token equal to the
  // mark is accepted and changes nothing). Outcomes: OK; kInvalidArguments
  // for an empty lock or a token < 1; kStaleToken for a token below the
  // mark (nothing changed). O(1).
  absl::Status Fence(absl::string_view lock, FencingToken token);

  // The last accepted value for (lock, key), or nullopt. Empty names are the
  // caller's to reject (they can never have been written). O(1).
  std::optional<std::string> Read(absl::string_view lock,
                                  absl::string_view key) const;

  // The highest token accepted for `lock`, 0 if none.
  FencingToken HighWater(absl::string_view lock) const;

  // For the server's limits, all O(1). The payload bytes held (lock names,
  // keys and values; not the memory around them, see invariant 3); what
  // bytes() would be once Write(lock, key, value) is accepted; the number
  // of keys under `lock`; and whether (lock, key) has a value.
  size_t bytes() const { return bytes_; }
  size_t BytesAfterWrite(absl::string_view lock, absl::string_view key,
                         absl::string_view value) const;
  size_t KeyCount(absl::string_view lock) const;
  bool Contains(absl::string_view lock, absl::string_view key) const;

  // The store's whole state into snapshot.store; and back (replacing this
  // store's state). O(size of the store).
  void ExportTo(CoreSnapshot& snapshot) const;
  void ImportFrom(const CoreSnapshot& snapshot);

 private:
  struct Fenced {
    FencingToken high_water = 0;
    absl::flat_hash_map<std::string, std::string> values;
  };
  // The lock's entry, created (and its name counted in bytes_) if new.
  Fenced& Entry(absl::string_view lock);

  absl::node_hash_map<std::string, Fenced> locks_;
  size_t bytes_ = 0;
};

}  // namespace leasekeeper

#endif  // LEASEKEEPER_CORE_FENCED_STORE_H_
