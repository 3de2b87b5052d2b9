// HolderLabels: the holder_label of each lease and wait that carried one,
// by (client, lock), kept durable through the operation log. Every change is
// a ServerRecord (LabelSet / LabelCleared) appended right after the
// operation that caused it, and a snapshot carries the whole table, so a
// restart or a cluster failover keeps the labels that Inspect, Status and
// ListLocks show. Owned by CoreOwner. Thread-safety: none; CoreOwner's core
// mutex guards it and the DurableStateMachine it logs to.
//
// Invariants:
//  1. No label is empty.
//  2. The table and what its records replay to are the same, but for a
//     crash between an operation and the record after it.
#ifndef LEASEKEEPER_SERVER_HOLDER_LABELS_H_
#define LEASEKEEPER_SERVER_HOLDER_LABELS_H_

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "server/durable_state_machine.h"
#include "storage/server_records.h"

namespace leasekeeper::server {

class HolderLabels {
 public:
  using Key = std::pair<std::string, std::string>;  // (client, lock)
  using Map = absl::flat_hash_map<Key, std::string>;

  explicit HolderLabels(DurableStateMachine& log) : log_(log) {}
  HolderLabels(const HolderLabels&) = delete;
  HolderLabels& operator=(const HolderLabels&) = delete;

  // Gives `key` `label` (an empty one erases it). Logs LabelSet, or
  // LabelCleared, when that changes the table.
  void Set(const Key& key, const std::string& label);
  // Drops `key`'s label; logs LabelCleared if it had one. Returns how many
  // labels went (0 or 1).
  size_t erase(const Key& key);

  Map::const_iterator find(const Key& key) const { return labels_.find(key); }
  Map::const_iterator begin() const { return labels_.begin(); }
  Map::const_iterator end() const { return labels_.end(); }
  size_t size() const { return labels_.size(); }

  // Adds every label to `state` (a snapshot's server state). O(labels).
  void SaveTo(storage::ServerState& state) const;
  // Replaces the table by recovered labels, keeping those `live` accepts
  // (whose lease or wait still exists; invariant 2 allows a stale one).
  // Logs nothing: the log holds them already. Returns how many were
  // dropped. O(labels).
  size_t Restore(std::vector<storage::ServerState::Label> labels,
                 absl::FunctionRef<bool(const Key&)> live);

 private:
  void Log(storage::ServerRecord::Body body);

  DurableStateMachine& log_;
  Map labels_;
};

}  // namespace leasekeeper::server

#endif  // LEASEKEEPER_SERVER_HOLDER_LABELS_H_
