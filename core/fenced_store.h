// FencedStore: a key-value store that refuses writes with a stale fencing
// token (contract rule 6).
//
// A write to lock L is accepted iff its token >= the highest token the store
// has accepted for L (0 if none). The store never looks at leases; the
// daemon's checks that need the lock table run in StateMachine first. Fence
// (a fenced read) raises the mark without writing; Delete (daemon-only) is a
// write that removes its key. Nothing is ever dropped otherwise: a lock's
// keys stay until deleted, and its mark forever. Why: docs/design/core-rules.md.
//
// Thread-safety: none; one owner (StateMachine), like LockTable.
//
// Invariants:
//  1. A lock's high-water mark never falls.
//  2. A rejected write changes nothing.
//  3. bytes() is the sum of the names of the locks the store knows and of
//     the keys and values it holds, and key_count() the number of keys,
//     both kept as running totals.
//  4. An accepted Delete raises the mark as an accepted Write does, so a
//     stalled holder's lower token cannot write the key back.
#ifndef LEASEKEEPER_CORE_FENCED_STORE_H_
#define LEASEKEEPER_CORE_FENCED_STORE_H_

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/status/statusor.h"
#include "absl/container/node_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/snapshot.h"
#include "core/types.h"

namespace leasekeeper {

// A page of a lock's key names (FencedStore::Keys).
struct KeyPage {
  std::vector<std::string> keys;  // ascending (plain byte order)
  bool more = false;              // keys after the last one exist
};

class FencedStore {
 public:
  FencedStore() = default;
  FencedStore(const FencedStore&) = delete;
  FencedStore& operator=(const FencedStore&) = delete;

  // Outcomes: OK (value stored, high-water mark = token); kInvalidArguments
  // for an empty lock, key or value or a token < 1; kStaleToken for a token
  // below the high-water mark. O(log keys of the lock).
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

  // Removes (lock, key) under Write's token rule (daemon-only; the
  // daemon's holder checks run in StateMachine first). Outcomes: true (the
  // key had a value; its key and value bytes and its key count are freed)
  // or false (it had none: nothing to free), the high-water mark = token in
  // both cases; kInvalidArguments for an empty lock or key or a token < 1;
  // kStaleToken for a token below the mark (nothing changed). The lock's
  // name and mark stay (invariant 1). O(log keys of the lock).
  absl::StatusOr<bool> Delete(absl::string_view lock, absl::string_view key,
                              FencingToken token);

  // The last accepted value for (lock, key), or nullopt. Empty names are the
  // caller's to reject (they can never have been written). O(log keys of
  // the lock).
  std::optional<std::string> Read(absl::string_view lock,
                                  absl::string_view key) const;

  // The highest token accepted for `lock`, 0 if none.
  FencingToken HighWater(absl::string_view lock) const;

  // At most max(limit, 1) key names of `lock` that come after `after` in
  // byte order (empty: from the first), ascending; a lock never written
  // answers an empty last page. O(log keys of the lock + limit).
  KeyPage Keys(absl::string_view lock, absl::string_view after,
               size_t limit) const;

  // For the server's limits and metrics. The payload bytes held (lock
  // names, keys and values; not the memory around them, see invariant 3)
  // and the number of keys held, O(1); what bytes() would be once
  // Write(lock, key, value) is accepted, O(log keys of the lock); the
  // number of keys under `lock`, O(1); and whether (lock, key) has a
  // value, O(log keys of the lock).
  size_t bytes() const { return bytes_; }
  size_t key_count() const { return key_count_; }
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
    // Ordered, for Keys' pages.
    absl::btree_map<std::string, std::string> values;
  };
  // The lock's entry, created (and its name counted in bytes_) if new.
  Fenced& Entry(absl::string_view lock);

  absl::node_hash_map<std::string, Fenced> locks_;
  size_t bytes_ = 0;
  size_t key_count_ = 0;
};

}  // namespace leasekeeper

#endif  // LEASEKEEPER_CORE_FENCED_STORE_H_
