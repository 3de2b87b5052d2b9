// FencedStore: a key-value store that refuses writes with a stale fencing
// token (contract rule 6).
//
// A write to lock L is accepted iff its token >= the highest token the store
// has accepted for L (0 if none): a holder may write many keys under one
// token, and a stalled former holder can never overwrite its successor. The
// store never looks at leases; L need not exist in the lock table.
//
// Thread-safety: none; one owner, like LockTable.
//
// Invariants:
//  1. A lock's high-water mark never falls.
//  2. A rejected write changes nothing.
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

  // The last accepted value for (lock, key), or nullopt. Empty names are the
  // caller's to reject (they can never have been written). O(1).
  std::optional<std::string> Read(absl::string_view lock,
                                  absl::string_view key) const;

  // The highest token accepted for `lock`, 0 if none.
  FencingToken HighWater(absl::string_view lock) const;

  // The store's whole state into snapshot.store; and back (replacing this
  // store's state). O(size of the store).
  void ExportTo(CoreSnapshot& snapshot) const;
  void ImportFrom(const CoreSnapshot& snapshot);

 private:
  struct Fenced {
    FencingToken high_water = 0;
    absl::flat_hash_map<std::string, std::string> values;
  };
  absl::node_hash_map<std::string, Fenced> locks_;
};

}  // namespace leasekeeper

#endif  // LEASEKEEPER_CORE_FENCED_STORE_H_
